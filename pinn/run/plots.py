"""Figures of a run: the solution beside the true one and its error, and the loss history.

`plot_solution` fits the figure to the domain:

    1-D                      u(x), predicted and true
    1 space dim + time       maps over (x, t), and u(x) at a few times against the true one
    2-D                      colour maps over the bounding box, blank outside the shape
    3-D and more             maps of the first two coordinates at three values of the last
                             (the others at the centre of the bounding box)

The true solution is the exact one where the problem has it, else its reference data (drawn
at the reference points).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from pathlib import Path

import numpy as np
import torch

# Figure without pyplot: no GUI backend is chosen or changed, so this works on headless machines
# and leaves a notebook's inline backend alone.
from matplotlib.figure import Figure
from matplotlib.tri import Triangulation

from pinn.derivatives.field import Model
from pinn.geometry import Domain, SpaceTime
from pinn.problem.columns import BOOKKEEPING, LOSS
from pinn.problem.problem import Problem
from pinn.run.validation import Validator, can_validate, predict
from pinn.training.weighting import WEIGHT_PREFIX

_NON_TERMS = set(BOOKKEEPING) - {LOSS}
_SNAPSHOTS = 4  # times at which a 1-D + time solution is drawn as curves
_SLICES = 3  # values of the last coordinate at which a 3-D (or more) solution is drawn


def plot_solution(
    problem: Problem,
    model: Model,
    path: str | Path,
    validator: Validator | None = None,
    n_per_dim: int = 101,
) -> None:
    """Write solution.png: predicted, true and |error| for each output (see the module doc).

    validator: where the true values come from when the problem has reference data only
    (made from the problem when None).
    """
    figure = solution_figure(problem, model, validator, n_per_dim)
    figure.savefig(path, dpi=110)


def solution_figure(
    problem: Problem, model: Model, validator: Validator | None = None, n_per_dim: int = 101
) -> Figure:
    """The figure `plot_solution` writes."""
    if validator is None and problem.has_reference and not problem.has_exact:
        validator = Validator(problem)
    truth = _Truth(problem, validator)
    domain = problem.domain
    like = _like(model)
    time = time_axis(domain)
    if domain.dim == 1:
        figure = _curves(problem, model, truth, n_per_dim, like)
    elif domain.dim == 2 and time is not None:
        figure = _space_time(problem, model, truth, n_per_dim, like, time)
    else:
        figure = _maps(problem, model, truth, n_per_dim, like)
    figure.tight_layout()
    return figure


def time_axis(domain: Domain) -> int | None:
    """The index of the time coordinate: a SpaceTime's, or a coordinate named "t"; else None."""
    if isinstance(domain, SpaceTime):
        return domain.dim - 1
    return domain.names.index("t") if "t" in domain.names else None


class _Truth:
    """The true solution: the exact function at any points, or reference data at its points."""

    def __init__(self, problem: Problem, validator: Validator | None):
        self.problem = problem
        self.exact = problem.has_exact
        self.reference = validator if (validator and not self.exact) else None
        self.known = can_validate(problem)

    def at(self, points: torch.Tensor) -> torch.Tensor:
        """(M, m) exact values at (M, d) points."""
        values = self.problem.exact(points)
        return values.unsqueeze(1) if values.ndim == 1 else values


def _like(model: Model) -> dict:
    parameter = next(model.parameters(), None) if hasattr(model, "parameters") else None
    reference = parameter if parameter is not None else torch.zeros((), dtype=torch.float64)
    return {"dtype": reference.dtype, "device": reference.device}


def _numpy(values: torch.Tensor) -> np.ndarray:
    return values.detach().cpu().double().numpy()


def _curves(problem, model, truth, n, like) -> Figure:
    domain = problem.domain
    x = torch.linspace(domain.lower[0], domain.upper[0], n, **like)[:, None]
    predicted = _numpy(predict(model, x))
    outputs = problem.outputs
    figure = Figure(figsize=(4.6 * len(outputs), 3.6))
    axes = figure.subplots(1, len(outputs), squeeze=False)[0]
    for k, (axis, name) in enumerate(zip(axes, outputs)):
        axis.plot(_numpy(x[:, 0]), predicted[:, k], label="predicted")
        if truth.exact:
            axis.plot(_numpy(x[:, 0]), _numpy(truth.at(x))[:, k], "--", label="exact")
        elif truth.reference is not None:
            ref = truth.reference
            order = torch.argsort(ref.points[:, 0])
            axis.plot(
                _numpy(ref.points[order, 0]),
                _numpy(ref.reference[order, k]),
                "--",
                label="reference",
            )
        axis.set_xlabel(domain.names[0])
        axis.set_title(name)
        axis.legend()
    return figure


