"""The training loop: Adam with an exponential learning-rate decay, then L-BFGS.

    points  = PointSampler(problem.domain, 2000, 400, "sobol", generator)
    result  = fit(problem, model, TrainSettings(steps=1000, lbfgs_steps=1000), points)

Every step's loss is checked before the parameters move: a NaN or inf loss stops the run with
`TrainingDiverged`, and the checkpoint on disk (written only from parameters whose loss was
finite) is the last good one.
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

from pinn.checkpoint import save_checkpoint
from pinn.derivatives import check_pointwise
from pinn.domain import Box
from pinn.engines import Engine
from pinn.errors import ConfigError, TrainingDiverged
from pinn.loss import Batch, loss_terms, weighted_sum
from pinn.problem import Problem
from pinn.validation import Validator


@dataclass
class TrainSettings:
    """How to train. Every field has the same name under `trainer.` in the config.

    Attributes:
        steps: Adam steps (>= 0).
        lr: Adam's initial learning rate (> 0).
        lr_decay: the learning rate falls exponentially to lr * lr_decay by the last Adam step.
        lbfgs_steps: L-BFGS iterations after Adam (>= 0), on the last points drawn.
        resample_every: Adam steps between redraws of the points; 0 draws them once.
        log_every: steps between rows of the history (and progress-bar updates).
        checkpoint_every: steps between checkpoints; 0 writes one only at the end.
        progress: show a tqdm progress bar.
    """

    steps: int = 1000
    lr: float = 1e-3
    lr_decay: float = 0.1
    lbfgs_steps: int = 2000
    resample_every: int = 0
    log_every: int = 100
    checkpoint_every: int = 500
    progress: bool = True

    def __post_init__(self) -> None:
        for key in ("steps", "lbfgs_steps", "resample_every", "checkpoint_every"):
            _require_int(key, getattr(self, key), minimum=0)
        _require_int("log_every", self.log_every, minimum=1)
        for key in ("lr", "lr_decay"):
            value = getattr(self, key)
            if not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
                raise ConfigError(f"trainer.{key} must be a number > 0, got {value!r}")


class PointSampler:
    """Draws the interior and boundary points of a training step from one seeded generator.

    Shapes: `draw().interior` is (n_interior, d); `draw().boundary.points` is (n_boundary, d).
    """

    def __init__(
        self,
        domain: Box,
        n_interior: int,
        n_boundary: int,
        method: str,
        generator: torch.Generator,
        dtype: torch.dtype = torch.float32,
        device: str | torch.device = "cpu",
    ):
        _require_int("problem.n_interior", n_interior, minimum=1, prefix="")
        _require_int("problem.n_boundary", n_boundary, minimum=1, prefix="")
        self.domain, self.method, self.generator = domain, method, generator
        self.n_interior, self.n_boundary = n_interior, n_boundary
        self.dtype, self.device = dtype, device

    def draw(self) -> Batch:
        options = dict(method=self.method, dtype=self.dtype, device=self.device)
        interior = self.domain.sample_interior(self.n_interior, self.generator, **options)
        boundary = self.domain.sample_boundary(self.n_boundary, self.generator, **options)
        return Batch(interior, boundary)


@dataclass
class FitResult:
    """What `fit` returns: the history rows, the number of optimiser steps and the last loss."""

    history: list[dict[str, float]] = field(default_factory=list)
    steps: int = 0
    final_loss: float = math.nan


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
) -> FitResult:
    """Train `model` on `problem` in place: Adam for `settings.steps`, then L-BFGS.

    Args:
        weights: loss weight per term name (unnamed terms count once).
        validator: when given, the history and progress bar carry the current rel_l2.
        checkpoint_path: where to write `checkpoint.pt`; None writes nothing.
        checkpoint_extra: more entries for the checkpoint (the resolved config, say).
        engine: the residual engine, "auto", "taylor", "autograd" or "functorch"
            (`pinn.engines`); the one that runs is logged once at the start.

    Raises:
        TrainingDiverged: the loss became NaN or inf; the last good checkpoint is kept.
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
    return run.train()


