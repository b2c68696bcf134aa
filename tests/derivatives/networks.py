"""Networks the Taylor pass was not written for: a residual MLP and the modified MLP.

Built from plain torch operations in their own forward methods, so the pass sees them only
through tracing.
"""

from __future__ import annotations

import torch
from torch import nn


class ResidualMLP(nn.Module):
    """x -> Linear -> [z + tanh(Linear z)] x depth -> Linear: skip connections around each block."""

    def __init__(self, in_dim: int, out_dim: int, width: int = 12, depth: int = 2):
        super().__init__()
        self.lift = nn.Linear(in_dim, width)
        self.blocks = nn.ModuleList(nn.Linear(width, width) for _ in range(depth))
        self.head = nn.Linear(width, out_dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        z = self.lift(x)
        for block in self.blocks:
            z = z + torch.tanh(block(z))
        return self.head(z)


class ModifiedMLP(nn.Module):
    """The modified MLP of Wang, Teng & Perdikaris (2021): two gates U, V mix every layer.

    U = σ(W_u x + b_u), V = σ(W_v x + b_v), H = σ(W_1 x + b_1)
    Z_l = σ(W_l H + b_l), H = (1 - Z_l) ⊙ U + Z_l ⊙ V, output W H + b
    """

    def __init__(self, in_dim: int, out_dim: int, width: int = 12, depth: int = 2):
        super().__init__()
        self.gate_u = nn.Linear(in_dim, width)
        self.gate_v = nn.Linear(in_dim, width)
        self.first = nn.Linear(in_dim, width)
        self.hidden = nn.ModuleList(nn.Linear(width, width) for _ in range(depth))
        self.head = nn.Linear(width, out_dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        u, v = torch.sigmoid(self.gate_u(x)), torch.sin(self.gate_v(x))
        h = torch.tanh(self.first(x))
        for layer in self.hidden:
            z = torch.nn.functional.silu(layer(h))
            h = (1 - z) * u + z * v
        return self.head(h)
