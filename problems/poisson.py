"""Poisson's equation on the unit square.

-Δu = sin(πx) sin(πy)   on [0, 1]²
u = 0 on the boundary
exact:  u = sin(πx) sin(πy) / (2π²)
"""

from math import pi

import torch

from pinn import Box, ConfigError, Dirichlet, Field, Problem


class Poisson(Problem):
    """-Δu = f on [0,1]², f = sin(πx) sin(πy); exact u = sin(πx) sin(πy) / (2π²).

    Args:
        hard_boundary: satisfy u = 0 on the boundary exactly, with u = 16 x(1-x) y(1-y) N(x, y)
            (the 16 makes the factor 1 at the centre), instead of with a "dirichlet" loss term.
    """

    domain = Box([0.0, 0.0], [1.0, 1.0])

    def __init__(self, hard_boundary: bool = True):
        if not isinstance(hard_boundary, bool):
            raise ConfigError(
                f"problem.params.hard_boundary must be true or false, got {hard_boundary!r}"
            )
        self.hard_boundary = hard_boundary
        self.conditions = [] if hard_boundary else [Dirichlet(on="boundary", value=0.0)]

    def residual(self, x: torch.Tensor, u: Field) -> torch.Tensor:
        source = torch.sin(pi * x[:, 0]) * torch.sin(pi * x[:, 1])
        return u.laplacian() + source

    def hard_constraint(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor] | None:
        if not self.hard_boundary:
            return None
        vanishing = 16 * x[:, 0] * (1 - x[:, 0]) * x[:, 1] * (1 - x[:, 1])
        return torch.zeros_like(vanishing), vanishing

    def exact(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sin(pi * x[:, 0]) * torch.sin(pi * x[:, 1]) / (2 * pi**2)
