"""A space-time prediction on time slices, for a VTK time series.

    on_time_slices(points, space_dim)    # whether prediction.npz's points already are
    arrays = time_slices(problem, model) # else: the model evaluated on SERIES_TIMES slices

The evaluation points of a space-time domain of 3-D space are scattered Sobol points, on no
time slice, and so may be reference data; `time_slices` then evaluates the model on a grid of
the space (about SLICE_POINTS points, `grid_points`) at SERIES_TIMES evenly spaced times from
the start to the end, with the exact solution there as the reference where the problem has one.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from pinn.evaluation.validation import exact_values, grid_points, predict
from pinn.geometry import SpaceTime
from pinn.nn.placement import placement
from pinn.problem.problem import Problem

SERIES_TIMES = 11  # evenly spaced times, the interval's ends included
SLICE_POINTS = 4_000  # about this many grid points of the space at each time
CHUNK_ROWS = 8_192  # points evaluated at once, so memory stays modest


def on_time_slices(points: np.ndarray, space_dim: int) -> bool:
    """Whether the (M, d) space-time points (time last) lie on time slices: every time value
    is shared by at least space_dim + 1 points, enough for a cell."""
    _, counts = np.unique(points[:, -1], return_counts=True)
    return len(counts) > 0 and bool(counts.min() > space_dim)


def time_slices(problem: Problem, model: nn.Module) -> dict[str, np.ndarray]:
    """prediction.npz's arrays on time slices of the problem's space-time domain: `points`
    (T * S, d), `predicted` (T * S, m) and, where the problem has an exact solution,
    `reference` (T * S, m), for S grid points of the space at each of T = SERIES_TIMES times."""
    domain: SpaceTime = problem.domain
    space = grid_points(domain.space, SLICE_POINTS, dtype=torch.float64)
    times = torch.linspace(domain.start, domain.end, SERIES_TIMES, dtype=torch.float64)
    points = torch.cat(
        [space.repeat(len(times), 1), times.repeat_interleave(len(space))[:, None]], 1
    )
    dtype, device = placement(model)
    chunks = points.split(CHUNK_ROWS)
    arrays = {
        "points": points,
        "predicted": torch.cat(
            [predict(model, c.to(dtype=dtype, device=device)).cpu() for c in chunks]
        ),
    }
    if problem.has_exact:
        arrays["reference"] = torch.cat([exact_values(problem, c).cpu() for c in chunks])
    return {name: value.detach().double().numpy() for name, value in arrays.items()}