class _Run:
    """The state of one call to `fit`, so the loop below reads top to bottom."""

    def __init__(self, problem, model, settings, points, weights, validator, path, extra, engine):
        self.problem, self.model, self.settings = problem, model, settings
        self.points, self.weights, self.validator = points, weights, validator
        self.checkpoint_path, self.checkpoint_extra = path, extra
        self.engine = engine
        self.result = FitResult()
        self._last_saved: int | None = None
        self.started = time.perf_counter()
        self.bar = tqdm(
            total=settings.steps + settings.lbfgs_steps,
            disable=not settings.progress,
            desc="adam",
            dynamic_ncols=True,
        )

    def train(self) -> FitResult:
        batch = self.points.draw()
        check_pointwise(self.model, batch.interior)
        try:
            batch = self._adam(batch)
            self._lbfgs(batch)
            # The final loss, at the final parameters, and the checkpoint that goes with it.
            terms, loss = self._loss(batch, phase="final")
            self._log(self.result.steps, "final", terms, loss, force=True)
            self._checkpoint(loss)
        finally:
            self.bar.close()
        self.result.final_loss = loss.item()
        return self.result

    # ---- phases --------------------------------------------------------------------------

    def _adam(self, batch: Batch) -> Batch:
        steps, parameters = self.settings.steps, list(self.model.parameters())
        if steps == 0:
            return batch
        # The fused kernel updates every parameter in one call: less per-step overhead.
        optimizer = torch.optim.Adam(parameters, lr=self.settings.lr, fused=True)
        decay = torch.optim.lr_scheduler.ExponentialLR(
            optimizer, gamma=self.settings.lr_decay ** (1 / steps)
        )
        every = self.settings.resample_every
        for step in range(steps):
            if every and step and step % every == 0:
                batch = self.points.draw()
            optimizer.zero_grad(set_to_none=True)
            terms, loss = self._loss(batch, phase="adam")
            # The parameters that gave this finite loss are the ones worth keeping.
            self._log(step, "adam", terms, loss, lr=optimizer.param_groups[0]["lr"])
            self._maybe_checkpoint(loss)
            loss.backward()
            optimizer.step()
            decay.step()
            self._advance()
        return batch

    def _lbfgs(self, batch: Batch) -> None:
        remaining = self.settings.lbfgs_steps
        if remaining == 0:
            return
        self.bar.set_description("lbfgs")
        chunk = min(self.settings.log_every, remaining)
        optimizer = torch.optim.LBFGS(
            self.model.parameters(),
            lr=1.0,
            max_iter=chunk,
            max_eval=3 * chunk,
            history_size=50,
            line_search_fn="strong_wolfe",
            tolerance_grad=0.0,
            tolerance_change=0.0,
        )
        latest: dict[str, Any] = {}

        def closure() -> torch.Tensor:
            optimizer.zero_grad(set_to_none=True)
            terms, loss = self._loss(batch, phase="lbfgs")
            loss.backward()
            latest.update(terms=terms, loss=loss)
            return loss

        while remaining > 0:
            optimizer.param_groups[0]["max_iter"] = min(chunk, remaining)
            before = _lbfgs_iterations(optimizer)
            optimizer.step(closure)
            done = _lbfgs_iterations(optimizer) - before
            if done == 0:
                tqdm.write(
                    f"L-BFGS stopped after {self.settings.lbfgs_steps - remaining} "
                    "iterations: the line search found no lower loss."
                )
                return
            remaining -= done
            self._advance(done)
            self._log(self.result.steps, "lbfgs", latest["terms"], latest["loss"], force=True)
            self._maybe_checkpoint(latest["loss"])

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

    def _log(self, step, phase, terms, loss, lr=math.nan, force=False) -> None:
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
        if self.validator is not None:
            row["rel_l2"] = self.validator.errors(self.model)["rel_l2"]
        row["time_s"] = time.perf_counter() - self.started
        self.result.history.append(row)
        shown = {"loss": f"{row['loss']:.3e}"}
        if "rel_l2" in row:
            shown["rel_l2"] = f"{row['rel_l2']:.2e}"
        self.bar.set_postfix(shown, refresh=False)

    def _maybe_checkpoint(self, loss: torch.Tensor) -> None:
        every = self.settings.checkpoint_every
        if every and self.result.steps - (self._last_saved or 0) >= every:
            self._checkpoint(loss)

    def _checkpoint(self, loss: torch.Tensor) -> None:
        if self.checkpoint_path is None:
            return
        state = {
            "model": self.model.state_dict(),
            "step": self.result.steps,
            "loss": loss.item(),
            "history": self.result.history,
            **self.checkpoint_extra,
        }
        save_checkpoint(self.checkpoint_path, state)
        self._last_saved = self.result.steps


def _lbfgs_iterations(optimizer: torch.optim.LBFGS) -> int:
    state = optimizer.state[optimizer.param_groups[0]["params"][0]]
    return int(state.get("n_iter", 0))


def _require_int(key: str, value: Any, minimum: int, prefix: str = "trainer.") -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise ConfigError(f"{prefix}{key} must be a whole number >= {minimum}, got {value!r}")
