"""The figures of a finished run: solution.<format>, loss.<format> and, with reference data for
some outputs only, reference.<format>, in each of `outputs.plot_formats` (`pinn.plots`)."""

from __future__ import annotations

from pinn.outputs.finished import FinishedRun
from pinn.plots import loss_figure, reference_figure, save_figure, solution_figure


def write(run: FinishedRun) -> None:
    """solution (titled with the problem, rel_l2 and steps), loss, and reference where the
    reference data covers some outputs only."""
    problem, model, validator, plots = run.problem, run.model, run.validator, run.plots
    solution = solution_figure(
        problem,
        model,
        validator,
        error_scale=plots.error_scale,
        rel_l2=run.metrics.get("rel_l2"),
        steps=run.metrics.get("steps"),
    )
    save_figure(solution, run.run_dir / "solution", plots.formats)
    if validator is not None and not validator.complete:
        profiles = reference_figure(problem, model, validator)
        save_figure(profiles, run.run_dir / "reference", plots.formats)
    title = f"{type(problem).__name__}: training loss"
    loss = loss_figure(run.result.history, skip=run.metrics.get("unknowns", {}), title=title)
    save_figure(loss, run.run_dir / "loss", plots.formats)