def _plane(domain: Domain, n: int, like: dict, fixed: dict[int, float]) -> tuple:
    """A grid over the bounding box in two free coordinates, the others at `fixed` values.

    Returns the (n*n, d) points, the two free axes' indices and 1-D coordinates, and the (n*n,)
    bool mask of points in the closed domain.
    """
    free = [axis for axis in range(domain.dim) if axis not in fixed][:2]
    lines = [torch.linspace(domain.lower[a], domain.upper[a], n, dtype=torch.float64) for a in free]
    first, second = torch.meshgrid(*lines, indexing="ij")
    points = torch.zeros(n * n, domain.dim, dtype=torch.float64)
    points[:, free[0]], points[:, free[1]] = first.reshape(-1), second.reshape(-1)
    for axis, value in fixed.items():
        points[:, axis] = value
    return points.to(**like), free, lines, domain.contains(points, closed=True)


def _maps(problem, model, truth, n, like) -> Figure:
    """Colour maps over the first two coordinates: one row per output and slice."""
    domain = problem.domain
    middle = {a: (domain.lower[a] + domain.upper[a]) / 2 for a in range(2, domain.dim)}
    if domain.dim == 2:
        slices = [{}]
    else:
        last = domain.dim - 1
        values = np.linspace(domain.lower[last], domain.upper[last], _SLICES + 2)[1:-1]
        slices = [{**middle, last: float(v)} for v in values]
    panels = 3 if truth.known else 1
    rows = [(k, fixed) for k in range(len(problem.outputs)) for fixed in slices]
    figure = Figure(figsize=(4.6 * panels, 3.8 * len(rows)))
    axes = figure.subplots(len(rows), panels, squeeze=False)
    for row, (k, fixed) in zip(axes, rows):
        where = ", ".join(f"{domain.names[a]} = {v:.3g}" for a, v in fixed.items())
        label = problem.outputs[k] + (f" at {where}" if where else "")
        _map_row(figure, row[:3], problem, model, truth, k, label, _plane(domain, n, like, fixed))
    return figure


def _map_row(figure, axes, problem, model, truth, k, label, plane) -> None:
    """Predicted, true and |error| maps of output k on a plane (from `_plane`): the first
    axis only where there is no true solution."""
    domain = problem.domain
    points, free, lines, inside = plane
    predicted = _numpy(predict(model, points))[:, k]
    mask = _numpy(inside.double()) > 0
    _image(figure, axes[0], lines, predicted, mask, f"predicted {label}", domain, free)
    if truth.exact:
        exact = _numpy(truth.at(points))[:, k]
        _image(figure, axes[1], lines, exact, mask, f"exact {label}", domain, free)
        error = np.abs(predicted - exact)
        _image(figure, axes[2], lines, error, mask, f"|error| {label}", domain, free, "magma")
    elif truth.reference is not None:
        _scattered(figure, axes[1:3], model, truth.reference, k, label, domain, free)


def _image(figure, axis, lines, values, mask, title, domain, free, cmap="viridis") -> None:
    n = len(lines[0])
    shown = np.where(mask, values, np.nan).reshape(n, n).T  # blank outside the shape
    image = axis.pcolormesh(_numpy(lines[0]), _numpy(lines[1]), shown, shading="auto", cmap=cmap)
    figure.colorbar(image, ax=axis)
    _label(axis, title, domain, free)


def _scattered(figure, axes, model, reference: Validator, k, label, domain, free) -> None:
    """The reference values and the error at the reference points (2-D domains only)."""
    if domain.dim != 2:
        for axis in axes:
            axis.set_visible(False)
        return
    points = reference.points
    truth = _numpy(reference.reference[:, k])
    error = np.abs(_numpy(predict(model, points)[:, k]) - truth)
    mesh = _triangulation(domain, points)
    for axis, values, title, cmap in zip(
        axes, (truth, error), ("reference", "|error|"), ("viridis", "magma")
    ):
        image = axis.tripcolor(mesh, values, shading="gouraud", cmap=cmap)
        figure.colorbar(image, ax=axis)
        _label(axis, f"{title} {label}", domain, free)


