"""The Helmholtz equation on the unit square (DeepXDE's Helmholtz_Dirichlet_2d example).

-Δu - k0² u = k0² sin(k0 x) sin(k0 y)   on [0, 1]², k0 = 4π (two periods each way)
u = 0 on the boundary
exact:  u = sin(k0 x) sin(k0 y)
"""

from math import pi

import torch

from pinn import Box, Field, Problem, require_positive


class Helmholtz(Problem):
    """-Δu - k0² u = f on [0, 1]²; u = 0 on the boundary exactly: u = x(1-x) y(1-y) N(x, y).

    Args:
        periods: k0 = 2π periods; the solution has `periods` full waves along each side.
    """

    domain = Box([0.0, 0.0], [1.0, 1.0])

    def __init__(self, periods: float = 2):
        require_positive("problem.params.periods", periods)
        self.k0 = 2 * pi * periods

    def residual(self, x: torch.Tensor, u: Field) -> torch.Tensor:
        source = self.k0**2 * torch.sin(self.k0 * x[:, 0]) * torch.sin(self.k0 * x[:, 1])
        return -u.laplacian() - self.k0**2 * u() - source

    def hard_constraint(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        vanishing = x[:, 0] * (1 - x[:, 0]) * x[:, 1] * (1 - x[:, 1])
        return torch.zeros_like(vanishing), vanishing

    def exact(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sin(self.k0 * x[:, 0]) * torch.sin(self.k0 * x[:, 1])
