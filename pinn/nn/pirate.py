"""A PirateNet-style residual network (Wang, Sankaran, Wang & Perdikaris 2024): gated residual
blocks whose skip weights start at zero, so the network starts shallow and grows deep as it
trains.

S. Wang, B. Li, Y. Chen, P. Perdikaris, "PirateNets: physics-informed deep learning with
residual adaptive networks", J. Mach. Learn. Res. 25 (2024).
"""

from __future__ import annotations

import torch
from torch import nn

from pinn.errors import require_int
from pinn.nn.embeddings import input_layers
from pinn.nn.factorized import dense, initialise
from pinn.nn.mlp import make_activation
from pinn.nn.options import InputOptions


class PirateBlock(nn.Module):
    """f = σ(W_1 h + b_1), z_1 = f ⊙ U + (1 - f) ⊙ V, g = σ(W_2 z_1 + b_2),
    z_2 = g ⊙ U + (1 - g) ⊙ V, r = σ(W_3 z_2 + b_3); out = α r + (1 - α) h, α trained from 0."""

    def __init__(self, width: int, activation: str, factorize: tuple[float, float] | None):
        super().__init__()
        self.layers = nn.ModuleList(dense(width, width, factorize) for _ in range(3))
        self.activation = make_activation(activation)
        self.alpha = nn.Parameter(torch.zeros(()))

    def forward(self, h: torch.Tensor, u: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        sigma = self.activation
        f = sigma(self.layers[0](h))
        z = f * u + (1 - f) * v
        g = sigma(self.layers[1](z))
        z = g * u + (1 - g) * v
        r = sigma(self.layers[2](z))
        return self.alpha * r + (1 - self.alpha) * h


class PirateNet(nn.Module):
    """With e = the input layers' embedding of x (`pinn.nn.embeddings.input_layers`):
    U = σ(W_u e + b_u), V = σ(W_v e + b_v), h_0 = e (or a trained linear map of it to `width`
    where the widths differ), h_l = block_l(h_(l-1), U, V), output W h_depth + b.

    Every α starts at 0, so the initial network is the output layer on h_0: a linear function
    of the embedding (as the paper's; with Fourier features of 2 n = width there is no map).

    Args:
        in_dim: d, the number of input coordinates.
        out_dim: m, the number of outputs.
        width: neurons per hidden layer (>= 1).
        depth: residual blocks (>= 1, three dense layers each).
        activation: σ, by name (`pinn.nn.mlp.ACTIVATIONS`).
        inputs: `InputOptions`, as for `MLP`.
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
        super().__init__()
        require_int("model.width", width, minimum=1)
        require_int("model.depth", depth, minimum=1)
        inputs = inputs or InputOptions()
        factorize = inputs.factorize
        layers, embedded = input_layers(in_dim, inputs, generator)
        self.inputs = nn.Sequential(*layers)
        self.gate_u = dense(embedded, width, factorize)
        self.gate_v = dense(embedded, width, factorize)
        self.lift = None if embedded == width else dense(embedded, width, factorize)
        self.blocks = nn.ModuleList(PirateBlock(width, activation, factorize) for _ in range(depth))
        self.activation = make_activation(activation)
        self.head = dense(width, out_dim, factorize)
        initialise(self, generator)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        sigma = self.activation
        e = self.inputs(x)
        u, v = sigma(self.gate_u(e)), sigma(self.gate_v(e))
        h = e if self.lift is None else self.lift(e)
        for block in self.blocks:
            h = block(h, u, v)
        return self.head(h)
