"""Convection at speed 30: the failure case of Krishnapriyan et al. 2021 ("Characterizing
possible failure modes in physics-informed neural networks", NeurIPS).

u_t + β u_x = 0      on x in [0, 2π], t in [0, 1], β = 30 (`beta`)
u(x, 0) = sin x,     u periodic in x (period 2π)
exact:  u = sin(x - β t)

The sine travels almost five periods across the interval. One network trained over all times
finds the trivial flow instead (rel_l2 ~1: Krishnapriyan et al.'s regular PINN, and pinn's own
with causal weights); time-marching (`windows.count`, in the yaml) solves it window by window.
Periodicity holds exactly through the network's periodic embedding of x, the initial value
through the network too: u = sin x + t N(x, t).
"""

import torch

from pinn import Box, Field, Problem, SpaceTime, require_positive


class Convection(Problem):
    """u_t + β u_x = 0 on [0, 2π] x [0, 1], periodic in x; u = sin x + t N."""

    domain = SpaceTime(Box([0.0], [2 * torch.pi]), 0.0, 1.0)

    def __init__(self, beta: float = 30.0):
        require_positive("problem.params.beta", beta)
        self.beta = float(beta)

    def residual(self, x: torch.Tensor, u: Field) -> torch.Tensor:
        return u.d("t") + self.beta * u.d("x")

    def hard_constraint(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return torch.sin(x[:, 0]), x[:, 1]

    def exact(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sin(x[:, 0] - self.beta * x[:, 1])
