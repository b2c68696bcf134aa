"""Loss assembly: the named, weighted mean-square terms of a problem at a batch of points."""

from __future__ import annotations

import logging
from collections.abc import Mapping

import torch

from pinn.derivatives.engines import Engine
from pinn.derivatives.field import Field, Model
from pinn.errors import ConfigError, IndexOutOfRangeError, naming_where, validating
from pinn.geometry import Batch
from pinn.problem.causal import CausalWeighting
from pinn.problem.fields import problem_field
from pinn.problem.point_weights import FixedPointWeights, PointWeights
from pinn.problem.problem import Problem
from pinn.problem.unknowns import Unknowns

log = logging.getLogger(__name__)


def loss_terms(
    problem: Problem,
    model: Model,
    batch: Batch,
    engine: Engine | None = None,
    causal: CausalWeighting | None = None,
    point_weights: PointWeights | FixedPointWeights | None = None,
) -> dict[str, torch.Tensor]:
    """Mean-square residual of the PDE ("pde", or "pde_<key>" for systems) and each condition.

    `engine` makes the fields (see `pinn.derivatives.engines`); keep one per training run so it
    can plan its Taylor passes. Without one, plain autograd fields are used. Each condition gets the
    field at every boundary point and `field_at`, which makes fields elsewhere (a periodic
    condition's opposite face) through the same engine, one planning site each. `causal`
    (`pinn.problem.causal`) weights the PDE terms by chunks of time: each is then
    (1/M') sum_i w_i L_i instead of the plain mean square. `point_weights`
    (`pinn.problem.point_weights`) weights them point by point: mean_p (λ_p r_p)^2, both
    together mean_p λ_p^2 s_p^2 r_p^2.
    """
    vectors = residuals(problem, model, batch, engine, causal, point_weights)
    return {name: _mean_square(value) for name, value in vectors.items()}


def residuals(
    problem: Problem,
    model: Model,
    batch: Batch,
    engine: Engine | None = None,
    causal: CausalWeighting | None = None,
    point_weights: PointWeights | FixedPointWeights | None = None,
) -> dict[str, torch.Tensor]:
    """The residual vectors whose mean squares are `loss_terms`: {term: (n_term,) residual}.

    What a least-squares method (Gauss-Newton) takes as rows; arguments as for `loss_terms`.
    With `causal`, the PDE terms' (N,) vectors are scaled point by point so that their mean
    squares are the causal losses (`pinn.problem.causal`); with `point_weights`, multiplied by
    each point's weight λ_p (made, or updated, from the unscaled residual); the conditions'
    are as they are.
    """
    engine = engine or Engine("autograd", model, announce=False)

    def field_at(points: torch.Tensor, site: str) -> Field:
        return problem_field(engine, problem, points, site)

    interior = field_at(batch.interior, "interior")
    if validating():
        residual = _checked_residual(problem, interior, len(batch.interior))
    else:  # the eager first step has checked it; a compiled step only computes
        residual = problem.residual(interior.x, interior)
    if isinstance(residual, Mapping):
        terms = {f"pde_{key}": value for key, value in residual.items()}
    else:
        terms = {"pde": residual}
    # Here, so that every phase (and Gauss-Newton's rows) sees them; the point weights follow
    # the residual itself, the causal factors too, and the vectors carry their product.
    scales = point_weights.scales(terms, batch.interior) if point_weights is not None else {}
    if causal is not None:
        domain = problem.domain
        terms = causal(terms, batch.interior, problem.inputs, domain.lower, domain.upper)
    if scales:
        terms = {
            name: value * scales[name] if name in scales else value for name, value in terms.items()
        }
    if problem.conditions:
        # One field at every boundary point, shared by the conditions (each masks its own).
        # None where no point was drawn: then no condition reads them (`boundary_counts`), and
        # a network evaluated at no point would only burden the derivative rows.
        drawn = batch.boundary.points.shape[0] > 0
        boundary = field_at(batch.boundary.points, "boundary") if drawn else None
        for condition in problem.conditions:
            if condition.name in terms:
                raise ConfigError(
                    f"two loss terms are named {condition.name!r}; give each condition its own "
                    "name, e.g. Dirichlet(on='x_min', name='left')"
                )
            if validating():
                residual = naming_where(
                    f"condition {condition.name!r}",
                    lambda c=condition: c.residual(boundary, batch.boundary, field_at),
                )
                _check_condition_residual(condition.name, residual)
            else:
                residual = condition.residual(boundary, batch.boundary, field_at)
            terms[condition.name] = residual
    if validating() and problem.attached_unknowns is not None:
        _warn_of_unused_unknowns(problem.attached_unknowns, terms)
    return terms