def _triangulation(domain: Domain, points: torch.Tensor) -> Triangulation:
    """Delaunay triangles of scattered 2-D points, without those across holes or notches."""
    xy = points.detach().cpu().double()
    mesh = Triangulation(_numpy(xy[:, 0]), _numpy(xy[:, 1]))
    centroids = xy[torch.as_tensor(mesh.triangles)].mean(dim=1)
    mesh.set_mask(_numpy((domain.level(centroids) < 0).double()) > 0)
    return mesh


def _label(axis, title: str, domain: Domain, free: Sequence[int]) -> None:
    axis.set_title(title)
    axis.set_xlabel(domain.names[free[0]])
    axis.set_ylabel(domain.names[free[1]])
    axis.set_aspect("auto" if time_axis(domain) in free else "equal")


def _space_time(problem, model, truth, n, like, time: int) -> Figure:
    """Per output: maps over (x, t) (predicted, true, |error|) and u(x) at a few times."""
    domain = problem.domain
    space = 1 - time
    panels = 4 if truth.known else 2
    outputs = problem.outputs
    figure = Figure(figsize=(4.6 * panels, 3.8 * len(outputs)))
    axes = figure.subplots(len(outputs), panels, squeeze=False)
    for k, row in enumerate(axes):
        _map_row(figure, row[:3], problem, model, truth, k, outputs[k], _plane(domain, n, like, {}))
        _snapshots(row[-1], problem, model, truth, k, space, time, n, like)
    return figure


def _snapshots(axis, problem, model, truth, k, space, time, n, like) -> None:
    """u(x) at a few times: predicted (lines) against the true solution (dashed)."""
    domain = problem.domain
    times = np.linspace(domain.lower[time], domain.upper[time], _SNAPSHOTS)
    if truth.reference is not None:  # the reference's own times nearest to those
        available = np.unique(_numpy(truth.reference.points[:, time]))
        times = np.unique(available[np.abs(available[None] - times[:, None]).argmin(axis=1)])
    x = torch.linspace(domain.lower[space], domain.upper[space], n, dtype=torch.float64)
    colours = [f"C{i}" for i in range(len(times))]
    for moment, colour in zip(times, colours):
        points = torch.zeros(n, 2, dtype=torch.float64)
        points[:, space], points[:, time] = x, float(moment)
        points = points.to(**like)
        label = f"{domain.names[time]} = {moment:.3g}"
        axis.plot(_numpy(x), _numpy(predict(model, points))[:, k], color=colour, label=label)
        if truth.exact:
            axis.plot(_numpy(x), _numpy(truth.at(points))[:, k], "--", color="black", lw=0.8)
        elif truth.reference is not None:
            at = truth.reference.points[:, time] == float(moment)
            xs = truth.reference.points[at, space]
            order = torch.argsort(xs)
            values = truth.reference.reference[at, k][order]
            axis.plot(_numpy(xs[order]), _numpy(values), "--", color="black", lw=0.8)
    axis.set_xlabel(domain.names[space])
    axis.set_title(f"{problem.outputs[k]}: predicted, true dashed")
    axis.legend(fontsize="small")


def loss_columns(row: dict, skip: Collection[str] = ()) -> list[str]:
    """The columns of a history row that hold the loss or a loss term, in order.

    Left out: the bookkeeping (step, phase, lr, rel_l2, time_s), the loss weights
    (`weight_<term>`, `pinn.training.weighting`) and the names in `skip` (a problem's unknowns).
    """
    return [
        key
        for key in row
        if key not in _NON_TERMS and not key.startswith(WEIGHT_PREFIX) and key not in skip
    ]


def plot_loss(history: Sequence[dict], path: str | Path, skip: Collection[str] = ()) -> None:
    """Write the loss and each loss term against the step, log scale, one line per term.

    `skip`: columns that are neither (a problem's unknowns); see `loss_columns`.
    """
    figure = Figure(figsize=(6.4, 4.2))
    axis = figure.subplots()
    names = loss_columns(history[0], skip) if history else []
    steps = [row["step"] for row in history]
    for name in names:
        axis.semilogy(
            steps,
            [row[name] for row in history],
            label=name,
            linewidth=2.0 if name == "loss" else 1.2,
        )
    axis.set_xlabel("step")
    axis.set_ylabel("mean-square residual")
    axis.set_title("training loss")
    axis.legend()
    axis.grid(True, which="both", alpha=0.3)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
