"""The multilayer perceptron, the activations every network picks from by name, and the input
scaling rule (`model.input_scaling`)."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from pinn.errors import ConfigError, require_int
from pinn.nn.embeddings import input_layers
from pinn.nn.factorized import dense, initialise
from pinn.nn.options import InputOptions

ACTIVATIONS: dict[str, type[nn.Module]] = {
    "tanh": nn.Tanh,
    "sigmoid": nn.Sigmoid,
    "softplus": nn.Softplus,
    "silu": nn.SiLU,
    "gelu": nn.GELU,
}


class Sin(nn.Module):
    """Elementwise sine, the SIREN-style activation."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sin(x)


ACTIVATIONS["sin"] = Sin


def make_activation(name: str) -> nn.Module:
    """A new activation layer by name (tanh, sin, sigmoid, softplus, silu, gelu)."""
    if name not in ACTIVATIONS:
        raise ConfigError(
            f"model.activation={name!r} is unknown; choose one of {', '.join(ACTIVATIONS)}"
        )
    return ACTIVATIONS[name]()


class MLP(nn.Sequential):
    """in_dim -> [input layers] -> [Linear(width) -> activation] x depth -> Linear(out_dim).

    Args:
        in_dim: d, the number of input coordinates.
        out_dim: m, the number of outputs.
        width: neurons per hidden layer (>= 1).
        depth: number of hidden layers (>= 1).
        activation: name of the activation (see `ACTIVATIONS`).
        inputs: `InputOptions`: rescaling of a box to [-1, 1]^d, the periodic embedding,
            Fourier features, weight factorisation; None: none of them.
        generator: seeds the Xavier-normal initialisation (biases start at zero) and the
            Fourier frequencies.

    Shapes: (N, in_dim) -> (N, out_dim).
    """

    def __init__(
        self,
        in_dim: int,
        out_dim: int,
        width: int = 32,
        depth: int = 3,
        activation: str = "tanh",
        inputs: InputOptions | None = None,
        generator: torch.Generator | None = None,
    ):
        require_int("model.width", width, minimum=1)
        require_int("model.depth", depth, minimum=1)
        inputs = inputs or InputOptions()
        factorize = inputs.factorize
        layers, in_dim = input_layers(in_dim, inputs, generator)
        sizes = [in_dim] + [width] * depth
        for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
            layers += [dense(fan_in, fan_out, factorize), make_activation(activation)]
        layers.append(dense(width, out_dim, factorize))
        super().__init__(*layers)
        initialise(self, generator)


INPUT_SCALINGS = ("auto", "box", "none")
# Activations that see the scale of their input as a frequency: sin(w x) with x doubled is
# sin(2 w x). Rescaling their inputs changes which frequencies the network starts with.
_PERIODIC = ("sin",)


def input_box(
    scaling: str, activation: str, lower: Sequence[float], upper: Sequence[float]
) -> dict[str, Sequence[float] | None]:
    """`MLP`'s `lower` and `upper` arguments for `model.input_scaling`.

    "box": rescale the domain's bounding box [lower, upper] affinely to [-1, 1]^d, where tanh-like
    activations are most expressive at the initial weights. "none": the coordinates as they are.
    "auto": "box", except for sin, whose initial frequencies the rescaling would change (a
    domain of width 1 stretched to width 2 doubles them); there the coordinates stay as they are.
    """
    if scaling not in INPUT_SCALINGS:
        raise ConfigError(
            f"model.input_scaling={scaling!r} is unknown; choose one of {', '.join(INPUT_SCALINGS)}"
        )
    if scaling == "none" or (scaling == "auto" and activation in _PERIODIC):
        return {"lower": None, "upper": None}
    return {"lower": lower, "upper": upper}
