"""The figure of reference data given for some outputs only, each at its own points: a profile
per output, predicted (line) and reference (markers), against the coordinate along which its
points spread most (y for a vertical centreline, x for a horizontal one). Where the points lie
on one line the prediction is drawn densely along it, not only at them.

    figure = reference_figure(problem, model, validator)   # validator.complete is False
"""

from __future__ import annotations

import numpy as np
import torch
from matplotlib.figure import Figure

from pinn.derivatives.field import Model
from pinn.problem.problem import Problem
from pinn.run.plot_parts import numpy
from pinn.run.validation import Validator, predict


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
        rows = known[:, k] == known[:, k]  # not NaN: the output's own points
        spread = points[rows].max(axis=0) - points[rows].min(axis=0)
        along = int(spread.argmax())
        order = points[rows, along].argsort()
        coordinate = points[rows, along][order]
        truth, guess = known[rows, k][order], predicted[rows, k][order]
        name = problem.outputs[k]
        line = dense_line(points[rows][order])
        if line is None:  # points off one line: the prediction at them, joined
            axis.plot(coordinate, guess, label="predicted")
        else:  # between the points too, where a joined line would hide the error
            dense = torch.as_tensor(line, dtype=validator.points.dtype)
            values = numpy(predict(model, dense.to(validator.points.device)))[:, k]
            axis.plot(line[:, along], values, label="predicted")
        axis.plot(coordinate, truth, "o", markersize=4, fillstyle="none", label="reference")
        axis.set_xlabel(problem.inputs[along])
        axis.set_ylabel(name)
        axis.set_title(f"{name}: max |error| = {abs(guess - truth).max():.2e}")
        axis.legend(fontsize="small")
    figure.suptitle(f"{type(problem).__name__}: reference profiles")
    return figure


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
