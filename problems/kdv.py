"""Korteweg-de Vries: dispersive waves with a third derivative (Zabusky & Kruskal 1965; jaxpi).

u_t + u u_x + μ² u_xxx = 0     on x in [-1, 1], t in [0, 1], μ = 0.022 (`mu`)
u(x, 0) = cos πx,              u periodic in x (period 2)

The cosine steepens and breaks into a train of solitons (max u ≈ 2.4 at t = 1). Periodicity
holds exactly through the network's periodic embedding of x (`model.periodic={x: 2.0}`, in the
yaml) and the initial value through the network too: u = cos πx + t N(x, t), both smooth and
periodic. Reference: the project's Fourier pseudo-spectral ETDRK4 solver with 2/3 dealiasing
(`pinn.problems.periodic_reference`, 512 modes, max error ~2e-8) on a 512 x 201 (x, t) grid.
"""

from math import pi

import torch

from pinn import Box, Field, Problem, SpaceTime, require_positive
from pinn.problems.periodic_reference import kdv_reference_grid


class KdV(Problem):
    """u_t + u u_x + μ² u_xxx = 0 on [-1, 1] x [0, 1], periodic in x; u = cos πx + t N."""

    domain = SpaceTime(Box([-1.0], [1.0]), 0.0, 1.0)

    def __init__(self, mu: float = 0.022):
        require_positive("problem.params.mu", mu)
        self.mu = float(mu)

    def residual(self, x: torch.Tensor, u: Field) -> torch.Tensor:
        return u.d("t") + u() * u.d("x") + self.mu**2 * u.d("x", order=3)

    def hard_constraint(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return torch.cos(pi * x[:, 0]), x[:, 1]

    def reference(self) -> tuple[torch.Tensor, torch.Tensor]:
        points, values = kdv_reference_grid(mu=self.mu)
        return torch.from_numpy(points), torch.from_numpy(values)
