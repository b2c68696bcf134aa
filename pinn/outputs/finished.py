"""`FinishedRun`: what a finished run hands each of its writers (`pinn.outputs.WRITERS`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from torch import nn

from pinn.evaluation.validation import Validator, evaluation_points, predict
from pinn.nn.placement import placement
from pinn.plots.files import PlotOptions
from pinn.problem.problem import Problem
from pinn.training.state import FitResult


@dataclass
class FinishedRun:
    """A finished run, as its writers read it.

    Attributes:
        run_dir: where they write.
        problem, model: the problem and the trained model; an output the problem declares free
            up to a constant (`up_to_constant`) shifted as the errors measure it.
        result: what `fit` returned (the history, the final loss).
        metrics: metrics.json's content.
        validator: the exact or reference solution, or None without one.
        plots: the figures' formats and error scale.
    """

    run_dir: Path
    problem: Problem
    model: nn.Module
    result: FitResult
    metrics: dict[str, Any]
    validator: Validator | None = None
    plots: PlotOptions = field(default_factory=PlotOptions)
    _prediction: dict[str, np.ndarray] | None = field(default=None, repr=False)

    def prediction(self) -> dict[str, np.ndarray]:
        """prediction.npz's float64 arrays, computed once for every writer that needs them:
        `points` (M, d) and `predicted` (M, m) on the evaluation set, and `reference` (M, m)
        where the problem has an exact or reference solution."""
        if self._prediction is None:
            self._prediction = prediction_arrays(self.problem, self.model, self.validator)
        return self._prediction


def prediction_arrays(
    problem: Problem, model: nn.Module, validator: Validator | None = None
) -> dict[str, np.ndarray]:
    """`points`, `predicted` and (with a validator) `reference`, as float64 numpy arrays."""
    if validator is not None:
        points, arrays = validator.points, {"reference": validator.reference}
    else:
        dtype, device = placement(model)
        points, arrays = evaluation_points(problem, dtype=dtype, device=device), {}
    arrays = {"points": points, "predicted": predict(model, points), **arrays}
    return {name: value.detach().cpu().double().numpy() for name, value in arrays.items()}
