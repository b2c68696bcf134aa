"""Errors of a trained model against the problem's exact solution or its reference data.

validator = Validator(problem)              # the exact solution on a grid, or reference data
validator.errors(model)                     # {"rel_l2": ..., "max_abs_error": ...}
"""

from __future__ import annotations

import math

import torch

from pinn.derivatives.field import Model
from pinn.errors import ConfigError
from pinn.geometry.domain import Domain
from pinn.problem.problem import Problem

# Up to 3 dimensions the evaluation set is a grid with about this many points inside the domain;
# above, Sobol points.
EVAL_POINTS = 10_000


def evaluation_points(
    problem: Problem,
    n_points: int = EVAL_POINTS,
    dtype: torch.dtype = torch.float32,
    device: str | torch.device = "cpu",
) -> torch.Tensor:
    """(M, d) points covering the domain: for d <= 3 the points of a grid over its bounding box
    that lie in the closed domain (all of them, faces included, for a box), about `n_points`;
    for d > 3, `n_points` Sobol points inside (a fixed seed)."""
    domain = problem.domain
    if domain.dim <= 3:
        return grid_points(domain, n_points, dtype=dtype, device=device)
    generator = torch.Generator().manual_seed(0)
    return domain.sample_interior(n_points, generator, "sobol", dtype=dtype, device=device)


def grid_points(
    domain: Domain,
    n_points: int,
    dtype: torch.dtype = torch.float32,
    device: str | torch.device = "cpu",
) -> torch.Tensor:
    """(M, d) points of a grid over the domain's bounding box that lie in the closed domain,
    about `n_points` of them (the grid's size set by the share of the box the domain fills)."""
    fill = domain.volume / domain.bounding_volume
    per_dim = max(2, round((n_points / fill) ** (1 / domain.dim)))
    return domain.grid(per_dim, dtype=dtype, device=device)


def predict(model: Model, x: torch.Tensor) -> torch.Tensor:
    """(M, m) model outputs at (M, d) points, without building a graph."""
    with torch.no_grad():
        values = model(x)
    return as_columns(values)


def as_columns(values: torch.Tensor) -> torch.Tensor:
    """(M,) or (M, m) values as (M, m)."""
    return values.unsqueeze(1) if values.ndim == 1 else values


def exact_values(problem: Problem, points: torch.Tensor) -> torch.Tensor:
    """(M, m) `problem.exact` at (M, d) points, refused in one line unless it returned an (M,)
    tensor (one output) or an (M, m) one for the m outputs.

    It is first asked at m + 1 points (a count no output count equals), so that a result of
    the wrong shape, such as the (M, M) table of a broadcasting slip, is refused before it is
    computed at every point."""
    probe = len(problem.outputs) + 1
    if len(points) > probe:
        _checked_exact(problem, problem.exact(points[:probe]), probe)
    return as_columns(_checked_exact(problem, problem.exact(points), len(points)))


def _checked_exact(problem: Problem, values, count: int) -> torch.Tensor:
    """`values`, what `problem.exact` returned at `count` points, if of a shape it may have."""
    name, m = f"{type(problem).__name__}.exact", len(problem.outputs)
    if not isinstance(values, torch.Tensor):
        raise ConfigError(
            f"{name} returned {type(values).__name__}; it must return a tensor of the exact "
            f"solution at the points, ({count},) or ({count}, {m})"
        )
    expected = [(count, m)] + ([(count,)] if m == 1 else [])
    if tuple(values.shape) not in expected:
        shapes = " or ".join(str(shape) for shape in reversed(expected))
        raise ConfigError(
            f"{name} returned shape {tuple(values.shape)} at {count} points, expected {shapes}: "
            f"one row per point and a column per output {list(problem.outputs)}; index columns "
            "as x[:, 0], not x[:, :1]"
        )
    return values


def can_validate(problem: Problem) -> bool:
    """Whether the problem has an exact solution or reference data to measure a model against."""
    return problem.has_exact or problem.has_reference


