"""The modified MLP of Wang, Teng & Perdikaris (2021): two encoders gate every hidden layer.

S. Wang, Y. Teng, P. Perdikaris, "Understanding and mitigating gradient flow pathologies in
physics-informed neural networks", SIAM J. Sci. Comput. 43 (2021).
"""

from __future__ import annotations

import torch
from torch import nn

from pinn.errors import require_int
from pinn.nn.mlp import initialise, make_activation


class ModifiedMLP(nn.Module):
    """U = σ(W_u x + b_u), V = σ(W_v x + b_v), H = σ(W_1 x + b_1);
    for each hidden layer Z = σ(W_l H + b_l), H = (1 - Z) ⊙ U + Z ⊙ V; output W H + b.

    Args:
        in_dim, out_dim: d inputs, m outputs.
        width: neurons per hidden layer (>= 1); depth: gated hidden layers (>= 1).
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
        self.gate_u = nn.Linear(in_dim, width)
        self.gate_v = nn.Linear(in_dim, width)
        self.first = nn.Linear(in_dim, width)
        self.hidden = nn.ModuleList(nn.Linear(width, width) for _ in range(depth))
        self.activation = make_activation(activation)
        self.head = nn.Linear(width, out_dim)
        initialise(self, generator)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        sigma = self.activation
        u, v = sigma(self.gate_u(x)), sigma(self.gate_v(x))
        h = sigma(self.first(x))
        for layer in self.hidden:
            z = sigma(layer(h))
            h = (1 - z) * u + z * v
        return self.head(h)
