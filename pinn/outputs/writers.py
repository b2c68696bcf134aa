"""What a finished run leaves in its directory: metrics.json, history.csv, prediction.npz,
the plots (in each of `outputs.plot_formats`) and, on request, VTK files."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from pinn.evaluation.validation import Validator, evaluation_points, predict
from pinn.nn.placement import placement
from pinn.outputs.vtk import write_vtk
from pinn.plots.reference import reference_figure
from pinn.plots.solution import PlotOptions, loss_figure, save_figure, solution_figure
from pinn.problem.problem import Problem
from pinn.problem.quantities import evaluate_quantities, quantity_errors
from pinn.training.history import HISTORY_NAME, HistoryCSV
from pinn.training.state import FitResult

PREDICTION_NAME = "prediction.npz"


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


def write_outputs(
    run_dir: Path,
    problem: Problem,
    model,
    result: FitResult,
    metrics: dict,
    validator: Validator | None = None,
    plots: PlotOptions | None = None,
    vtk: bool = False,
) -> None:
    """metrics.json, history.csv, prediction.npz, and solution.<format> and loss.<format> for
    each of `plots.formats` (png when `plots` is None) in `run_dir`; with `vtk`, the
    prediction as VTK files too (`pinn.outputs.vtk`)."""
    (run_dir / "metrics.json").write_text(json.dumps(json_safe(metrics), indent=2) + "\n")
    HistoryCSV(run_dir / HISTORY_NAME).update(result.history)
    if validator is not None:  # outputs up to a constant shown as the errors measure them
        model = validator.aligned(model)
    arrays = write_prediction(run_dir / PREDICTION_NAME, problem, model, validator)
    if vtk:
        write_vtk(run_dir, problem.domain, problem.outputs, arrays)
    write_plots(run_dir, problem, model, result, metrics, validator, plots or PlotOptions())


def write_plots(
    run_dir: Path,
    problem: Problem,
    model,
    result: FitResult,
    metrics: dict,
    validator: Validator | None,
    plots: PlotOptions,
) -> None:
    """solution.<format> (titled with the problem, rel_l2 and steps) and loss.<format>; with
    reference data for some outputs only, reference.<format> (their profiles) too."""
    solution = solution_figure(
        problem,
        model,
        validator,
        error_scale=plots.error_scale,
        rel_l2=metrics.get("rel_l2"),
        steps=metrics.get("steps"),
    )
    save_figure(solution, run_dir / "solution", plots.formats)
    if validator is not None and not validator.complete:
        profiles = reference_figure(problem, model, validator)
        save_figure(profiles, run_dir / "reference", plots.formats)
    title = f"{type(problem).__name__}: training loss"
    loss = loss_figure(result.history, skip=metrics.get("unknowns", {}), title=title)
    save_figure(loss, run_dir / "loss", plots.formats)


def write_prediction(
    path: Path, problem: Problem, model, validator: Validator | None = None
) -> dict[str, np.ndarray]:
    """prediction.npz: `points` (M, d) and `predicted` (M, m) on the evaluation set, and
    `reference` (M, m), the exact or reference solution there, when there is one; returns these
    float64 arrays, as written."""
    if validator is not None:
        points, arrays = validator.points, {"reference": validator.reference}
    else:
        dtype, device = placement(model)
        points, arrays = evaluation_points(problem, dtype=dtype, device=device), {}
    arrays = {"points": points, "predicted": predict(model, points), **arrays}
    numpy_arrays = {name: value.detach().cpu().double().numpy() for name, value in arrays.items()}
    np.savez(path, **numpy_arrays)
    return numpy_arrays
