"""The figure of reference data given for some outputs only, each at its own points: a profile
per output, predicted (line) and reference (markers). Points on a few lines parallel to one
axis (a vertical centreline; u on the lines x = 0.3, 0.5 and 0.8) are drawn against that axis,
a curve per line, the prediction densely along it; other points against the coordinate along
which they spread most, the prediction at them, joined.

    figure = reference_figure(problem, model, validator)   # validator.complete is False
"""

from __future__ import annotations

import numpy as np
import torch
from matplotlib.figure import Figure

from pinn.derivatives.field import Model
from pinn.evaluation.validation import Validator, predict
from pinn.plots.parts import numpy
from pinn.problem.problem import Problem

MAX_LINES = 8  # more lines than this in one panel: the points are drawn as scattered
# The reference's markers: open circles, in the colour of their line's prediction.
REFERENCE_MARKERS = {"markersize": 4, "fillstyle": "none", "label": "reference"}


def reference_figure(problem: Problem, model: Model, validator: Validator) -> Figure:
    """One panel per output that has reference values: its profile, predicted and reference,
    titled with the largest difference."""
    known = numpy(validator.reference)
    given = [k for k in range(known.shape[1]) if (known[:, k] == known[:, k]).any()]
    figure = Figure(figsize=(4.6 * len(given), 4.0), layout="constrained")
    axes = figure.subplots(1, len(given), squeeze=False)[0]
    predicted = numpy(predict(model, validator.points))
    points = numpy(validator.points)
    for axis, k in zip(axes, given):
        rows = np.flatnonzero(known[:, k] == known[:, k])  # not NaN: the output's own points
        name = problem.outputs[k]
        spread = points[rows].max(axis=0) - points[rows].min(axis=0)
        along, groups = axis_lines(points[rows]) or (int(spread.argmax()), [np.arange(len(rows))])
        for group in groups:
            line = rows[group]
            where = f", {_where(problem, points[line], along)}" if len(groups) > 1 else ""
            label = f"predicted{where}"  # where each line lies, when there are several
            _draw_line(axis, model, validator.points, points[line], known[line, k], k, along, label)
        worst = np.abs(predicted[rows, k] - known[rows, k]).max()
        axis.set_xlabel(problem.inputs[along])
        axis.set_ylabel(name)
        axis.set_title(f"{name}: max |error| = {worst:.2e}")
        handles, labels = axis.get_legend_handles_labels()
        unique = dict(zip(labels, handles))  # "reference" once for all lines
        axis.legend(unique.values(), unique.keys(), fontsize="small")
    figure.suptitle(f"{type(problem).__name__}: reference profiles")
    return figure


def _draw_line(axis, model, like, points, truth, k: int, along: int, label: str) -> None:
    """One profile of output k at the (M, d) `points` with reference values `truth` (M,),
    against coordinate `along`: the prediction (labelled `label`) densely along their line
    where they lie on one (else at them, joined), in `like`'s dtype and device, and the
    reference at them."""
    order = points[:, along].argsort()
    points, truth = points[order], truth[order]
    dense = dense_line(points)
    if dense is None:  # off one line: only at the points
        dense = points
    values = numpy(predict(model, torch.as_tensor(dense, dtype=like.dtype).to(like.device)))[:, k]
    (curve,) = axis.plot(dense[:, along], values, label=label)
    axis.plot(points[:, along], truth, "o", color=curve.get_color(), **REFERENCE_MARKERS)


def _where(problem, points, along: int) -> str:
    """Where a line parallel to axis `along` lies: its other coordinates, e.g. "x = 0.3"."""
    fixed = [c for c in range(points.shape[1]) if c != along]
    return ", ".join(f"{problem.inputs[c]} = {points[0, c]:.3g}" for c in fixed)


def axis_lines(points: np.ndarray) -> tuple[int, list[np.ndarray]] | None:
    """(the axis, [row indices of each line]) where the (M, d) points lie on at most
    `MAX_LINES` lines parallel to one coordinate axis, at least 3 points on each (the axis
    with the fewest lines); None where they do not."""
    best = None
    size = np.abs(points).max() or 1.0
    for along in range(points.shape[1]):
        others = np.round(np.delete(points, along, axis=1) / size, 9)
        _, line_of = np.unique(others, axis=0, return_inverse=True)
        groups = [np.flatnonzero(line_of.ravel() == g) for g in range(line_of.max() + 1)]
        fits = len(groups) <= MAX_LINES and min(len(g) for g in groups) >= 3
        if fits and (best is None or len(groups) < len(best[1])):
            best = (along, groups)
    return best


def dense_line(points: np.ndarray, n: int = 400) -> np.ndarray | None:
    """(n, d) points evenly along the segment from the first to the last of the (M, d)
    `points` (sorted along it), where they all lie on that segment to 1e-9 of its length;
    None where they do not."""
    start, end = points[0], points[-1]
    length = np.linalg.norm(end - start)
    if length == 0:
        return None
    direction = (end - start) / length
    offsets = points - start
    off_line = offsets - np.outer(offsets @ direction, direction)
    if np.linalg.norm(off_line, axis=1).max() > 1e-9 * length:
        return None
    return start + np.linspace(0.0, 1.0, n)[:, None] * (end - start)
