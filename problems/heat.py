"""The heat equation with a source, in one space dimension (DeepXDE's diffusion_1d example).

u_t = u_xx - e^-t (sin πx - π² sin πx)   on x in [-1, 1], t in [0, 1]
u(x, 0) = sin πx,   u(-1, t) = u(1, t) = 0
exact:  u = e^-t sin πx
"""

from math import pi

import torch

from pinn import Box, Field, Problem, SpaceTime


class Heat(Problem):
    """u_t = u_xx + f on [-1, 1] x [0, 1]; the conditions hold exactly through the network:
    u = sin πx + t (1 - x²) N(x, t) equals sin πx at t = 0 and 0 at x = ±1."""

    domain = SpaceTime(Box([-1.0], [1.0]), 0.0, 1.0)

    def residual(self, x: torch.Tensor, u: Field) -> torch.Tensor:
        space, time = x[:, 0], x[:, 1]
        source = torch.exp(-time) * (pi**2 - 1) * torch.sin(pi * space)
        return u.d("t") - u.d2("x") - source

    def hard_constraint(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        space, time = x[:, 0], x[:, 1]
        return torch.sin(pi * space), time * (1 - space**2)

    def exact(self, x: torch.Tensor) -> torch.Tensor:
        return torch.exp(-x[:, 1]) * torch.sin(pi * x[:, 0])
