"""An inverse problem: learn the diffusivity kappa of -kappa Δu = f from samples of u.

-kappa Δu = 2π² kappa_true sin(πx) sin(πy)   on [0, 1]², kappa_true = 0.5, kappa unknown
u = 0 on the boundary; u observed (noise-free) at 200 random interior points
exact:  u = sin(πx) sin(πy) (at kappa = kappa_true)
"""

from math import pi

import torch

from pinn import Box, Dirichlet, Field, Observations, Problem, require_int


class InversePoisson(Problem):
    """-kappa Δu = f on [0,1]², u = 0 on the boundary, kappa unknown (initial guess 1.0).

    f = 2π² kappa_true sin(πx) sin(πy) with kappa_true = 0.5, so with kappa = kappa_true the
    solution is u = sin(πx) sin(πy) (any other kappa scales it by kappa_true / kappa); the
    observations of u (noise-free samples of that solution at `n_observations` uniform random
    interior points, drawn with `observation_seed`) tell which kappa it is.

    Args:
        n_observations: how many interior points u is observed at (>= 1).
        observation_seed: seeds where they are.
    """

    domain = Box([0.0, 0.0], [1.0, 1.0])
    unknowns = {"kappa": 1.0}
    kappa_true = 0.5

    def __init__(self, n_observations: int = 200, observation_seed: int = 0):
        require_int("problem.params.n_observations", n_observations, minimum=1)
        require_int("problem.params.observation_seed", observation_seed, minimum=0)
        generator = torch.Generator().manual_seed(observation_seed)
        points = self.domain.sample_interior(
            n_observations, generator, "uniform", dtype=torch.float64
        )
        self.conditions = [
            Dirichlet(on="boundary", value=0.0),
            Observations(points, self.exact(points), name="data"),
        ]

    def residual(self, x: torch.Tensor, u: Field) -> torch.Tensor:
        source = 2 * pi**2 * self.kappa_true * torch.sin(pi * x[:, 0]) * torch.sin(pi * x[:, 1])
        return -self.unknown("kappa") * u.laplacian() - source

    def exact(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sin(pi * x[:, 0]) * torch.sin(pi * x[:, 1])
