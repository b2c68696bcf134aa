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
from pinn.evaluation.validation import Validator
from pinn.geometry import Domain, SpaceTime
from pinn.problem.problem import Problem

ERROR_SCALES = ("linear", "log")
ERROR_LABEL = "|error|"  # the label of every error colorbar
_LOG_DECADES = 8  # the most decades a log error scale spans


def time_axis(domain: Domain) -> int | None:
    """The index of the time coordinate: a SpaceTime's, or a coordinate named "t"; else None."""
    if isinstance(domain, SpaceTime):
        return domain.dim - 1
    return domain.names.index("t") if "t" in domain.names else None


class Truth:
    """The true solution: the exact function at any points, or reference data at its points.

    Reference data that gives some outputs only, or each at its own points (a centreline
    profile), is not drawn here but in the figure of `pinn.plots.reference`: `known` is
    False then, and the maps show the prediction alone.
    """

    def __init__(self, problem: Problem, validator: Validator | None):
        self.problem = problem
        self.exact = problem.has_exact
        complete = validator is not None and validator.complete
        self.reference = validator if (complete and not self.exact) else None
        self.known = self.exact or self.reference is not None

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

    A log scale reaches down to the smallest positive error, but no further than `_LOG_DECADES`
    decades below the largest and at least one decade (1e-16 to 1e-15 where every error is zero);
    errors below it, zeros included, take its lowest colour (`clip_errors`).
    """
    values = _finite(arrays)
    high = float(values.max()) if values.size else 0.0
    if scale == "log":
        if high <= 0:
            return LogNorm(1e-16, 1e-15)
        positive = values[values > 0]
        low = max(float(positive.min()), high * 10.0**-_LOG_DECADES)
        return LogNorm(min(low, high / 10), high)
    return Normalize(0.0, high if high > 0 else 1.0)


def clip_errors(errors: np.ndarray, norm: Normalize) -> np.ndarray:
    """`errors` raised to the bottom of a log norm, so zeros get its lowest colour (NaN kept:
    outside the domain)."""
    return np.maximum(errors, norm.vmin) if isinstance(norm, LogNorm) else errors
