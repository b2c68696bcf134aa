"""history.csv, written as a run goes: one row per logged step, so a long run can be watched.

`HistoryCSV` keeps a file equal to a list of rows; `HistoryFile` is the callback that writes
it at every history row (`fit(..., callbacks=[HistoryFile(path)])`; a run's logger `history`).
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pinn.training.callbacks import Callback

if TYPE_CHECKING:
    from pinn.training.state import RunState

from pinn.errors import OutputError, reason

HISTORY_NAME = "history.csv"


class HistoryCSV:
    """Keeps `path` equal to the history rows seen so far.

    `update(history)` appends the rows not yet written; when a row brings a column the file
    does not have yet, the file is written anew with the union of the columns (in first-seen
    order; a row without a column leaves its cell empty).
    """

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.columns: list[str] = []
        self.written = 0

    def update(self, history: Sequence[dict]) -> None:
        """Raises OutputError (naming the file and why) when the file cannot be written."""
        try:
            self._update(history)
        except OSError as error:
            raise OutputError(
                f"cannot write the history {self.path}: {reason(error)}; the last checkpoint "
                "beside it is unchanged: free some space, then continue with resume=<run dir>"
            ) from error

    def _update(self, history: Sequence[dict]) -> None:
        columns = list(dict.fromkeys(key for row in history for key in row))
        if columns != self.columns or len(history) < self.written:
            self.columns, self.written = columns, 0
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.path, "w", newline="") as file:
                csv.DictWriter(file, fieldnames=columns).writeheader()
        if len(history) > self.written:
            with open(self.path, "a", newline="") as file:
                csv.DictWriter(file, fieldnames=self.columns).writerows(history[self.written :])
            self.written = len(history)


class HistoryFile(Callback):
    """The callback that keeps the csv file at `path` equal to the run's history, row by row
    (a resumed run's rows from before its checkpoint included): a column per key of the rows.

    Args:
        path: the file to write (history.csv in a run directory); replaced at the first row.

    Raises:
        OutputError: the file cannot be written (naming it and why).
    """

    def __init__(self, path: str | Path):
        self.csv = HistoryCSV(path)

    def on_row(self, row: dict[str, Any], state: RunState) -> None:
        self.csv.update(state.history)