class Validator:
    """The points and true values a model is measured against, held once.

    Args:
        problem: a problem with an `exact` solution or `reference` data.
        points: (M, d) points at which to compare with the exact solution. None (the default):
            the problem's reference data where it gives some, else the exact solution at
            `evaluation_points(problem)`.
        dtype: of the evaluation set when `points` is None.
        device: likewise.

    Attributes:
        points: (M, d) evaluation points.
        reference: (M, m) true values there, NaN where reference data gives an output no
            value at a point (`Problem.reference` for some outputs).
        source: "exact" or "reference".
        output_names: the m output names.
    """

    def __init__(
        self,
        problem: Problem,
        points: torch.Tensor | None = None,
        dtype: torch.dtype = torch.float64,
        device: str | torch.device = "cpu",
    ):
        name = type(problem).__name__
        if not can_validate(problem):
            raise ConfigError(f"{name} has no exact solution or reference data to validate against")
        self.output_names = tuple(problem.outputs)
        self.shifted = _shifted_outputs(problem)
        if points is None and problem.has_reference:
            points, values = problem.reference_data()
            self.points = points.to(dtype=dtype, device=device)
            self.reference = values.to(dtype=dtype, device=device)
            self.source = "reference"
            return
        if not problem.has_exact:
            raise ConfigError(
                f"{name} has no exact solution to evaluate at given points; leave points=None "
                "to validate against its reference data"
            )
        if points is None:
            points = evaluation_points(problem, dtype=dtype, device=device)
        self.points = points
        self.reference = exact_values(problem, points)
        self.source = "exact"

    @property
    def complete(self) -> bool:
        """Whether every output has a true value at every point (no NaN in `reference`)."""
        return bool(torch.isfinite(self.reference).all())

    def constants(self, model: Model) -> dict[str, float]:
        """{name: c} for each output of `problem.up_to_constant`: the constant added to the
        model's values before they are compared, the mean of true minus predicted values."""
        return {self.output_names[k]: c for k, c in self._offsets(model).items()}

    def aligned(self, model: Model) -> Model:
        """`model` with `constants(model)` added to its outputs (the model itself when the
        problem has no output up to a constant): what the errors measure, for plots and
        prediction.npz."""
        return ShiftedModel(model, self._shift(model)) if self.shifted else model

    def _offsets(self, model: Model, predicted: torch.Tensor | None = None) -> dict[int, float]:
        """{output index: the mean of true minus predicted values} for the shifted outputs."""
        predicted = predict(model, self.points) if predicted is None else predicted
        offsets = {}
        for k in self.shifted:
            known = torch.isfinite(self.reference[:, k])
            offsets[k] = (self.reference[known, k] - predicted[known, k]).mean().item()
        return offsets

    def _shift(self, model: Model, predicted: torch.Tensor | None = None) -> torch.Tensor:
        """(m,) the constants to add to the m outputs: 0 but for the shifted ones."""
        shift = torch.zeros(len(self.output_names), dtype=torch.float64)
        for k, value in self._offsets(model, predicted).items():
            shift[k] = value
        return shift

    def errors(self, model: Model) -> dict[str, float]:
        """{"rel_l2": ||u - u*|| / ||u*||, "max_abs_error": max |u - u*|} over the points and
        all outputs, counting only the true values there are; with several outputs also
        "rel_l2_<name>" and "max_abs_error_<name>" for each output that has true values.
        Outputs up to a constant are first shifted by `constants(model)`."""
        predicted = predict(model, self.points)
        if self.shifted:
            predicted = predicted + self._shift(model, predicted).to(predicted)
        known = torch.isfinite(self.reference)
        errors = _errors(predicted[known], self.reference[known])
        if len(self.output_names) > 1:
            for k, name in enumerate(self.output_names):
                if known[:, k].any():
                    truth = self.reference[known[:, k], k]
                    output = _errors(predicted[known[:, k], k], truth)
                    errors |= {f"{key}_{name}": value for key, value in output.items()}
        return errors


class ShiftedModel(torch.nn.Module):
    """A model whose (N, m) outputs have the (m,) constants `shift` added (`Validator.aligned`)."""

    def __init__(self, model: Model, shift: torch.Tensor):
        super().__init__()
        self.model, self.shift = model, shift

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        values = as_columns(self.model(x))
        return values + self.shift.to(dtype=values.dtype, device=values.device)


def _shifted_outputs(problem: Problem) -> list[int]:
    """The indices of `problem.up_to_constant`'s outputs, refused unless each is an output."""
    names, outputs = problem.up_to_constant, list(problem.outputs)
    if isinstance(names, str) or not all(isinstance(n, str) for n in names):
        raise ConfigError(
            f"{type(problem).__name__}.up_to_constant must be a tuple of output names, e.g. "
            f"('p',), got {names!r}"
        )
    unknown = [n for n in names if n not in outputs]
    if unknown:
        raise ConfigError(
            f"{type(problem).__name__}.up_to_constant names {unknown}, which are no outputs; "
            f"the outputs are {outputs}"
        )
    return [outputs.index(n) for n in names]


def _errors(predicted: torch.Tensor, truth: torch.Tensor) -> dict[str, float]:
    """rel_l2 and max_abs_error of (n,) predicted values against (n,) true ones."""
    error = predicted - truth
    return {"rel_l2": _relative(error, truth), "max_abs_error": error.abs().max().item()}


def _relative(error: torch.Tensor, truth: torch.Tensor) -> float:
    norm = truth.norm().item()
    return error.norm().item() / norm if norm > 0 else math.inf
