"""Laplace's equation on the L-shaped region: the solution is singular at the re-entrant corner.

Δu = 0   on (-1, 1)² minus [0, 1) x (-1, 0]
u = r^(2/3) sin(2θ/3) on the boundary, θ in [0, 3π/2] measured from the positive x axis
exact:  u = r^(2/3) sin(2θ/3), whose gradient is infinite at the corner (0, 0)
"""

from math import pi

import torch

from pinn import Dirichlet, Field, Polygon, Problem

CORNERS = [[0.0, 0.0], [1.0, 0.0], [1.0, 1.0], [-1.0, 1.0], [-1.0, -1.0], [0.0, -1.0]]


def corner_solution(x: torch.Tensor) -> torch.Tensor:
    """(N,) r^(2/3) sin(2θ/3), θ = the angle from the positive x axis, in [-π/4, 7π/4).

    The branch cut runs along θ = -π/4, through the cut-out quadrant, so that θ is continuous
    on the closed L-shape: a point a rounding error below the edge y = 0, x > 0 gets θ ≈ 0,
    not ≈ 2π.
    """
    angle = torch.remainder(torch.atan2(x[:, 1], x[:, 0]) + pi / 4, 2 * pi) - pi / 4
    radius = torch.hypot(x[:, 0], x[:, 1])
    return radius ** (2 / 3) * torch.sin(2 * angle / 3)


class LShape(Problem):
    """Δu = 0 on the L-shape, u = r^(2/3) sin(2θ/3) on the boundary (a "dirichlet" term).

    The edges are named: "inner" (the two meeting at the corner, where u = 0) and "outer".
    """

    domain = Polygon(CORNERS, edge_names=["inner", "outer", "outer", "outer", "outer", "inner"])
    conditions = [Dirichlet(value=corner_solution)]

    def residual(self, x: torch.Tensor, u: Field) -> torch.Tensor:
        return u.laplacian()

    def exact(self, x: torch.Tensor) -> torch.Tensor:
        return corner_solution(x)
