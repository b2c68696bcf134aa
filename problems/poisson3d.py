"""Poisson's equation on a solid: a cube with a ball cut out of it (constructive geometry).

-Δu = f   on [-1, 1]³ minus the ball |x - c| <= 1/2, c = (1/4, 1/4, 1/4)
u = 0 on the whole boundary (the cube's six faces and the sphere)
exact:  u = (1 - x²)(1 - y²)(1 - z²) (|x - c|² - 1/4) cos(π (x + 2y + 3z) / 4),  f = -Δu

The exact solution is a product of factors that each vanish on part of the boundary (a face
pair, the sphere) and a wave that does not, so it is zero on the boundary and nowhere symmetric.
u = 0 holds exactly through the domain's distance function φ (R-functions, `Domain.distance`):
u = φ N, as `annulus` does in 2-D. φ is not the factors above (it blends the seven pieces'
distances), so the network has a smooth, non-trivial N = u / φ to learn; the ball sits off the
cube's centre, so the PDE sees no symmetry either.
"""

from dataclasses import dataclass
from math import pi

import torch

from pinn import Ball, Box, Field, Problem

Tensor = torch.Tensor
CENTRE, RADIUS = (0.25, 0.25, 0.25), 0.5
WAVE = (pi / 4, 2 * pi / 4, 3 * pi / 4)  # the wave's wave vector k: cos(k · x)


@dataclass
class Smooth:
    """A function's value (N,), gradient (N, 3) and Laplacian (N,) at N points."""

    value: Tensor
    gradient: Tensor
    laplacian: Tensor

    def __mul__(self, other: "Smooth") -> "Smooth":
        """The product rule: Δ(fg) = f Δg + g Δf + 2 ∇f · ∇g."""
        cross = (self.gradient * other.gradient).sum(dim=1)
        return Smooth(
            self.value * other.value,
            self.value[:, None] * other.gradient + other.value[:, None] * self.gradient,
            self.value * other.laplacian + other.value * self.laplacian + 2 * cross,
        )


def exact_factors(x: Tensor) -> list[Smooth]:
    """The exact solution's factors at the (N, 3) points: 1 - x_i² for each axis (zero on its
    two faces), |x - c|² - r² (zero on the sphere), cos(k · x)."""
    factors = []
    for axis in range(3):
        gradient = torch.zeros_like(x)
        gradient[:, axis] = -2 * x[:, axis]
        factors.append(Smooth(1 - x[:, axis] ** 2, gradient, torch.full_like(x[:, 0], -2.0)))
    offset = x - torch.tensor(CENTRE, dtype=x.dtype, device=x.device)
    sphere = offset.square().sum(dim=1) - RADIUS**2
    factors.append(Smooth(sphere, 2 * offset, torch.full_like(sphere, 6.0)))
    k = torch.tensor(WAVE, dtype=x.dtype, device=x.device)
    phase = x @ k
    wave = torch.cos(phase)
    factors.append(Smooth(wave, -torch.sin(phase)[:, None] * k, -k.square().sum() * wave))
    return factors


def exact_solution(x: Tensor) -> Smooth:
    """The exact u at the (N, 3) points, with its gradient and Laplacian."""
    product = exact_factors(x)
    total = product[0]
    for factor in product[1:]:
        total = total * factor
    return total


class Poisson3D(Problem):
    """-Δu = f on the cube [-1, 1]³ minus a ball of radius 1/2 at (1/4, 1/4, 1/4); u = 0 on
    the boundary held exactly, u = φ N with φ = domain.distance(x). The boundary parts are the
    cube's faces (x_min, ..., z_max) and the sphere ("hole")."""

    domain = Box([-1.0] * 3, [1.0] * 3) - Ball(list(CENTRE), RADIUS, name="hole")

    def residual(self, x: Tensor, u: Field) -> Tensor:
        source = -exact_solution(x).laplacian
        return u.laplacian() + source

    def hard_constraint(self, x: Tensor) -> tuple[Tensor, Tensor]:
        distance = self.domain.distance(x)
        return torch.zeros_like(distance), distance

    def exact(self, x: Tensor) -> Tensor:
        return exact_solution(x).value
