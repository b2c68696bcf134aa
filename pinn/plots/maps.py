"""Colour maps of a solution over planes of its domain: predicted, true and |error| per output.

Each output's predicted and true maps share one colour scale over all its planes; its |error|
maps share another (linear or log). Outside the domain the maps are blank; reference data is
drawn at its own points (2-D domains).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import torch
from matplotlib.figure import Figure
from matplotlib.tri import Triangulation

from pinn.evaluation.validation import predict
from pinn.geometry import Domain
from pinn.plots.parts import (
    ERROR_LABEL,
    Truth,
    clip_errors,
    error_norm,
    numpy,
    time_axis,
    value_norm,
)

_SLICES = 3  # values of the last coordinate at which a 3-D (or more) solution is drawn
_FEW_INSIDE = 0.01  # a plane at an end with less of its grid inside moves inward


class Plane(NamedTuple):
    """A grid over the bounding box in two free coordinates, the others fixed."""

    points: torch.Tensor  # (n*n, d)
    lines: list[torch.Tensor]  # the two free coordinates' (n,) grid lines
    inside: np.ndarray  # (n*n,) bool: in the closed domain
    label: str  # where it lies, e.g. "z = 0.5" ("" for a 2-D domain)
    names: tuple[str, str]  # the free coordinates' names (the axes' labels)
    aspect: str  # "equal" in space, "auto" where one of them is time


class _Values(NamedTuple):
    """One output on one plane: `predicted` on the grid (NaN outside), `true` and `error` on the
    grid (exact) or at the reference points (`mesh`), None without a true solution there."""

    predicted: np.ndarray
    true: np.ndarray | None
    error: np.ndarray | None
    mesh: Triangulation | None


def plane(domain: Domain, n: int, like: dict, fixed: dict[int, float]) -> Plane:
    """The n x n grid of the two coordinates not in `fixed` ({index: value})."""
    free = [axis for axis in range(domain.dim) if axis not in fixed][:2]
    lines = [torch.linspace(domain.lower[a], domain.upper[a], n, dtype=torch.float64) for a in free]
    first, second = torch.meshgrid(*lines, indexing="ij")
    points = torch.zeros(n * n, domain.dim, dtype=torch.float64)
    points[:, free[0]], points[:, free[1]] = first.reshape(-1), second.reshape(-1)
    for axis, value in fixed.items():
        points[:, axis] = value
    inside = numpy(domain.contains(points, closed=True).double()) > 0
    label = ", ".join(f"{domain.names[a]} = {v:.3g}" for a, v in fixed.items())
    names = (domain.names[free[0]], domain.names[free[1]])
    aspect = "auto" if time_axis(domain) in free else "equal"
    return Plane(points.to(**like), lines, inside, label, names, aspect)


def slices(domain: Domain, n: int, like: dict) -> list[Plane]:
    """The plane of a 2-D domain; else the first two coordinates at `_SLICES` values of the
    last (the others at the centre of the bounding box): for time, evenly up to the final time,
    where a time-dependent error has grown most (t = T/3, 2T/3, T from 0); for any other
    coordinate (a third one in space, a coefficient given as an input), both ends of its range
    and its middle, since the error usually peaks at the ends. An end whose plane holds almost
    none of the domain (the pole of a ball) moves a tenth of the range inward."""
    if domain.dim == 2:
        return [plane(domain, n, like, {})]
    middle = {a: (domain.lower[a] + domain.upper[a]) / 2 for a in range(2, domain.dim)}
    last = domain.dim - 1
    low, high = domain.lower[last], domain.upper[last]
    if time_axis(domain) == last:
        values = np.linspace(low, high, _SLICES + 1)[1:]
        return [plane(domain, n, like, {**middle, last: float(v)}) for v in values]
    planes = []
    for value, inward in zip(np.linspace(low, high, _SLICES), (1, 0, -1)):
        at = plane(domain, n, like, {**middle, last: float(value)})
        if inward and at.inside.mean() < _FEW_INSIDE:
            at = plane(domain, n, like, {**middle, last: float(value + inward * (high - low) / 10)})
        planes.append(at)
    return planes


def output_maps(figure: Figure, rows, problem, model, truth: Truth, k: int, planes, scale) -> None:
    """Draw output k on each of `planes`, one row of axes each: predicted, true, |error| (the
    first axis only where there is no true solution). `scale`: the error's, linear or log."""
    values = [_values(problem, model, truth, k, where) for where in planes]
    shared = value_norm(
        [v.predicted for v in values] + [v.true for v in values if v.true is not None]
    )
    errors = error_norm([v.error for v in values if v.error is not None], scale)
    name = problem.outputs[k]
    source = "exact" if truth.exact else "reference"
    for axes, where, drawn in zip(rows, planes, values):
        label = name + (f" at {where.label}" if where.label else "")
        _draw(figure, axes[0], where, drawn.predicted, f"predicted {label}", shared, name)
        if drawn.true is None:
            for axis in axes[1:3]:
                axis.set_visible(False)
            continue
        _draw(figure, axes[1], where, drawn.true, f"{source} {label}", shared, name, drawn.mesh)
        shown = clip_errors(drawn.error, errors)
        title = f"{ERROR_LABEL} {label}"
        _draw(figure, axes[2], where, shown, title, errors, ERROR_LABEL, drawn.mesh, "magma")


def _values(problem, model, truth: Truth, k: int, where: Plane) -> _Values:
    predicted = np.where(where.inside, numpy(predict(model, where.points))[:, k], np.nan)
    if truth.exact:
        exact = np.where(where.inside, numpy(truth.at(where.points))[:, k], np.nan)
        return _Values(predicted, exact, np.abs(predicted - exact), None)
    if truth.reference is not None and problem.domain.dim == 2:
        points = truth.reference.points
        true = numpy(truth.reference.reference[:, k])
        error = np.abs(numpy(predict(model, points)[:, k]) - true)
        return _Values(predicted, true, error, _triangulation(problem.domain, points))
    return _Values(predicted, None, None, None)


def _draw(figure, axis, where: Plane, values, title, norm, label, mesh=None, cmap="viridis"):
    """A colour map of `values` on the plane's grid, or at the reference points (`mesh`), with
    a colorbar labelled `label`. Every map spans the plane's box, so a reference that stops
    short of the domain's edge (a periodic grid without its last point) is drawn to scale."""
    x, y = numpy(where.lines[0]), numpy(where.lines[1])
    if mesh is None:
        grid = values.reshape(len(x), len(x)).T  # (y, x)
        image = axis.pcolormesh(x, y, grid, shading="auto", cmap=cmap, norm=norm)
    else:
        image = axis.tripcolor(mesh, values, shading="gouraud", cmap=cmap, norm=norm)
    axis.set_xlim(x[0], x[-1])
    axis.set_ylim(y[0], y[-1])
    image.set_rasterized(True)  # a vector file (pdf, svg) keeps its text sharp and its size small
    figure.colorbar(image, ax=axis, label=label)
    axis.set_title(title)
    axis.set_xlabel(where.names[0])
    axis.set_ylabel(where.names[1])
    axis.set_aspect(where.aspect)


def _triangulation(domain: Domain, points: torch.Tensor) -> Triangulation:
    """Delaunay triangles of scattered 2-D points, without those across holes or notches."""
    xy = points.detach().cpu().double()
    mesh = Triangulation(numpy(xy[:, 0]), numpy(xy[:, 1]))
    centroids = xy[torch.as_tensor(mesh.triangles)].mean(dim=1)
    mesh.set_mask(numpy((domain.level(centroids) < 0).double()) > 0)
    return mesh
