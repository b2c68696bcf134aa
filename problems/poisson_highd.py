"""Poisson's equation on the unit ball in many dimensions, with coupled coordinates.

-Δu = f   on |x| < 1 in d dimensions,   u = 0 on the sphere (held exactly: u = (1 - |x|²) N)
exact:  u = (1 - |x|²) Σ_{i<d-1} c_i sin(x_i + cos x_{i+1} + x_{i+1} cos x_i),   c_i ~ N(0, 1)

The high-dimensional test of Hu et al. (2023) and Shi et al. (2024, STDE): each term couples
two neighbouring coordinates, so u is no sum of one-dimensional functions, and its Laplacian
(the forcing f) has every term of the product rule. Meant for `laplacian.method=stochastic`:
the exact Laplacian costs d second-order directions per point, the estimate `samples`.

Points fall as in STDE's code (sail-sg/stde, `PoissonTwobody`): the radius uniform in [0, 1] and
the direction uniform, for training and validation alike (`radial="radius"`). Uniform in volume
instead, nearly every point would lie within a few 1/d of the sphere. The relative error
depends on the draw of the c_i: the solution is mostly (1 - |x|²) sin(1) Σ c_i, whose size
varies from draw to draw. STDE's published errors are for one draw their code makes unseeded;
the README ("High dimensions") compares STDE's code and pinn on pinn's draws.
"""

import torch

from pinn import Ball, ConfigError, Field, Problem


class PoissonHighD(Problem):
    """-Δu = f on the unit ball in `dim` dimensions, u = 0 on the sphere, exact solution above.

    Args:
        dim: the number of coordinates d (>= 2).
        coefficient_seed: seeds the c_i (fixed apart from the run's seed, so every run of one
            `dim` solves the same problem).
        radial: how far from the centre points fall, for training and validation alike:
            "radius" (uniform in [0, 1], the distribution of Hu et al. and STDE, whose errors
            are measured on it) or "volume" (uniform in volume: nearly all points within a
            few 1/d of the sphere).
    """

    def __init__(self, dim: int = 100, coefficient_seed: int = 0, radial: str = "radius"):
        if not isinstance(dim, int) or isinstance(dim, bool) or dim < 2:
            raise ConfigError(f"problem.params.dim must be a whole number >= 2, got {dim!r}")
        self.domain = Ball([0.0] * dim, 1.0, radial=radial)
        generator = torch.Generator().manual_seed(coefficient_seed)
        self.coefficients = torch.randn(dim - 1, generator=generator, dtype=torch.float64)
        self.conditions = []

    def residual(self, x: torch.Tensor, u: Field) -> torch.Tensor:
        return u.laplacian() - self.exact_laplacian(x)

    def hard_constraint(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        vanishing = 1 - (x**2).sum(dim=1)
        return torch.zeros_like(vanishing), vanishing

    def exact(self, x: torch.Tensor) -> torch.Tensor:
        bump = 1 - (x**2).sum(dim=1)
        return bump * self._terms(x)[0].sum(dim=1)

    def exact_laplacian(self, x: torch.Tensor) -> torch.Tensor:
        """(N,) Δu of the exact solution, by the product rule:
        Δ(B g) = g ΔB + 2 ∇B·∇g + B Δg with B = 1 - |x|², ΔB = -2d, ∇B = -2x."""
        value, slope, curvature = self._terms(x)
        bump = 1 - (x**2).sum(dim=1)
        dim = x.shape[1]
        return -2 * dim * value.sum(dim=1) - 4 * slope.sum(dim=1) + bump * curvature.sum(dim=1)

    def _terms(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(N, d-1) each: c_i sin θ_i, its gradient dotted with x, and its Laplacian, where
        θ_i = x_i + cos x_{i+1} + x_{i+1} cos x_i depends on x_i and x_{i+1} alone."""
        c = self.coefficients.to(dtype=x.dtype, device=x.device)
        left, right = x[:, :-1], x[:, 1:]
        theta = left + torch.cos(right) + right * torch.cos(left)
        d_left = 1 - right * torch.sin(left)  # ∂θ/∂x_i
        d_right = torch.cos(left) - torch.sin(right)  # ∂θ/∂x_{i+1}
        dd_left, dd_right = -right * torch.cos(left), -torch.cos(right)  # second derivatives
        sin, cos = torch.sin(theta), torch.cos(theta)
        value = c * sin
        slope = c * cos * (d_left * left + d_right * right)
        curvature = c * (cos * (dd_left + dd_right) - sin * (d_left**2 + d_right**2))
        return value, slope, curvature
