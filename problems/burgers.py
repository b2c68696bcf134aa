"""Viscous Burgers' equation: a shock forms at x = 0 (Raissi, Perdikaris & Karniadakis 2019).

u_t + u u_x = (0.01/π) u_xx   on x in [-1, 1], t in [0, 1]
u(x, 0) = -sin πx,   u(-1, t) = u(1, t) = 0
reference: the Cole-Hopf solution by Gauss-Hermite quadrature (pinn.problems.burgers_reference,
accurate to ~1e-14) on the 256 x 100 grid of x in [-1, 1], t in [0, 0.99] of Raissi et al.
"""

from math import pi

import torch

from pinn import Box, Field, Problem, SpaceTime
from pinn.problems.burgers_reference import NU, reference_grid


class Burgers(Problem):
    """u_t + u u_x = ν u_xx on [-1, 1] x [0, 1], ν = 0.01/π; the conditions hold exactly through
    the network: u = -sin πx + t (1 - x²) N(x, t)."""

    domain = SpaceTime(Box([-1.0], [1.0]), 0.0, 1.0)

    def residual(self, x: torch.Tensor, u: Field) -> torch.Tensor:
        return u.d("t") + u() * u.d("x") - NU * u.d2("x")

    def hard_constraint(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        space, time = x[:, 0], x[:, 1]
        return -torch.sin(pi * space), time * (1 - space**2)

    def reference(self) -> tuple[torch.Tensor, torch.Tensor]:
        points, values = reference_grid()
        return torch.from_numpy(points), torch.from_numpy(values)
