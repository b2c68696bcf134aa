"""prediction.npz: the trained model on the evaluation set, beside the true solution."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from pinn.evaluation.validation import Validator
from pinn.outputs.finished import FinishedRun, prediction_arrays
from pinn.problem.problem import Problem

PREDICTION_NAME = "prediction.npz"


def write_prediction(
    path: Path, problem: Problem, model, validator: Validator | None = None
) -> dict[str, np.ndarray]:
    """prediction.npz at `path`: `points` (M, d) and `predicted` (M, m) on the evaluation set,
    and `reference` (M, m), the exact or reference solution there, when there is one; returns
    these float64 arrays, as written."""
    arrays = prediction_arrays(problem, model, validator)
    np.savez(path, **arrays)
    return arrays


def write(run: FinishedRun) -> None:
    """prediction.npz."""
    np.savez(run.run_dir / PREDICTION_NAME, **run.prediction())