def _warn_of_unused_unknowns(unknowns: Unknowns, terms: Mapping[str, torch.Tensor]) -> None:
    """Once per set of unknowns: log those no term depends on (a residual that never reads
    self.unknown(name)), which would stay at their guesses. One extra backward pass, the
    graph kept for the step's own."""
    if unknowns.use_checked or not unknowns.names:
        return
    varying = [term.sum() for term in terms.values() if term.requires_grad]
    if not varying:  # no graph (under no_grad): nothing to tell
        return
    unknowns.use_checked = True
    scalars = list(unknowns.scalars)
    grads = torch.autograd.grad(sum(varying), scalars, allow_unused=True, retain_graph=True)
    for name, grad in zip(unknowns.names, grads, strict=True):
        if grad is None:
            log.warning(
                "unknown %r: no loss term depends on it (the residual and the conditions never "
                "read self.unknown(%r)), so it stays at its guess",
                name,
                name,
            )


def weighted_sum(terms: Mapping[str, torch.Tensor], weights: Mapping[str, float]) -> torch.Tensor:
    """The scalar loss sum_k weights[k] * terms[k]; a term without a weight counts once."""
    unknown = set(weights) - set(terms)
    if unknown:
        raise ConfigError(
            f"problem.weights names unknown loss term(s) {sorted(unknown)}; "
            f"the terms are {list(terms)}"
        )
    return sum(weights.get(name, 1.0) * value for name, value in terms.items())


def _checked_residual(
    problem: Problem, u: Field, n_points: int
) -> torch.Tensor | Mapping[str, torch.Tensor]:
    """`problem.residual` at the (N, d) interior points, refused in one line unless it is an
    (N,) tensor or a dict of them; an IndexError (x[:, 2] on a 2-D domain) named as such."""
    name, dim = f"{type(problem).__name__}.residual", u.x.shape[1]
    try:
        residual = naming_where(name, lambda: problem.residual(u.x, u))
    except IndexOutOfRangeError:
        raise
    except IndexError as error:
        raise ConfigError(
            f"{name} indexes past the domain's coordinates ({error}): x is (N, {dim}) with "
            f"columns {list(problem.inputs)}, so x[:, 0] .. x[:, {dim - 1}] exist; use those "
            "(or u.d('<name>')) or give the domain the missing coordinate"
        ) from None
    parts = residual.items() if isinstance(residual, Mapping) else [(None, residual)]
    for key, value in parts:
        term = "pde" if key is None else f"pde_{key}"
        if not isinstance(value, torch.Tensor):
            raise ConfigError(
                f"{name} returned {type(value).__name__} for the term {term!r}; it must return "
                f"an ({n_points},) tensor (one value per point) or a dict of them, one per equation"
            )
        if tuple(value.shape) != (n_points,):
            raise ConfigError(
                f"{name}: the term {term!r} has shape {tuple(value.shape)}, expected "
                f"({n_points},), one value per point; index columns as x[:, 0] and u('u') (not "
                "x[:, :1]) and do not reduce over the points (no .mean() or .sum())"
            )
    return residual


def _check_condition_residual(name: str, residual: object) -> None:
    """Refuse a condition's residual unless it is an (n,) tensor, one value per point."""
    if not isinstance(residual, torch.Tensor):
        raise ConfigError(
            f"condition {name!r}: its residual returned {type(residual).__name__}; it must "
            "return an (n,) tensor, one value per boundary point it holds at"
        )
    if residual.ndim != 1:
        raise ConfigError(
            f"condition {name!r}: its residual has shape {tuple(residual.shape)}, expected (n,), "
            "one value per boundary point it holds at; do not broadcast (n, 1) against (n,) or "
            "reduce over the points"
        )


def _mean_square(residual: torch.Tensor) -> torch.Tensor:
    return residual.square().mean()
