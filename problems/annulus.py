"""Poisson's equation on a disk with a hole: Dirichlet outside, Neumann on the hole.

-Δu = f   on 1/2 < |x| < 1,   f = 4 e^x ((1 + x) cos y - y sin y)
u = 0 on the outer circle |x| = 1
du/dn = ∇u · n on the hole |x| = 1/2, n = -x/|x| (outward from the annulus, into the hole)
exact:  u = (1 - x² - y²) e^x cos y
"""

import torch

from pinn import Disk, Field, Neumann, Problem


def exact_gradient(x: torch.Tensor) -> torch.Tensor:
    """(N, 2) ∇u of the exact solution."""
    px, py = x[:, 0], x[:, 1]
    bump, wave = 1 - px**2 - py**2, torch.exp(px)
    du_dx = wave * ((bump - 2 * px) * torch.cos(py))
    du_dy = wave * (-2 * py * torch.cos(py) - bump * torch.sin(py))
    return torch.stack([du_dx, du_dy], dim=1)


def hole_flux(points: torch.Tensor) -> torch.Tensor:
    """(n,) du/dn on the hole, n pointing into it: -∇u · x / |x|."""
    return -(exact_gradient(points) * points).sum(dim=1) / points.norm(dim=1)


class Annulus(Problem):
    """-Δu = f on the annulus 1/2 < |x| < 1; u = 0 holds exactly on the outer circle through the
    distance function, u = φ N with φ = domain.distance(x, on="outer"); the Neumann condition on
    the hole is a loss term."""

    domain = Disk([0.0, 0.0], 1.0, name="outer") - Disk([0.0, 0.0], 0.5, name="hole")
    conditions = [Neumann(on="hole", value=hole_flux)]

    def residual(self, x: torch.Tensor, u: Field) -> torch.Tensor:
        px, py = x[:, 0], x[:, 1]
        source = 4 * torch.exp(px) * ((1 + px) * torch.cos(py) - py * torch.sin(py))
        return u.laplacian() + source

    def hard_constraint(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        distance = self.domain.distance(x, on="outer")
        return torch.zeros_like(distance), distance

    def exact(self, x: torch.Tensor) -> torch.Tensor:
        px, py = x[:, 0], x[:, 1]
        return (1 - px**2 - py**2) * torch.exp(px) * torch.cos(py)
