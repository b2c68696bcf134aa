"""Kovasznay flow: steady incompressible Navier-Stokes at Re = 20, behind a grid (Kovasznay 1948).

u u_x + v u_y + p_x - (u_xx + u_yy) / Re = 0
u v_x + v v_y + p_y - (v_xx + v_yy) / Re = 0
u_x + v_y = 0                                    on [-0.5, 1] x [-0.5, 1.5]
u, v as the exact solution on the boundary, p as the exact solution on x = 1
exact, λ = Re/2 - sqrt(Re²/4 + 4π²):
    u = 1 - e^(λx) cos 2πy,  v = λ/(2π) e^(λx) sin 2πy,  p = (1 - e^(2λx)) / 2
"""

from math import pi, sqrt

import torch

from pinn import Box, Dirichlet, Field, Problem
from pinn.problems.navier_stokes import steady_residuals


class Kovasznay(Problem):
    """Steady Navier-Stokes for (u, v, p) on [-0.5, 1] x [-0.5, 1.5], Re = 20."""

    domain = Box([-0.5, -0.5], [1.0, 1.5])
    outputs = ("u", "v", "p")
    reynolds = 20.0
    decay = reynolds / 2 - sqrt(reynolds**2 / 4 + 4 * pi**2)

    def __init__(self):
        def exact_output(k: int):
            return lambda points: self.exact(points)[:, k]

        self.conditions = [
            Dirichlet(value=exact_output(0), out="u", name="u_boundary"),
            Dirichlet(value=exact_output(1), out="v", name="v_boundary"),
            Dirichlet(on="x_max", value=exact_output(2), out="p", name="p_outlet"),
        ]

    def residual(self, x: torch.Tensor, u: Field) -> dict[str, torch.Tensor]:
        return steady_residuals(u, viscosity=1 / self.reynolds)

    def exact(self, x: torch.Tensor) -> torch.Tensor:
        decay = torch.exp(self.decay * x[:, 0])
        angle = 2 * pi * x[:, 1]
        u = 1 - decay * torch.cos(angle)
        v = self.decay / (2 * pi) * decay * torch.sin(angle)
        p = (1 - decay**2) / 2
        return torch.stack([u, v, p], dim=1)
