"""What a finished run writes: a list of writers, each one module, run in this order.

    metrics       metrics.json (metrics; provenance: how the run was made)
    history       history.csv, whole (history)
    prediction    prediction.npz (prediction)
    vtk           the prediction as VTK files for ParaView, with outputs.vtk=true (vtk)
    plots         solution, loss (and reference) figures (figures)

    write_outputs(FinishedRun(run_dir, problem, model, result, metrics, validator, plots),
                  chosen_writers(config.outputs))

and the loggers a run calls at each history row besides history.csv (which `fit` writes as it
goes): `logger=tensorboard` (tensorboard).

A new output is one module here with a `write(run: FinishedRun)` function, one line in
`WRITERS`, and, where it is optional, a bool key of the same name in the `outputs` block
(`pinn.config.schema.OutputSettings`): a writer named like a bool key there runs only when it is
true; the others always run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from pinn.outputs import figures, history, metrics, prediction, vtk
from pinn.outputs.finished import FinishedRun

WRITERS: dict[str, Callable[[FinishedRun], Any]] = {
    "metrics": metrics.write,
    "history": history.write,
    "prediction": prediction.write,
    "vtk": vtk.write,
    "plots": figures.write,
}


def chosen_writers(outputs: object) -> list[str]:
    """The writers an `outputs` settings block chooses: each whose name is a bool key of the
    block when that key is true, every other one always."""
    return [name for name in WRITERS if getattr(outputs, name, True) is not False]


def write_outputs(run: FinishedRun, names: Iterable[str] = tuple(WRITERS)) -> None:
    """Run the writers `names`, in `WRITERS`' order."""
    chosen = set(names)
    for name, write in WRITERS.items():
        if name in chosen:
            write(run)


__all__ = ["WRITERS", "FinishedRun", "chosen_writers", "write_outputs"]
