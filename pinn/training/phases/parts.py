"""`Parts`: what the phases call at their cadence, and `finish`, the run's last loss.

The loss of a batch, the recorder (history rows, progress), the checkpoints, the watch on
non-finite losses and the callbacks (history.csv, a user's: told of each row, checkpoint and
change of phase).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import torch

from pinn.training.callbacks import CallbackList
from pinn.training.checkpoints import Checkpoints
from pinn.training.divergence import DivergenceWatch
from pinn.training.interrupts import Interrupts
from pinn.training.recording import Recorder
from pinn.training.state import RunState
from pinn.training.step_loss import StepLoss


@dataclass
class Parts:
    """What the phases call: the loss, the recorder, the checkpoints, the divergence watch,
    the callbacks (empty on ranks other than 0) and the signals asking the run to stop."""

    loss: StepLoss
    recorder: Recorder
    checkpoints: Checkpoints
    watch: DivergenceWatch
    callbacks: CallbackList
    interrupts: Interrupts = field(default_factory=lambda: Interrupts(enabled=False))

    def row(self, step, phase, terms, loss, lr=math.nan, validate=True, extra=None) -> None:
        """A history row, never after a non-finite loss; the callbacks see it."""
        self.watch.check()
        self.recorder.row(step, phase, terms, loss, lr, validate, extra)
        self.callbacks.on_row(self.recorder.state.history[-1], self.recorder.state)

    def save(self, state: RunState, loss: torch.Tensor) -> None:
        """The checkpoint of `state`, never after a non-finite loss; the callbacks hear of it."""
        self.watch.check()
        if self.checkpoints.write(state, loss.item()):
            self.callbacks.on_checkpoint(Path(self.checkpoints.path), state.step, state)

    def enter(self, state: RunState, index: int, phase: str) -> None:
        """`state` goes into `phase` (the `index`-th of `trainer.phases`, or "done" after the
        last) from its current step; the bar and the callbacks show it."""
        old, state.phase = state.phase, phase
        state.phase_index, state.phase_start = index, state.step
        self.recorder.phase(phase)
        self.callbacks.on_phase(old, phase, state)

    def save_if_due(self, state: RunState, loss: torch.Tensor) -> None:
        if self.checkpoints.due(state.step):
            self.save(state, loss)

    def stop(self, state: RunState) -> None:
        """End the run on a signal (TrainingInterrupted); its checkpoint is written."""
        self.interrupts.stop(state.step, self.checkpoints.path)


def finish(state: RunState, parts: Parts) -> None:
    """The final loss at the final parameters, its history row and the last checkpoint."""
    terms, loss = parts.loss.reduce(*parts.loss(state.batch))
    parts.watch.require_finite(terms, loss, state.step, "final")
    state.active = None
    parts.enter(state, len(state.settings.phases), "done")
    parts.row(state.step, "final", terms, loss)
    parts.save(state, loss)
    state.final_loss = loss.item()
    if parts.interrupts.requested():  # the run is saved as finished: resuming writes outputs
        parts.stop(state)
