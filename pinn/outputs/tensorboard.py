"""The logger `tensorboard`: every history row as TensorBoard scalars, in `<run_dir>/tensorboard/`.

    python -m pinn problem=poisson outputs.loggers=[history,tensorboard]
    tensorboard --logdir outputs/

From Python, the same callback: `fit(..., callbacks=[pinn.TensorBoardLogger("runs/a/tb")])`.
It needs the optional `tensorboard` package (`pip install "pinn-torch[tensorboard]"`).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from pinn.errors import ConfigError
from pinn.plots.solution import loss_columns
from pinn.problem.columns import (
    ATTENTION_PREFIX,
    CAUSAL_PREFIX,
    GAUSS_NEWTON_PREFIX,
    LOSS,
    LR,
    QUANTITY_PREFIX,
    REL_L2,
    STEP,
)
from pinn.training.callbacks import Callback
from pinn.training.state import FitResult, RunState

TENSORBOARD_DIR = "tensorboard"


def logger(run_dir: Path) -> TensorBoardLogger:
    """The callback writing a run's rows into `run_dir`/tensorboard/.

    Raises:
        ConfigError: tensorboard is not installed.
    """
    return TensorBoardLogger(run_dir / TENSORBOARD_DIR)


def scalars(row: dict[str, Any], unknowns: tuple[str, ...] = ()) -> dict[str, float]:
    """A history row's TensorBoard scalars by tag: "loss", "loss/<term>" for each loss term,
    "rel_l2" (where the row has it), "quantity/<name>" for each quantity of interest there,
    "causal/min_weight" and "causal/mean_weight" with causal weighting, "attention/mean_weight"
    and "attention/max_weight" with point weights, "gauss_newton/length"
    and "gauss_newton/damping" in Gauss-Newton's rows, and "lr" (where it has one: Adam's
    rows)."""
    tagged = {
        LOSS if name == LOSS else f"loss/{name}": row[name]
        for name in loss_columns(row, skip=unknowns)
    }
    for name in row:
        if name.startswith(QUANTITY_PREFIX):
            tagged[f"quantity/{name.removeprefix(QUANTITY_PREFIX)}"] = row[name]
        if name.startswith(CAUSAL_PREFIX):
            tagged[f"causal/{name.removeprefix(CAUSAL_PREFIX)}"] = row[name]
        if name.startswith(ATTENTION_PREFIX):
            tagged[f"attention/{name.removeprefix(ATTENTION_PREFIX)}"] = row[name]
        if name.startswith(GAUSS_NEWTON_PREFIX):
            tagged[f"gauss_newton/{name.removeprefix(GAUSS_NEWTON_PREFIX)}"] = row[name]
    if REL_L2 in row:
        tagged[REL_L2] = row[REL_L2]
    if not math.isnan(row.get(LR, math.nan)):
        tagged[LR] = row[LR]
    return tagged


class TensorBoardLogger(Callback):
    """Writes the scalars of every history row (`scalars`) at the row's step into `log_dir`.

    At its first row it replaces the event files already in `log_dir` and writes the rows the
    history had before (a resumed run's), so the logs hold the same rows as history.csv.
    Values are stored as float32 (TensorBoard's scalars).

    Raises:
        ConfigError: tensorboard is not installed (when made, before any training).
    """

    def __init__(self, log_dir: str | Path):
        self.log_dir = Path(log_dir)
        self._writer_class = _summary_writer_class()
        self._writer = None
        self._written = 0  # rows of the history already logged

    def on_row(self, row: dict[str, Any], state: RunState) -> None:
        self._log(state)

    def on_end(self, result: FitResult, state: RunState) -> None:
        self._log(state)  # a resumed run that had finished logs its rows here
        self.close()

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None

    def _log(self, state: RunState) -> None:
        """Every row of `state.history` not logged yet, then to disk (a watched run shows it)."""
        if self._writer is None:
            self._open()
        for row in state.history[self._written :]:
            for tag, value in scalars(row, state.unknowns.names).items():
                self._writer.add_scalar(tag, value, row[STEP])
        self._written = len(state.history)
        self._writer.flush()

    def _open(self) -> None:
        for old in self.log_dir.glob("events.out.tfevents.*"):
            old.unlink()
        self._writer = self._writer_class(log_dir=str(self.log_dir))
        self._written = 0


def _summary_writer_class() -> type:
    """torch's SummaryWriter, or a ConfigError saying how to install tensorboard."""
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError as error:
        raise ConfigError(
            f"the logger tensorboard needs the tensorboard package ({error}): "
            'pip install "pinn-torch[tensorboard]", or leave tensorboard out of outputs.loggers'
        ) from error
    return SummaryWriter
