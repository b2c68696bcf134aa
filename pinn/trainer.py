"""The training loop: Adam with a decaying learning rate, then L-BFGS.

    points  = PointSampler(problem.domain, 2000, 400, "sobol", generator)
    result  = fit(problem, model, TrainSettings(steps=1000, lbfgs_steps=1000), points)

Every step's loss is checked before the parameters move: a NaN or inf loss stops the run with
`TrainingDiverged`, and the checkpoint on disk (written only from parameters whose loss was
finite) is the last good one.

A checkpoint holds the whole state of the run (see `_Run.checkpoint_state`), so

    result  = fit(problem, model, settings, points, resume_from="run/checkpoint.pt")

continues an interrupted run and ends bit for bit where the uninterrupted one would have.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import nn
from tqdm.auto import tqdm

from pinn.checkpoint import CheckpointError, load_checkpoint, save_checkpoint
from pinn.derivatives import check_pointwise
from pinn.engines import Engine
from pinn.errors import ConfigError, TrainingDiverged, require_int
from pinn.lbfgs import IterationLBFGS
from pinn.loss import Batch, loss_terms, weighted_sum
from pinn.problem import Problem
from pinn.sampler import PointSampler
from pinn.schedules import adam_schedule, check_schedule
from pinn.validation import Validator


@dataclass
class TrainSettings:
    """How to train. Every field has the same name under `trainer.` in the config.

    Attributes:
        steps: Adam steps (>= 0).
        lr: Adam's initial learning rate (> 0).
        lr_decay: the learning rate falls to lr * lr_decay by the last Adam step.
        schedule: how it falls, "exponential", "cosine" or "constant" (`pinn.schedules`).
        lbfgs_steps: L-BFGS iterations after Adam (>= 0), on the last points drawn.
        lbfgs_tolerance: stop L-BFGS after the first iteration that lowers the loss by less
            than this fraction of it (0 = run all `lbfgs_steps`); it also stops when its line
            search finds no lower loss.
        resample_every: Adam steps between redraws of the points; 0 draws them once.
        log_every: Adam steps between rows of the history (L-BFGS: one row per iteration), and
            steps between rel_l2 values, progress-bar updates and L-BFGS chunks.
        checkpoint_every: steps between checkpoints; 0 writes one only at the end.
        progress: show a tqdm progress bar.
    """

    steps: int = 1000
    lr: float = 1e-3
    lr_decay: float = 0.1
    schedule: str = "exponential"
    lbfgs_steps: int = 2000
    lbfgs_tolerance: float = 0.0
    resample_every: int = 0
    log_every: int = 100
    checkpoint_every: int = 500
    progress: bool = True

    def __post_init__(self) -> None:
        for key in ("steps", "lbfgs_steps", "resample_every", "checkpoint_every"):
            require_int(f"trainer.{key}", getattr(self, key), minimum=0)
        require_int("trainer.log_every", self.log_every, minimum=1)
        for key in ("lr", "lr_decay"):
            value = getattr(self, key)
            if not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
                raise ConfigError(f"trainer.{key} must be a number > 0, got {value!r}")
        check_schedule(self.schedule)
        tolerance = self.lbfgs_tolerance
        if not isinstance(tolerance, (int, float)) or not 0 <= tolerance < 1:
            raise ConfigError(f"trainer.lbfgs_tolerance must be in [0, 1), got {tolerance!r}")


@dataclass
class FitResult:
    """What `fit` returns: the history rows, the number of optimiser steps and the last loss.

    `resumed_from` is the step the run was resumed at (None for a run started afresh).
    """

    history: list[dict[str, float]] = field(default_factory=list)
    steps: int = 0
    final_loss: float = math.nan
    resumed_from: int | None = None


# What may differ between a run and its resumption: neither changes a single number.
_FREE_SETTINGS = ("progress", "checkpoint_every")


def fit(
    problem: Problem,
    model: nn.Module,
    settings: TrainSettings,
    points: PointSampler,
    weights: Mapping[str, float] | None = None,
    validator: Validator | None = None,
    checkpoint_path: str | Path | None = None,
    checkpoint_extra: Mapping[str, Any] | None = None,
    engine: str = "auto",
    resume_from: Mapping[str, Any] | str | Path | None = None,
) -> FitResult:
    """Train `model` on `problem` in place: Adam for `settings.steps`, then L-BFGS.

    Args:
        weights: loss weight per term name (unnamed terms count once).
        validator: when given, the history and progress bar carry the current rel_l2.
        checkpoint_path: where to write `checkpoint.pt`; None writes nothing.
        checkpoint_extra: more entries for the checkpoint (the resolved config, say).
        engine: the residual engine, "auto", "taylor", "autograd" or "functorch"
            (`pinn.engines`); the one that runs is logged once at the start.
        resume_from: a checkpoint (its path, or the dict `load_checkpoint` returns) of an
            earlier run with the same problem, model, settings, sampler and engine: training
            continues from its state and ends exactly where the uninterrupted run ends. `model`
            and `points` are overwritten with the saved state. A finished run's checkpoint
            only restores the final model and returns its result.

    Raises:
        TrainingDiverged: the loss became NaN or inf; the last good checkpoint is kept.
        CheckpointError, ConfigError: `resume_from` is unreadable or from another kind of run.
    """
    run = _Run(
        problem,
        model,
        settings,
        points,
        dict(weights or {}),
        validator,
        checkpoint_path,
        dict(checkpoint_extra or {}),
        Engine(engine, model),
    )
    if resume_from is not None:
        is_path = isinstance(resume_from, (str, Path))
        run.restore(load_checkpoint(resume_from) if is_path else resume_from)
    return run.train()


class _Run:
    """The state of one call to `fit`, so the loop below reads top to bottom.

    Besides the model, what a checkpoint must carry to continue: the phase ("adam", "lbfgs",
    "done"), the live optimiser (and scheduler), the current batch (via the sampler), the
    engine's plans, the history and the step count (`self.result`).
    """

    def __init__(self, problem, model, settings, points, weights, validator, path, extra, engine):
        self.problem, self.model, self.settings = problem, model, settings
        self.points, self.weights, self.validator = points, weights, validator
        self.checkpoint_path, self.checkpoint_extra = path, extra
        self.engine = engine
        self.result = FitResult()
        self.phase = "adam"
        self.batch: Batch | None = None
        self.optimizer: torch.optim.Optimizer | None = None
        self.scheduler: torch.optim.lr_scheduler.LRScheduler | None = None
        self.resumed: dict[str, Any] = {}  # the saved training state, when resuming
        self._last_saved: int | None = None
        self.started = time.perf_counter()

    def train(self) -> FitResult:
        if self.phase == "done":
            return self.result  # a finished run: nothing left to train
        if self.batch is None:  # a fresh run (a resumed one has its batch back)
            self.batch = self.points.draw()
        check_pointwise(self.model, self.batch.interior)
        self.bar = tqdm(
            total=self.settings.steps + self.settings.lbfgs_steps,
            initial=self.result.steps,
            disable=not self.settings.progress,
            desc=self.phase,
            dynamic_ncols=True,
        )
        try:
            if self.phase == "adam":
                self._adam()
            self._lbfgs()
            # The final loss, at the final parameters, and the checkpoint that goes with it.
            terms, loss = self._loss(self.batch, phase="final")
            self.phase = "done"
            self._log(self.result.steps, "final", terms, loss, force=True)
            self._checkpoint(loss)
        finally:
            self.bar.close()
        self.result.final_loss = loss.item()
        return self.result

    # ---- phases --------------------------------------------------------------------------

    def _adam(self) -> None:
        steps, first = self.settings.steps, self.result.steps
        if first >= steps:
            return
        self.optimizer = _adam(list(self.model.parameters()), self.settings.lr)
        self.scheduler = adam_schedule(
            self.optimizer, self.settings.schedule, steps, self.settings.lr_decay
        )
        if self.resumed.get("phase") == "adam":  # moments, step counts and the current rate
            self.optimizer.load_state_dict(self.resumed["optimizer"])
            self.scheduler.load_state_dict(self.resumed["scheduler"])
        every = self.settings.resample_every
        for step in range(first, steps):
            # Fresh points every `every` steps; the first step uses those drawn (or restored).
            if every and step > first and step % every == 0:
                self.batch = self.points.draw()
            self.optimizer.zero_grad(set_to_none=True)
            terms, loss = self._loss(self.batch, phase="adam")
            # The state at the start of this step, now known to give a finite loss.
            self._maybe_checkpoint(loss)
            self._log(step, "adam", terms, loss, lr=self.optimizer.param_groups[0]["lr"])
            loss.backward()
            self.optimizer.step()
            self.scheduler.step()
            self._advance()

    def _lbfgs(self) -> None:
        total = self.settings.lbfgs_steps
        remaining = total - (self.result.steps - self.settings.steps)
        if remaining <= 0:
            return
        self.phase = "lbfgs"
        self.bar.set_description("lbfgs")
        # Chunks of `log_every` iterations, a checkpoint maybe between them; a history row for
        # each iteration, with the loss of its parameters (no extra evaluation: `pinn.lbfgs`).
        every = self.settings.log_every
        chunk = min(every, total)
        optimizer = IterationLBFGS(
            self.model.parameters(),
            lr=1.0,
            max_iter=chunk,
            max_eval=3 * chunk,
            history_size=50,
            line_search_fn="strong_wolfe",
            tolerance_grad=0.0,
            tolerance_change=0.0,
        )
        if self.resumed.get("phase") == "lbfgs":  # directions, step sizes, last gradient, ...
            optimizer.load_state_dict(self.resumed["optimizer"])
        self.optimizer, self.scheduler = optimizer, None

        def closure() -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
            optimizer.zero_grad(set_to_none=True)
            terms, loss = self._loss(self.batch, phase="lbfgs")
            loss.backward()
            return loss, {name: value.detach() for name, value in terms.items()}

        last = {}

        def on_iteration(loss: torch.Tensor, terms: dict[str, torch.Tensor]) -> None:
            self._advance()  # the model is at this iteration's parameters, `loss` theirs
            step = self.result.steps
            self._log(step, "lbfgs", terms, loss, force=True, validate=step % every == 0)
            last["loss"] = loss

        while remaining > 0:
            tolerance = self.settings.lbfgs_tolerance
            done, why = optimizer.iterate(closure, min(chunk, remaining), on_iteration, tolerance)
            remaining -= done
            if why is not None:
                tqdm.write(f"L-BFGS stopped after {total - remaining} iterations: {why}.")
                return
            self._maybe_checkpoint(last["loss"])

    # ---- per step ------------------------------------------------------------------------

    def _loss(self, batch: Batch, phase: str) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
        terms = loss_terms(self.problem, self.model, batch, self.engine)
        loss = weighted_sum(terms, self.weights)
        if not torch.isfinite(loss):
            bad = [name for name, value in terms.items() if not torch.isfinite(value)]
            where = (
                f"written at step {self._last_saved}"
                if self._last_saved is not None
                else ("not written: no step finished with a finite loss")
            )
            raise TrainingDiverged(
                f"the loss became {loss.item()} at step {self.result.steps} ({phase}; "
                f"non-finite terms: {bad}). Training stopped; the last good checkpoint was "
                f"{where}. Try a lower trainer.lr, float64 (dtype=float64), or other weights."
            )
        return terms, loss

    def _advance(self, steps: int = 1) -> None:
        self.result.steps += steps
        self.bar.update(steps)

    def _log(self, step, phase, terms, loss, lr=math.nan, force=False, validate=True) -> None:
        every = self.settings.log_every
        if not force and step % every:
            return
        row = {
            "step": step,
            "phase": phase,
            "loss": loss.item(),
            "lr": lr,
            **{name: value.item() for name, value in terms.items()},
        }
        if self.validator is not None and validate:
            row["rel_l2"] = self.validator.errors(self.model)["rel_l2"]
        row["time_s"] = time.perf_counter() - self.started
        self.result.history.append(row)
        shown = {"loss": f"{row['loss']:.3e}"}
        if "rel_l2" in row:
            shown["rel_l2"] = f"{row['rel_l2']:.2e}"
        self.bar.set_postfix(shown, refresh=False)

    # ---- checkpoints ---------------------------------------------------------------------

    def _maybe_checkpoint(self, loss: torch.Tensor) -> None:
        every = self.settings.checkpoint_every
        if every and self.result.steps - (self._last_saved or 0) >= every:
            self._checkpoint(loss)

    def _checkpoint(self, loss: torch.Tensor) -> None:
        if self.checkpoint_path is None:
            return
        save_checkpoint(self.checkpoint_path, self.checkpoint_state(loss))
        self._last_saved = self.result.steps

    def checkpoint_state(self, loss: torch.Tensor) -> dict[str, Any]:
        """Everything the run needs to continue, as tensors, numbers, strings, lists and dicts.

        model: the parameters at the start of step `step` (Adam), or after `step` steps
        (L-BFGS, final); loss: theirs; history: the rows logged before this state. training:
        phase ("adam", "lbfgs" or "done"); optimizer (Adam's moments and step counts, or
        L-BFGS's directions, step, last gradient and counters) and scheduler (the decaying
        rate, Adam only); sampler (generator state before the current batch was drawn, and that
        batch); engine (its plans); settings (to check a resumption against); time_s.
        """
        return {
            "model": self.model.state_dict(),
            "step": self.result.steps,
            "loss": loss.item(),
            "history": self.result.history,
            "training": {
                "phase": self.phase,
                "optimizer": self.optimizer.state_dict() if self.optimizer else None,
                "scheduler": self.scheduler.state_dict() if self.scheduler else None,
                "sampler": self.points.state_dict(),
                "engine": self.engine.state_dict(),
                "settings": _shaping(self.settings),
                "time_s": time.perf_counter() - self.started,
            },
            **self.checkpoint_extra,
        }

    def restore(self, state: Mapping[str, Any]) -> None:
        """Take up the run `state` (from `checkpoint_state`) left off."""
        training = state.get("training")
        if not isinstance(training, Mapping):
            raise CheckpointError(
                "the checkpoint holds no training state (written before pinn could resume), "
                "so the run cannot be continued from it"
            )
        if training["settings"] != _shaping(self.settings):
            raise ConfigError(
                f"the checkpoint was trained with other settings, {training['settings']}, than "
                f"these, {_shaping(self.settings)}: a resumed run keeps its settings"
            )
        try:
            self.model.load_state_dict(state["model"])
        except RuntimeError as error:
            raise CheckpointError(f"the checkpoint's model is not this model: {error}") from error
        self.engine.load_state_dict(training["engine"])
        self.batch = self.points.load_state_dict(training["sampler"])
        self.phase, self.resumed = training["phase"], dict(training)
        self.result = FitResult(list(state["history"]), state["step"], resumed_from=state["step"])
        if self.phase == "done":
            self.result.final_loss = state["loss"]
        self._last_saved = state["step"]
        self.started -= training["time_s"]  # history times go on from where they stopped


def _shaping(settings: TrainSettings) -> dict[str, Any]:
    """The settings that shape the result: all but progress and checkpoint_every."""
    return {k: v for k, v in vars(settings).items() if k not in _FREE_SETTINGS}


def _adam(parameters: list[torch.Tensor], lr: float) -> torch.optim.Adam:
    """Adam with the fused kernel (one call updates every parameter: less per-step overhead)
    where this torch and device have one (CPU since torch 2.4), else the default kernel."""
    try:
        return torch.optim.Adam(parameters, lr=lr, fused=True)
    except (RuntimeError, ValueError):  # "fused=True requires ... supported devices"
        return torch.optim.Adam(parameters, lr=lr)
