"""The phases of a run, each reading top to bottom: Adam, then L-BFGS, then the final loss.

Each takes the run's state (`RunState`) and the parts it calls at their cadence (`Parts`):
the loss of a batch, the recorder (history rows, progress), the checkpoints, the watch on
non-finite losses and the callbacks (history.csv, a user's: told of each row, checkpoint and
change of phase). A phase starts where the state is, so a resumed run takes up mid-phase.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import torch

from pinn.training.callbacks import CallbackList
from pinn.training.checkpointing import Checkpoints
from pinn.training.divergence import DivergenceWatch
from pinn.training.interrupts import Interrupts
from pinn.training.lbfgs import LBFGS
from pinn.training.recording import Recorder
from pinn.training.schedules import adam_schedule
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

    def row(self, step, phase, terms, loss, lr=math.nan, validate=True) -> None:
        """A history row, never after a non-finite loss; the callbacks see it."""
        self.watch.check()
        self.recorder.row(step, phase, terms, loss, lr, validate)
        self.callbacks.on_row(self.recorder.state.history[-1], self.recorder.state)

    def save(self, state: RunState, loss: torch.Tensor) -> None:
        """The checkpoint of `state`, never after a non-finite loss; the callbacks hear of it."""
        self.watch.check()
        if self.checkpoints.write(state, loss.item()):
            self.callbacks.on_checkpoint(Path(self.checkpoints.path), state.step, state)

    def enter(self, state: RunState, phase: str) -> None:
        """`state` goes into `phase` ("lbfgs" or "done"); the bar and the callbacks show it."""
        old, state.phase = state.phase, phase
        self.recorder.phase(phase)
        self.callbacks.on_phase(old, phase, state)

    def save_if_due(self, state: RunState, loss: torch.Tensor) -> None:
        if self.checkpoints.due(state.step):
            self.save(state, loss)

    def stop(self, state: RunState) -> None:
        """End the run on a signal (TrainingInterrupted); its checkpoint is written."""
        self.interrupts.stop(state.step, self.checkpoints.path)


def adam(state: RunState, parts: Parts) -> None:
    """Adam from `state.step` to `settings.steps`, the rate falling by the schedule."""
    settings = state.settings
    first, steps = state.step, settings.steps
    if first >= steps:
        return
    state.optimizer = _adam(state.parameters, settings.lr)
    state.scheduler = adam_schedule(state.optimizer, settings.schedule, steps, settings.lr_decay)
    if state.resumed.get("phase") == "adam":  # moments, step counts and the current rate
        state.optimizer.load_state_dict(state.resumed["optimizer"])
        state.scheduler.load_state_dict(state.resumed["scheduler"])
    every = settings.resample_every
    for step in range(first, steps):
        # Fresh points every `every` steps, then refined where the residual is large; the
        # first step uses the points drawn (or restored with the checkpoint).
        if step > first and every and step % every == 0:
            state.batch = state.points.draw()
        if step > first and state.points.refinement.due(step):
            state.batch = state.points.refine(parts.loss.residual_magnitude)
        # A checkpoint of this step holds the state at its start: resumed, it redoes the step.
        # A signal (Ctrl-C, SIGTERM) since the last step: this step's checkpoint, then stop.
        stopping = parts.interrupts.requested()
        checkpoint_due = stopping or parts.checkpoints.due(step)
        if checkpoint_due:
            state.mark_step_start()
        state.optimizer.zero_grad(set_to_none=True)
        terms, loss = parts.loss(state.batch, step=step)
        loss.backward()
        terms, loss = parts.loss.reduce(terms, loss, gradients=True)
        parts.watch.record(step, terms, loss)  # on the device: read at the next row or save
        if checkpoint_due:
            parts.save(state, loss)
        if stopping:
            parts.stop(state)
        if step % settings.log_every == 0:
            parts.row(step, "adam", terms, loss, lr=state.optimizer.param_groups[0]["lr"])
        state.optimizer.step()
        state.scheduler.step()
        parts.recorder.advance()
    parts.watch.check()


def lbfgs(state: RunState, parts: Parts) -> None:
    """L-BFGS for what is left of `settings.lbfgs_steps`, a history row per iteration, in
    chunks of `log_every` iterations with a checkpoint maybe between them; it stops early on
    a stall, a failed line search or the tolerance, saying why."""
    settings = state.settings
    total = settings.lbfgs_steps
    remaining = total - (state.step - settings.steps)
    if remaining <= 0:
        return
    parts.enter(state, "lbfgs")
    optimizer = LBFGS(
        state.parameters,
        history_size=50,
        stall_window=settings.lbfgs_stall_window,
        stall_decrease=settings.lbfgs_stall_decrease,
    )
    if state.resumed.get("phase") == "lbfgs":  # directions, step sizes, last gradient, ...
        optimizer.load_state_dict(state.resumed["optimizer"])
    state.optimizer, state.scheduler = optimizer, None

    def closure() -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        optimizer.zero_grad()
        terms, loss = parts.loss(state.batch)
        loss.backward()
        terms, loss = parts.loss.reduce(terms, loss, gradients=True)
        parts.watch.require_finite(terms, loss, state.step, "lbfgs")
        return loss, {name: value.detach() for name, value in terms.items()}

    last = {}

    def on_iteration(loss: torch.Tensor, terms: dict[str, torch.Tensor]) -> None:
        # The model is at this iteration's parameters and `loss` is theirs (no extra
        # evaluation: see LBFGS.iterate).
        parts.recorder.advance()
        step = state.step
        parts.row(step, "lbfgs", terms, loss, validate=step % settings.log_every == 0)
        last["loss"] = loss

    chunk = min(settings.log_every, total)
    while remaining > 0:
        tolerance = settings.lbfgs_tolerance
        done, why = optimizer.iterate(
            closure, min(chunk, remaining), on_iteration, tolerance, parts.interrupts.requested
        )
        remaining -= done
        if why is not None:
            parts.recorder.say(f"L-BFGS stopped after {total - remaining} iterations: {why}.")
            return
        if parts.interrupts.requested():  # a signal: the chunk ended after this iteration
            parts.save(state, last["loss"])
            parts.stop(state)
        parts.save_if_due(state, last["loss"])


def finish(state: RunState, parts: Parts) -> None:
    """The final loss at the final parameters, its history row and the last checkpoint."""
    terms, loss = parts.loss.reduce(*parts.loss(state.batch))
    parts.watch.require_finite(terms, loss, state.step, "final")
    parts.enter(state, "done")
    parts.row(state.step, "final", terms, loss)
    parts.save(state, loss)
    state.final_loss = loss.item()
    if parts.interrupts.requested():  # the run is saved as finished: resuming writes outputs
        parts.stop(state)


def _adam(parameters: list[torch.Tensor], lr: float) -> torch.optim.Adam:
    """Adam with the fused kernel (one call updates every parameter: less per-step overhead)
    where this torch and device have one (CPU since torch 2.4), else the default kernel."""
    try:
        return torch.optim.Adam(parameters, lr=lr, fused=True)
    except (RuntimeError, ValueError):  # "fused=True requires ... supported devices"
        return torch.optim.Adam(parameters, lr=lr)
