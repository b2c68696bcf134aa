"""history.csv, whole, at the end of a run (the run writes it row by row as it goes too:
`pinn.training.history`); a resumed or marched run's whole history included."""

from __future__ import annotations

from pinn.outputs.finished import FinishedRun
from pinn.training.history import HISTORY_NAME, HistoryCSV


def write(run: FinishedRun) -> None:
    """history.csv."""
    HistoryCSV(run.run_dir / HISTORY_NAME).update(run.result.history)
