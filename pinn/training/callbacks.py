"""Callbacks: your code, called by `fit` as the run goes.

    class Watch(pinn.Callback):
        def on_row(self, row, state):
            print(row["step"], row["loss"])

    fit(problem, model, settings, points, callbacks=[Watch()])

A callback overrides the methods it needs; the others do nothing. They are called, in this
order within a run, at

    on_row(row, state)               each history row (the row `state.history` just got)
    on_checkpoint(path, step, state) each checkpoint written (the state at `step`)
    on_phase(old, new, state)        each change of phase (settings.phases, then "done")
    on_end(result, state)            the end of a run that finished (the `FitResult`)

`state` is the run's `RunState` (model, step, phase, history, ...): read it, never change it, or
a resumed run no longer ends where the uninterrupted one would have. A run that raises
(`TrainingDiverged`, Ctrl-C) calls no `on_end`.

history.csv is written by one (`pinn.HistoryFile`), as is TensorBoard's log
(`pinn.TensorBoardLogger`): a run's `outputs.loggers` are callbacks. Under torchrun only
rank 0 calls callbacks.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pinn.errors import ConfigError

if TYPE_CHECKING:
    from pinn.training.state import FitResult, RunState

HOOKS = ("on_row", "on_checkpoint", "on_phase", "on_end")


class Callback:
    """What `fit(..., callbacks=[...])` calls; every method does nothing unless overridden."""

    def on_row(self, row: dict[str, Any], state: RunState) -> None:
        """A history row was logged: `row` is a copy of `state.history[-1]` ({column: value}:
        step, phase, loss, lr, each loss term, unknowns, loss weights, rel_l2 where validated,
        time_s)."""

    def on_checkpoint(self, path: Path, step: int, state: RunState) -> None:
        """The state at `step` was written to the checkpoint file `path`."""

    def on_phase(self, old: str, new: str, state: RunState) -> None:
        """The run went from phase `old` to `new`, in the order of `settings.phases`, then
        "done" ("adam" -> "lbfgs" -> "done" by default); a phase with no steps is skipped, so
        "adam" -> "done" without L-BFGS steps. A resumed run calls it from where it takes up."""

    def on_end(self, result: FitResult, state: RunState) -> None:
        """The run finished (also a resumed run that had already finished): `result` is what
        `fit` returns."""


class CallbackList(Callback):
    """Several callbacks called as one, in their order.

    Raises:
        ConfigError: an entry is not a `Callback`, or `callbacks` is one, not a list.
    """

    def __init__(self, callbacks: Sequence[Callback] = ()):
        if isinstance(callbacks, Callback):
            raise ConfigError(
                f"callbacks= takes a list of pinn.Callback, not one: callbacks=[{callbacks!r}]"
            )
        for index, callback in enumerate(callbacks):
            if not isinstance(callback, Callback):
                raise ConfigError(
                    f"callbacks[{index}] is {callback!r}, not a pinn.Callback: subclass "
                    f"pinn.Callback and override the methods you need ({', '.join(HOOKS)})"
                )
        self.callbacks = list(callbacks)

    def on_row(self, row: dict[str, Any], state: RunState) -> None:
        for callback in self.callbacks:
            callback.on_row(dict(row), state)  # each its own copy: the history stays as logged

    def on_checkpoint(self, path: Path, step: int, state: RunState) -> None:
        for callback in self.callbacks:
            callback.on_checkpoint(path, step, state)

    def on_phase(self, old: str, new: str, state: RunState) -> None:
        for callback in self.callbacks:
            callback.on_phase(old, new, state)

    def on_end(self, result: FitResult, state: RunState) -> None:
        for callback in self.callbacks:
            callback.on_end(result, state)
