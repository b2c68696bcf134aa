"""Figures of a run: the solution beside the true one and its error, and the loss history.

`plot_solution` fits the figure to the domain:

    1-D                      u(x), predicted and true
    1 space dim + time       maps over (x, t), and u(x) at a few times against the true one
    2-D                      colour maps over the bounding box, blank outside the shape
    3-D and more             maps of the first two coordinates at three values of the last:
                             its ends and middle, or in time T/3, 2T/3, T (the others at the
                             centre of the bounding box)

The true solution is the exact one where the problem has it, else its reference data (drawn
at the reference points). An output's predicted and true maps share one colour scale, its
|error| maps have their own (linear, or log with `error_scale="log"`); the figure's title names
the problem, rel_l2 and the steps where they are given. A run's choices (`outputs.plot_formats`,
`outputs.error_scale`) are a `PlotOptions`; `save_figure` writes a figure in each format
(`pinn.plots.files`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

# Figure without pyplot: no GUI backend is chosen or changed, so this works on headless machines
# and leaves a notebook's inline backend alone.
from matplotlib.figure import Figure

from pinn.derivatives.field import Model
from pinn.evaluation.validation import Validator, predict
from pinn.plots.files import DPI, PLOT_FORMATS, PlotOptions, save_figure
from pinn.plots.loss import loss_columns, loss_figure, plot_loss
from pinn.plots.maps import output_maps, plane, slices
from pinn.plots.parts import Truth, like, numpy, time_axis
from pinn.problem.problem import Problem

__all__ = [
    "PLOT_FORMATS",
    "PlotOptions",
    "loss_columns",
    "loss_figure",
    "plot_loss",
    "plot_solution",
    "save_figure",
    "solution_figure",
    "solution_title",
    "time_axis",
]

_SNAPSHOTS = 4  # times at which a 1-D + time solution is drawn as curves


def plot_solution(
    problem: Problem,
    model: Model,
    path: str | Path,
    validator: Validator | None = None,
    n_per_dim: int = 101,
    *,
    error_scale: str = "linear",
    name: str | None = None,
    rel_l2: float | None = None,
    steps: int | None = None,
) -> None:
    """Write solution.png (or the format of `path`'s suffix: .pdf, .svg): predicted, true and
    |error| for each output (see the module doc); the keywords as `solution_figure`'s."""
    figure = solution_figure(
        problem,
        model,
        validator,
        n_per_dim,
        error_scale=error_scale,
        name=name,
        rel_l2=rel_l2,
        steps=steps,
    )
    figure.savefig(path, dpi=DPI)


def solution_figure(
    problem: Problem,
    model: Model,
    validator: Validator | None = None,
    n_per_dim: int = 101,
    *,
    error_scale: str = "linear",
    name: str | None = None,
    rel_l2: float | None = None,
    steps: int | None = None,
) -> Figure:
    """The figure `plot_solution` writes.

    validator: where the true values come from when the problem has reference data only
    (made from the problem when None). error_scale: "linear" or "log" (zero errors at the
    bottom of the scale). name, rel_l2, steps: the title's (name: the problem's class name when
    None; the others left out when None).
    """
    PlotOptions(error_scale=error_scale)  # refuses an unknown scale
    if validator is None and problem.has_reference and not problem.has_exact:
        validator = Validator(problem)
    truth = Truth(problem, validator)
    domain, at = problem.domain, like(model)
    time = time_axis(domain)
    if domain.dim == 1:
        figure = _curves(problem, model, truth, n_per_dim, at)
    elif domain.dim == 2 and time is not None:
        figure = _space_time(problem, model, truth, n_per_dim, at, time, error_scale)
    else:
        figure = _maps(problem, model, truth, n_per_dim, at, error_scale)
    figure.suptitle(solution_title(problem, name, rel_l2, steps))
    return figure


def solution_title(
    problem: Problem, name: str | None = None, rel_l2: float | None = None, steps=None
) -> str:
    """ "Poisson: rel_l2 = 1.234e-04, 2000 steps" (the parts given; the class name by default)."""
    parts = [f"rel_l2 = {rel_l2:.3e}"] if rel_l2 is not None else []
    parts += [f"{steps} steps"] if steps is not None else []
    title = name or type(problem).__name__
    return f"{title}: {', '.join(parts)}" if parts else title


def _figure(columns: int, rows: int) -> Figure:
    return Figure(figsize=(4.6 * columns, 3.8 * rows + 0.4), layout="constrained")


def _curves(problem, model, truth, n, at) -> Figure:
    domain = problem.domain
    x = torch.linspace(domain.lower[0], domain.upper[0], n, **at)[:, None]
    predicted = numpy(predict(model, x))
    outputs = problem.outputs
    figure = _figure(len(outputs), 1)
    axes = figure.subplots(1, len(outputs), squeeze=False)[0]
    for k, (axis, name) in enumerate(zip(axes, outputs)):
        axis.plot(numpy(x[:, 0]), predicted[:, k], label="predicted")
        if truth.exact:
            axis.plot(numpy(x[:, 0]), numpy(truth.at(x))[:, k], "--", label="exact")
        elif truth.reference is not None:
            ref = truth.reference
            order = torch.argsort(ref.points[:, 0])
            xs, values = numpy(ref.points[order, 0]), numpy(ref.reference[order, k])
            axis.plot(xs, values, "--", label="reference")
        axis.set_xlabel(domain.names[0])
        axis.set_ylabel(name)
        axis.set_title(name)
        axis.legend()
    return figure


def _maps(problem, model, truth, n, at, error_scale) -> Figure:
    """Colour maps over the first two coordinates: one row per output and slice."""
    planes = slices(problem.domain, n, at)
    panels = 3 if truth.known else 1
    figure = _figure(panels, len(problem.outputs) * len(planes))
    axes = figure.subplots(len(problem.outputs) * len(planes), panels, squeeze=False)
    for k in range(len(problem.outputs)):
        rows = axes[k * len(planes) : (k + 1) * len(planes)]
        output_maps(figure, rows, problem, model, truth, k, planes, error_scale)
    return figure


def _space_time(problem, model, truth, n, at, time: int, error_scale) -> Figure:
    """Per output: maps over (x, t) (predicted, true, |error|) and u(x) at a few times."""
    panels = 4 if truth.known else 2
    outputs = problem.outputs
    figure = _figure(panels, len(outputs))
    axes = figure.subplots(len(outputs), panels, squeeze=False)
    whole = [plane(problem.domain, n, at, {})]
    for k, row in enumerate(axes):
        output_maps(figure, [row[:-1]], problem, model, truth, k, whole, error_scale)
        _snapshots(row[-1], problem, model, truth, k, 1 - time, time, n, at)
    return figure


def _snapshots(axis, problem, model, truth, k, space, time, n, at) -> None:
    """u(x) at a few times: predicted (solid) and true (dashed), one colour per time."""
    domain = problem.domain
    times = np.linspace(domain.lower[time], domain.upper[time], _SNAPSHOTS)
    if truth.reference is not None:  # the reference's own times nearest to those
        available = np.unique(numpy(truth.reference.points[:, time]))
        times = np.unique(available[np.abs(available[None] - times[:, None]).argmin(axis=1)])
    x = torch.linspace(domain.lower[space], domain.upper[space], n, dtype=torch.float64)
    for i, moment in enumerate(times):
        colour = f"C{i}"
        points = torch.zeros(n, 2, dtype=torch.float64)
        points[:, space], points[:, time] = x, float(moment)
        points = points.to(**at)
        label = f"{domain.names[time]} = {moment:.3g}"
        axis.plot(numpy(x), numpy(predict(model, points))[:, k], color=colour, label=label)
        dashed = {"linestyle": "--", "color": colour, "linewidth": 1.0, "label": f"_true {label}"}
        if truth.exact:
            axis.plot(numpy(x), numpy(truth.at(points))[:, k], **dashed)
        elif truth.reference is not None:
            at_time = truth.reference.points[:, time] == float(moment)
            xs = truth.reference.points[at_time, space]
            order = torch.argsort(xs)
            values = truth.reference.reference[at_time, k][order]
            axis.plot(numpy(xs[order]), numpy(values), **dashed)
    axis.set_xlabel(domain.names[space])
    axis.set_ylabel(problem.outputs[k])
    true = ", true dashed" if truth.known else ""
    axis.set_title(f"{problem.outputs[k]}: predicted{true}")
    axis.legend(fontsize="small")
