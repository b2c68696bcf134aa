"""history.csv: `logger` writes it row by row as a run goes (`outputs.loggers` holds
"history" by default), `write` whole at the end, a resumed or marched run's whole history
included, so every finished run has one."""

from __future__ import annotations

from pathlib import Path

from pinn.outputs.finished import FinishedRun
from pinn.training.history import HISTORY_NAME, HistoryCSV, HistoryFile


def logger(run_dir: Path) -> HistoryFile:
    """The callback keeping `run_dir`/history.csv equal to the history at every row."""
    return HistoryFile(run_dir / HISTORY_NAME)


def write(run: FinishedRun) -> None:
    """history.csv."""
    HistoryCSV(run.run_dir / HISTORY_NAME).update(run.result.history)
