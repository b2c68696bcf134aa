"""The modified MLP of Wang, Teng & Perdikaris (2021): two encoders gate every hidden layer.

S. Wang, Y. Teng, P. Perdikaris, "Understanding and mitigating gradient flow pathologies in
physics-informed neural networks", SIAM J. Sci. Comput. 43 (2021).
"""

from __future__ import annotations

import torch
from torch import nn

from pinn.errors import require_int
from pinn.nn.embeddings import input_layers
from pinn.nn.factorized import dense, initialise
from pinn.nn.mlp import make_activation
from pinn.nn.options import InputOptions


class ModifiedMLP(nn.Module):
    """With e = the input layers' embedding of x (`pinn.nn.embeddings.input_layers`):
    U = σ(W_u e + b_u), V = σ(W_v e + b_v), H = σ(W_1 e + b_1);
    for each hidden layer Z = σ(W_l H + b_l), H = (1 - Z) ⊙ U + Z ⊙ V; output W H + b.

    Args:
        in_dim: d, the number of input coordinates.
        out_dim: m, the number of outputs.
        width: neurons per hidden layer (>= 1).
        depth: gated hidden layers (>= 1).
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
        self.first = dense(embedded, width, factorize)
        self.hidden = nn.ModuleList(dense(width, width, factorize) for _ in range(depth))
        self.activation = make_activation(activation)
        self.head = dense(width, out_dim, factorize)
        initialise(self, generator)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        sigma = self.activation
        e = self.inputs(x)
        u, v = sigma(self.gate_u(e)), sigma(self.gate_v(e))
        h = sigma(self.first(e))
        for layer in self.hidden:
            z = sigma(layer(h))
            h = (1 - z) * u + z * v
        return self.head(h)
