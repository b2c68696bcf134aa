"""Loss assembly: the named, weighted mean-square terms of a problem at a batch of points."""

from __future__ import annotations

from collections.abc import Mapping

import torch

from pinn.derivatives.engines import Engine
from pinn.derivatives.field import Field, Model
from pinn.errors import ConfigError
from pinn.geometry import Batch
from pinn.problem.problem import Problem


def loss_terms(
    problem: Problem, model: Model, batch: Batch, engine: Engine | None = None
) -> dict[str, torch.Tensor]:
    """Mean-square residual of the PDE ("pde", or "pde_<key>" for systems) and each condition.

    `engine` makes the fields (see `pinn.derivatives.engines`); keep one per training run so it
    can plan its Taylor passes. Without one, plain autograd fields are used. Each condition gets the
    field at every boundary point and `field_at`, which makes fields elsewhere (a periodic
    condition's opposite face) through the same engine, one planning site each.
    """
    engine = engine or Engine("autograd", model, announce=False)

    def field_at(points: torch.Tensor, site: str) -> Field:
        return engine.field(points, problem.inputs, problem.outputs, site)

    interior = field_at(batch.interior, "interior")
    residual = problem.residual(interior.x, interior)
    if isinstance(residual, Mapping):
        terms = {f"pde_{key}": _mean_square(value) for key, value in residual.items()}
    else:
        terms = {"pde": _mean_square(residual)}
    if problem.conditions:
        # One field at every boundary point, shared by the conditions (each masks its own).
        boundary = field_at(batch.boundary.points, "boundary")
        for condition in problem.conditions:
            if condition.name in terms:
                raise ConfigError(
                    f"two loss terms are named {condition.name!r}; give each condition its own "
                    "name, e.g. Dirichlet(on='x_min', name='left')"
                )
            residual = condition.residual(boundary, batch.boundary, field_at)
            terms[condition.name] = _mean_square(residual)
    return terms


def weighted_sum(terms: Mapping[str, torch.Tensor], weights: Mapping[str, float]) -> torch.Tensor:
    """The scalar loss sum_k weights[k] * terms[k]; a term without a weight counts once."""
    unknown = set(weights) - set(terms)
    if unknown:
        raise ConfigError(
            f"problem.weights names unknown loss term(s) {sorted(unknown)}; "
            f"the terms are {list(terms)}"
        )
    return sum(weights.get(name, 1.0) * value for name, value in terms.items())


def _mean_square(residual: torch.Tensor) -> torch.Tensor:
    return residual.square().mean()
