"""metrics.json: a finished run's errors, time, steps, loss, unknowns and quantities (and, from
the run layer, `provenance`)."""

from __future__ import annotations

import json
import math

from pinn.evaluation.validation import Validator
from pinn.outputs.finished import FinishedRun
from pinn.problem.problem import Problem
from pinn.problem.quantities import evaluate_quantities, quantity_errors
from pinn.training.state import FitResult

METRICS_NAME = "metrics.json"


def summarise(
    result: FitResult,
    validator: Validator | None,
    model,
    wall_time: float,
    unknowns: dict[str, float] | None = None,
    problem: Problem | None = None,
) -> dict:
    """metrics.json's content: errors (None without an exact solution), time, steps, loss,
    the learned `unknowns` ({name: value}) of a problem that has any, and the `problem`'s
    quantities of interest ("quantities", and "quantity_errors" against its reference values)."""
    errors = validator.errors(model) if validator else {"rel_l2": None, "max_abs_error": None}
    metrics = {
        **errors,
        "wall_time_s": wall_time,
        "steps": result.steps,
        "final_loss": result.final_loss,
    }
    if validator is not None and validator.shifted:
        metrics["constants"] = validator.constants(model)
    if unknowns:
        metrics["unknowns"] = dict(unknowns)
    if problem is not None and problem.has_quantities:
        metrics["quantities"] = evaluate_quantities(problem, model)
        if problem.quantity_reference:
            owner = f"{type(problem).__name__}.quantity_reference"
            reference = problem.quantity_reference
            metrics["quantity_errors"] = quantity_errors(metrics["quantities"], reference, owner)
    return metrics


def json_safe(value: object) -> object:
    """`value` with every NaN or infinite float as None: JSON has no such numbers (Python would
    write `NaN`, `Infinity`, which other readers refuse)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {key: json_safe(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(item) for item in value]
    return value


def write(run: FinishedRun) -> None:
    """metrics.json."""
    (run.run_dir / METRICS_NAME).write_text(json.dumps(json_safe(run.metrics), indent=2) + "\n")
