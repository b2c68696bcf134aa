"""What a run writes: loggers called at each history row as it goes, and writers at its end.

Loggers (`outputs.loggers`, in that order; each a `pinn.Callback` made for the run directory):

    history       history.csv, rewritten at every row (history)
    tensorboard   the rows as TensorBoard scalars in tensorboard/ (tensorboard)

Writers, run in this order when the run has finished:

    metrics       metrics.json (metrics; provenance: how the run was made)
    history       history.csv, whole (history)
    prediction    prediction.npz (prediction)
    vtk           the prediction as VTK files for ParaView, with outputs.vtk=true (vtk)
    plots         solution, loss (and reference) figures (figures)

    loggers = run_loggers(config.outputs.loggers, run_dir)          # fit(..., callbacks=loggers)
    write_outputs(FinishedRun(run_dir, problem, model, result, metrics, validator, plots),
                  chosen_writers(config.outputs))

A new output is one module here with a `write(run: FinishedRun)` function (a writer) or a
`logger(run_dir) -> Callback` function (a logger), and one line in `WRITERS` or `LOGGERS`. A
writer named like a bool key of the `outputs` block (`pinn.config.schema.OutputSettings`) runs
only when that key is true; the other writers always run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from pinn.errors import ConfigError
from pinn.outputs import figures, history, metrics, prediction, tensorboard, vtk
from pinn.outputs.finished import FinishedRun
from pinn.training.callbacks import Callback

WRITERS: dict[str, Callable[[FinishedRun], Any]] = {
    "metrics": metrics.write,
    "history": history.write,
    "prediction": prediction.write,
    "vtk": vtk.write,
    "plots": figures.write,
}

LOGGERS: dict[str, Callable[[Path], Callback]] = {
    "history": history.logger,
    "tensorboard": tensorboard.logger,
}


def check_loggers(names: Sequence[str]) -> None:
    """Refuse a name of `outputs.loggers` that is no logger, saying which there are."""
    for name in names:
        if name not in LOGGERS:
            raise ConfigError(
                f"outputs.loggers: {name!r} is no logger; choose from {', '.join(LOGGERS)}, "
                "e.g. outputs.loggers=[history,tensorboard] (or [] for none)"
            )


def run_loggers(names: Sequence[str], run_dir: str | Path) -> list[Callback]:
    """The callbacks of the loggers `names` (`LOGGERS`' keys), for a run writing `run_dir`.

    Raises:
        ConfigError: an unknown name, or a logger's package is not installed.
    """
    check_loggers(names)
    return [LOGGERS[name](Path(run_dir)) for name in names]


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


__all__ = [
    "LOGGERS",
    "WRITERS",
    "FinishedRun",
    "check_loggers",
    "chosen_writers",
    "run_loggers",
    "write_outputs",
]
