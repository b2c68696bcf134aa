"""Poisson's equation on the unit square: -Δu = sin(πx) sin(πy), u = 0 on the boundary."""

from math import pi

import torch

from pinn import Box, Dirichlet, Field, Problem


class Poisson(Problem):
    """-Δu = f on [0,1]², f = sin(πx) sin(πy); exact u = sin(πx) sin(πy) / (2π²)."""

    domain = Box([0.0, 0.0], [1.0, 1.0])
    conditions = [Dirichlet(on="boundary", value=0.0)]

    def residual(self, x: torch.Tensor, u: Field) -> torch.Tensor:
        source = torch.sin(pi * x[:, 0]) * torch.sin(pi * x[:, 1])
        return u.laplacian() + source

    def exact(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sin(pi * x[:, 0]) * torch.sin(pi * x[:, 1]) / (2 * pi**2)
