"""Errors of a trained model against the problem's exact solution on an evaluation set."""

from __future__ import annotations

import math

import torch

from pinn.field import Model
from pinn.problem import Problem

# Up to 3 dimensions the evaluation set is a grid with about this many points; above, Sobol points.
EVAL_POINTS = 10_000


def evaluation_points(
    problem: Problem,
    n_points: int = EVAL_POINTS,
    dtype: torch.dtype = torch.float32,
    device: str | torch.device = "cpu",
) -> torch.Tensor:
    """(M, d) points covering the domain: a grid (faces included) for d <= 3, else Sobol."""
    domain = problem.domain
    if domain.dim <= 3:
        per_dim = max(2, round(n_points ** (1 / domain.dim)))
        return domain.grid(per_dim, dtype=dtype, device=device)
    generator = torch.Generator().manual_seed(0)
    return domain.sample_interior(n_points, generator, "sobol", dtype=dtype, device=device)


def predict(model: Model, x: torch.Tensor) -> torch.Tensor:
    """(M, m) model outputs at (M, d) points, without building a graph."""
    with torch.no_grad():
        values = model(x)
    return values.unsqueeze(1) if values.ndim == 1 else values


class Validator:
    """Holds the evaluation points and exact values once, and measures a model against them.

    Args:
        problem: a problem with an `exact` solution.
        points: (M, d) evaluation points, e.g. from `evaluation_points`.
    """

    def __init__(self, problem: Problem, points: torch.Tensor):
        if not problem.has_exact:
            raise ValueError(f"{type(problem).__name__} has no exact solution to validate against")
        self.points = points
        exact = problem.exact(points)
        self.exact = exact.unsqueeze(1) if exact.ndim == 1 else exact

    def errors(self, model: Model) -> dict[str, float]:
        """{"rel_l2": ||u - u*|| / ||u*||, "max_abs_error": max |u - u*|} over the points."""
        error = predict(model, self.points) - self.exact
        exact_norm = self.exact.norm().item()
        rel_l2 = error.norm().item() / exact_norm if exact_norm > 0 else math.inf
        return {"rel_l2": rel_l2, "max_abs_error": error.abs().max().item()}
