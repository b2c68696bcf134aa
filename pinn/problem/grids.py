"""Reference data on a grid, as `reference()` returns it: (M, d) points and (M,) or (M, m) values.

Solvers and published datasets store a solution on a tensor grid: one array of coordinates per
axis and the values shaped by the axes' lengths (DeepXDE's `Burgers.npz`: x (256, 1), t (100, 1),
usol (256, 100) with usol[i, j] = u(x_i, t_j)). `on_grid` turns that into points and values,
checking that the shapes agree, so that a grid stored the other way round is refused rather
than validated against the wrong points:

    def reference(self):
        data = np.load(HERE / "Burgers.npz")
        return pinn.on_grid([data["x"], data["t"]], data["usol"])
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from pinn.errors import ConfigError


def on_grid(axes: Sequence[object], values: object) -> tuple[torch.Tensor, torch.Tensor]:
    """(M, d) points and (M,) or (M, m) values of data on the tensor grid of `axes`.

    Args:
        axes: d arrays of coordinates, one per input in the problem's order (x, then t, ...),
            each (n_k,) or (n_k, 1).
        values: shaped (n_0, ..., n_{d-1}), `values[i, j, ...]` at
            `(axes[0][i], axes[1][j], ...)`, or with a last axis of m outputs,
            (n_0, ..., n_{d-1}, m).

    Returns float64 tensors, the points in C order (the last axis varying fastest).

    Raises:
        ConfigError: an axis is not one-dimensional, or the values are not shaped by the axes'
            lengths (saying so when they are the other way round: pass the transpose).
    """
    coordinates = [_axis(axis, k) for k, axis in enumerate(axes)]
    if not coordinates:
        raise ConfigError("on_grid needs at least one axis of coordinates")
    data = torch.as_tensor(np.asarray(values, dtype=np.float64))
    lengths = tuple(len(axis) for axis in coordinates)
    d = len(lengths)
    if data.shape[:d] != lengths or data.ndim not in (d, d + 1):
        raise ConfigError(_shape_message(tuple(data.shape), lengths))
    mesh = torch.meshgrid(*coordinates, indexing="ij")
    points = torch.stack([axis.reshape(-1) for axis in mesh], dim=1)
    return points, data.reshape(len(points), *data.shape[d:])


def _axis(axis: object, k: int) -> torch.Tensor:
    array = np.asarray(axis, dtype=np.float64)
    if array.ndim == 2 and 1 in array.shape:  # a column or a row, as .npz files often hold
        array = array.reshape(-1)
    if array.ndim != 1 or len(array) == 0:
        raise ConfigError(
            f"on_grid: axis {k} must be a 1-d array of coordinates (or (n, 1)), got shape "
            f"{array.shape}"
        )
    return torch.as_tensor(array)


def _shape_message(shape: tuple[int, ...], lengths: tuple[int, ...]) -> str:
    wanted = f"{lengths} (or {(*lengths, 'm')} for m outputs)"
    message = f"on_grid: values must be shaped by the axes' lengths, {wanted}; got {shape}"
    if len(lengths) == 2 and shape[:2] == lengths[::-1]:
        message += (
            ": the axes' lengths the other way round, so values[i, j] is at (axes[0][j], "
            "axes[1][i]); pass the values transposed (values.T)"
        )
    return message
