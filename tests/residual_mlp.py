"""A residual MLP (a skip connection around every hidden layer): a network the tests carry
through the Taylor pass and the stochastic Laplacian, not one pinn ships."""

from __future__ import annotations

import torch
from torch import nn

from pinn.errors import require_int
from pinn.nn.factorized import initialise
from pinn.nn.mlp import make_activation


class ResidualMLP(nn.Module):
    """x -> Linear(width) -> [z + σ(Linear z)] x depth -> Linear(out_dim).

    Args:
        in_dim, out_dim: d inputs, m outputs.
        width: neurons per hidden layer (>= 1); depth: residual blocks (>= 1).
        activation: σ, by name (`pinn.nn.mlp.ACTIVATIONS`).
        generator: seeds the Xavier-normal initialisation (biases start at zero).

    Shapes: (N, in_dim) -> (N, out_dim).
    """

    def __init__(
        self,
        in_dim: int,
        out_dim: int,
        width: int = 32,
        depth: int = 3,
        activation: str = "tanh",
        generator: torch.Generator | None = None,
    ):
        super().__init__()
        require_int("model.width", width, minimum=1)
        require_int("model.depth", depth, minimum=1)
        self.lift = nn.Linear(in_dim, width)
        self.blocks = nn.ModuleList(nn.Linear(width, width) for _ in range(depth))
        self.activation = make_activation(activation)
        self.head = nn.Linear(width, out_dim)
        initialise(self, generator)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        z = self.lift(x)
        for block in self.blocks:
            z = z + self.activation(block(z))
        return self.head(z)
