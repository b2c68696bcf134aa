"""What every solution figure draws with: the true solution, the time axis, and the colour scales.

Colour scales: the predicted and the true map of an output share one norm (`value_norm`), so two
fields that differ look different; the |error| maps have their own (`error_norm`), linear or
logarithmic (`ERROR_SCALES`).
"""

from __future__ import annotations

import numpy as np
import torch
from matplotlib.colors import LogNorm, Normalize

from pinn.derivatives.field import Model
from pinn.geometry import Domain, SpaceTime
from pinn.problem.problem import Problem
from pinn.run.validation import Validator, can_validate

ERROR_SCALES = ("linear", "log")
ERROR_LABEL = "|error|"  # the label of every error colorbar


def time_axis(domain: Domain) -> int | None:
    """The index of the time coordinate: a SpaceTime's, or a coordinate named "t"; else None."""
    if isinstance(domain, SpaceTime):
        return domain.dim - 1
    return domain.names.index("t") if "t" in domain.names else None


class Truth:
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


def like(model: Model) -> dict:
    """The dtype and device of the model's parameters (float64 on the CPU for a plain function)."""
    parameter = next(model.parameters(), None) if hasattr(model, "parameters") else None
    reference = parameter if parameter is not None else torch.zeros((), dtype=torch.float64)
    return {"dtype": reference.dtype, "device": reference.device}


def numpy(values: torch.Tensor) -> np.ndarray:
    """A float64 numpy copy of a tensor."""
    return values.detach().cpu().double().numpy()


def _finite(arrays) -> np.ndarray:
    """The finite values of all `arrays` (NaN marks points outside the domain), flattened."""
    values = np.concatenate([np.ravel(a) for a in arrays]) if arrays else np.zeros(0)
    return values[np.isfinite(values)]


def value_norm(arrays) -> Normalize:
    """One linear norm over the finite values of `arrays` (an output's predicted and true maps)."""
    values = _finite(arrays)
    if values.size == 0:
        return Normalize(0.0, 1.0)
    low, high = float(values.min()), float(values.max())
    return Normalize(low, high) if high > low else Normalize(low - 0.5, high + 0.5)


def error_norm(arrays, scale: str = "linear") -> Normalize:
    """The norm of an output's |error| maps: linear from 0, or logarithmic ("log").

    On a log scale, zero errors sit at the bottom of the scale (drawn with `clip_errors`): the
    smallest positive error, or 1e-16 where every error is zero.
    """
    values = _finite(arrays)
    high = float(values.max()) if values.size else 0.0
    if scale == "log":
        positive = values[values > 0]
        low = float(positive.min()) if positive.size else 1e-16
        return LogNorm(low, high if high > low else 10 * low)
    return Normalize(0.0, high if high > 0 else 1.0)


def clip_errors(errors: np.ndarray, norm: Normalize) -> np.ndarray:
    """`errors` raised to the bottom of a log norm, so zeros get its lowest colour (NaN kept)."""
    return np.maximum(errors, norm.vmin) if isinstance(norm, LogNorm) else errors
