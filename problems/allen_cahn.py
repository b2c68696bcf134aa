"""Allen-Cahn: stiff reaction-diffusion with periodic boundaries (Raissi et al. 2019; jaxpi).

u_t = D u_xx - 5 u³ + 5 u      on x in [-1, 1], t in [0, 1], D = 1e-4 (`diffusion`)
u(x, 0) = x² cos πx,           u periodic in x (period 2)

The solution settles into the stable states u = ±1 within t ~ 0.2, separated by thin fronts
(width ~ sqrt(D)) near x = ±0.5 and x = 0. Periodicity holds exactly through the network, by its
periodic embedding of x (`model.periodic={x: 2.0}`, in the yaml); the initial value is a loss
term (`initial`): x² cos πx has a kink as a periodic function (u_x jumps by 4 at x = ±1), which
the solution loses at once, so an exact u = u0 + t N would carry the kink for all times.
Reference: the project's Fourier pseudo-spectral ETDRK4 solver
(`pinn.problems.periodic_reference`, 4096 modes, max error ~1.5e-10) on a 512 x 201 (x, t) grid.
"""

from math import pi

import torch

from pinn import Box, Field, Initial, Problem, SpaceTime, require_positive
from pinn.problems.periodic_reference import allen_cahn_reference_grid


def initial_value(points: torch.Tensor) -> torch.Tensor:
    """(n,) u(x, 0) = x² cos πx at (n, 2) points (x, t)."""
    x = points[:, 0]
    return x**2 * torch.cos(pi * x)


class AllenCahn(Problem):
    """u_t = D u_xx - 5 u³ + 5 u on [-1, 1] x [0, 1], periodic in x."""

    domain = SpaceTime(Box([-1.0], [1.0]), 0.0, 1.0)
    conditions = [Initial(value=initial_value)]

    def __init__(self, diffusion: float = 1e-4):
        require_positive("problem.params.diffusion", diffusion)
        self.diffusion = float(diffusion)

    def residual(self, x: torch.Tensor, u: Field) -> torch.Tensor:
        value = u()
        return u.d("t") - self.diffusion * u.d2("x") + 5 * value**3 - 5 * value

    def reference(self) -> tuple[torch.Tensor, torch.Tensor]:
        points, values = allen_cahn_reference_grid(diffusion=self.diffusion)
        return torch.from_numpy(points), torch.from_numpy(values)
