"""The training loop: Adam with a decaying learning rate, then L-BFGS.

    points  = PointSampler(problem.domain, 2000, 400, "sobol", generator)
    result  = fit(problem, model, TrainSettings(steps=1000, lbfgs_steps=1000), points)

Every step's loss is checked: a NaN or inf loss stops the run with `TrainingDiverged`, and the
checkpoint on disk (written only from parameters whose loss, and every loss before, was finite)
is the last good one. So that an Adam step never waits for the device, its check is recorded
on the device and read at the next history row or checkpoint (L-BFGS checks at once); the
model in memory may by then hold the non-finite parameters that followed.

`settings.compile` compiles each step's loss with torch.compile (`pinn.compiling`) from the
second step on, once the first has recorded what each residual asks for.

Inside a process group (torchrun, `pinn.training.distributed`), `fit` trains data-parallel: each
process its own points, the gradients, loss and terms averaged over the processes after every
backward pass; only rank 0 writes the checkpoint and history and shows progress.

A checkpoint holds the whole state of the run (see `_Run.checkpoint_state`), so

    result  = fit(problem, model, settings, points, resume_from="run/checkpoint.pt")

continues an interrupted run and ends bit for bit where the uninterrupted one would have.

A problem's unknown coefficients (`Problem.unknowns`, an inverse problem) train with the
network: both optimisers get them, the checkpoint holds them and every history row has a column
with each one's current value.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import nn
from tqdm.auto import tqdm

from pinn.compiling import CompiledLoss, compile_decision
from pinn.derivatives import check_pointwise
from pinn.derivatives.engines import Engine
from pinn.derivatives.stochastic import LaplacianEstimator
from pinn.errors import CheckpointError, ConfigError, TrainingDiverged
from pinn.geometry import Batch, PointSampler, residual_magnitude
from pinn.loss import loss_terms
from pinn.problem import Problem
from pinn.training.checkpoint import load_checkpoint, save_checkpoint
from pinn.training.distributed import World
from pinn.training.history import HistoryCSV
from pinn.training.lbfgs import LBFGS
from pinn.training.schedules import adam_schedule
from pinn.training.settings import TrainSettings, shaping
from pinn.training.weighting import LossWeights
from pinn.validation import Validator

log = logging.getLogger("pinn")


@dataclass
class FitResult:
    """What `fit` returns: the history rows, the number of optimiser steps and the last loss.

    `resumed_from` is the step the run was resumed at (None for a run started afresh).
    """

    history: list[dict[str, float]] = field(default_factory=list)
    steps: int = 0
    final_loss: float = math.nan
    resumed_from: int | None = None


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
    history_path: str | Path | None = None,
    estimator: LaplacianEstimator | None = None,
    world: World | None = None,
) -> FitResult:
    """Train `model` on `problem` in place: Adam for `settings.steps`, then L-BFGS.

    Args:
        weights: loss weight per term name (unnamed terms count once).
        validator: when given, the history and progress bar carry the current rel_l2.
        checkpoint_path: where to write `checkpoint.pt`; None writes nothing.
        checkpoint_extra: more entries for the checkpoint (the resolved config, say).
        engine: the residual engine, "auto", "taylor", "autograd" or "functorch"
            (`pinn.derivatives.engines`); the one that runs is logged once at the start.
        resume_from: a checkpoint (its path, or the dict `load_checkpoint` returns) of an
            earlier run with the same problem, model, settings, sampler and engine: training
            continues from its state and ends exactly where the uninterrupted run ends. `model`,
            `points` and the problem's unknowns are overwritten with the saved state. A
            finished run's checkpoint only restores the final model and returns its result.
        history_path: where to write history.csv as the run goes (a row at each log step,
            the rows before a resumed state included); None writes nothing.
        estimator: estimate every residual's `u.laplacian()` from random directions
            (`LaplacianEstimator`) instead of computing it exactly. The loss is then random, so
            L-BFGS (which needs a deterministic loss) is refused: Adam only.
        world: the processes training this model together (`World.current()`, the default,
            reads torch.distributed's default group: one process when there is none). Every
            process calls `fit` with the same arguments but its own `points` (its generator
            seeded apart, `rank_seed`); the losses in the history are averages over the
            processes, and only rank 0 writes `checkpoint_path` and `history_path` and
            validates (the other ranks' rows have no rel_l2).

    A problem that declares unknowns trains them too: those attached to it (by
    `problem.attach_unknowns` or an earlier fit), or else fresh ones at their declared guesses
    in the model's dtype and on its device. `problem.unknown(name)` then holds the learned value.

    Raises:
        TrainingDiverged: the loss became NaN or inf; the last good checkpoint is kept.
        CheckpointError, ConfigError: `resume_from` is unreadable or from another kind of run.
    """
    if estimator is not None:
        estimator.check_dimension(len(problem.inputs))
        if settings.lbfgs_steps:
            raise ConfigError(
                "a stochastic Laplacian makes the loss random, and L-BFGS's line search needs "
                "a deterministic one: set trainer.lbfgs_steps=0 (Adam only), or "
                "laplacian.method=exact"
            )
    world = world or World.current()
    run = _Run(
        problem,
        model,
        problem.unknowns_for(*_dtype_and_device(model, points)),
        settings,
        points,
        LossWeights(
            weights, settings.weighting, settings.weighting_every, settings.weighting_alpha
        ),
        validator,
        checkpoint_path,
        dict(checkpoint_extra or {}),
        Engine(engine, model, _probe(problem, model, points), estimator=estimator),
        HistoryCSV(history_path) if history_path is not None and world.is_main else None,
        world,
    )
    if resume_from is not None:
        is_path = isinstance(resume_from, (str, Path))
        run.restore(load_checkpoint(resume_from) if is_path else resume_from)
    return run.train()


class _Run:
    """The state of one call to `fit`, so the loop below reads top to bottom.

    Besides the model and the unknowns, what a checkpoint must carry to continue: the phase
    ("adam", "lbfgs", "done"), the live optimiser (and scheduler), the current batch (via the
    sampler), the engine's plans, the loss weights, the history and the step count
    (`self.result`).
    """

    def __init__(
        self,
        problem,
        model,
        unknowns,
        settings,
        points,
        weights,
        validator,
        path,
        extra,
        engine,
        history_file,
        world,
    ):
        self.problem, self.model, self.settings = problem, model, settings
        self.unknowns = unknowns
        # What both optimisers train: the network's parameters, then the unknowns.
        self.parameters = [*model.parameters(), *unknowns.parameters()]
        self.points, self.weights, self.validator = points, weights, validator
        self.checkpoint_path, self.checkpoint_extra = path, extra
        self.engine, self.history_file, self.world = engine, history_file, world
        self.result = FitResult()
        self.phase = "adam"
        self.batch: Batch | None = None
        self.optimizer: torch.optim.Optimizer | LBFGS | None = None
        self.scheduler: torch.optim.lr_scheduler.LRScheduler | None = None
        self.resumed: dict[str, Any] = {}  # the saved training state, when resuming
        # Of this Adam step: a checkpoint at its start redoes it on resume.
        self._weights_at_start: dict[str, Any] = weights.state_dict()
        self._engine_at_start: dict[str, Any] | None = None
        self._last_saved: int | None = None
        self.started = time.perf_counter()
        # The compiled loss, once decided (after the first step has planned the fields).
        self._compile_decided = settings.compile == "false"
        self._compiled: CompiledLoss | None = None
        # On the device: the first Adam step whose loss was not finite (-1: none yet), and that
        # loss and its terms, read only where a row or checkpoint is written.
        self._first_bad: torch.Tensor | None = None
        self._bad_values: torch.Tensor | None = None
        self._watched: list[str] = []  # the names of the terms after the loss in _bad_values

    def train(self) -> FitResult:
        if self.phase == "done":
            return self.result  # a finished run: nothing left to train
        if self.batch is None:  # a fresh run (a resumed one has its batch back)
            self.batch = self.points.draw()
        check_pointwise(self.model, self.batch.interior)
        self.world.broadcast_(self.parameters)  # every process starts from rank 0's
        self.bar = tqdm(
            total=self.settings.steps + self.settings.lbfgs_steps,
            initial=self.result.steps,
            disable=not (self.settings.progress and self.world.is_main),
            desc=self.phase,
            dynamic_ncols=True,
        )
        try:
            if self.phase == "adam":
                self._adam()
            self._lbfgs()
            # The final loss, at the final parameters, and the checkpoint that goes with it.
            terms, loss = self._reduce(*self._loss(self.batch, phase="final"))
            self._require_finite(terms, loss, self.result.steps, "final")
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
        self.optimizer = _adam(self.parameters, self.settings.lr)
        self.scheduler = adam_schedule(
            self.optimizer, self.settings.schedule, steps, self.settings.lr_decay
        )
        if self.resumed.get("phase") == "adam":  # moments, step counts and the current rate
            self.optimizer.load_state_dict(self.resumed["optimizer"])
            self.scheduler.load_state_dict(self.resumed["scheduler"])
        every = self.settings.resample_every
        for step in range(first, steps):
            # Fresh points every `every` steps, then refined where the residual is large; the
            # first step uses the points drawn (or restored with the checkpoint).
            if step > first and every and step % every == 0:
                self.batch = self.points.draw()
            if step > first and self.points.refinement.due(step):
                self.batch = self.points.refine(self._residual_magnitude)
            self.optimizer.zero_grad(set_to_none=True)
            terms, loss = self._loss(self.batch, phase="adam", step=step)
            loss.backward()
            terms, loss = self._reduce(terms, loss, gradients=True)
            self._watch(step, terms, loss)
            # The state at the start of this step (written only if its loss is finite).
            self._maybe_checkpoint(loss)
            self._log(step, "adam", terms, loss, lr=self.optimizer.param_groups[0]["lr"])
            self.optimizer.step()
            self.scheduler.step()
            self._advance()
        self._check_watch()

    def _lbfgs(self) -> None:
        total = self.settings.lbfgs_steps
        remaining = total - (self.result.steps - self.settings.steps)
        if remaining <= 0:
            return
        self.phase = "lbfgs"
        self.bar.set_description("lbfgs")
        # Chunks of `log_every` iterations, a checkpoint maybe between them; a history row for
        # each iteration, with the loss of its parameters (no extra evaluation: see LBFGS).
        every = self.settings.log_every
        chunk = min(every, total)
        optimizer = LBFGS(
            self.parameters,
            history_size=50,
            stall_window=self.settings.lbfgs_stall_window,
            stall_decrease=self.settings.lbfgs_stall_decrease,
        )
        if self.resumed.get("phase") == "lbfgs":  # directions, step sizes, last gradient, ...
            optimizer.load_state_dict(self.resumed["optimizer"])
        self.optimizer, self.scheduler = optimizer, None

        def closure() -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
            optimizer.zero_grad()
            terms, loss = self._loss(self.batch, phase="lbfgs")
            loss.backward()
            terms, loss = self._reduce(terms, loss, gradients=True)
            self._require_finite(terms, loss, self.result.steps, "lbfgs")
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
                if self.world.is_main:
                    tqdm.write(f"L-BFGS stopped after {total - remaining} iterations: {why}.")
                return
            self._maybe_checkpoint(last["loss"])

    # ---- per step ------------------------------------------------------------------------

    def _loss(
        self, batch: Batch, phase: str, step: int | None = None
    ) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
        """This process's terms and weighted loss; at an Adam `step` the weights may move."""
        if step is not None and self.checkpoint_path is not None and self._checkpoint_due():
            # The state at this step's start, for the checkpoint written after the loss: it
            # redoes the step on resume (the estimator's generator before the step draws from
            # it, the weights before the update).
            self._engine_at_start = self.engine.state_dict()
            self._weights_at_start = self.weights.state_dict()
        self._decide_compile()
        if self._compiled is not None:
            terms, loss = self._compiled(batch)
        else:
            terms = loss_terms(self.problem, self.model, batch, self.engine)
            if step is not None:
                self.weights.update(terms, self.model.parameters(), step, self.world.average_)
            loss = self.weights.total(terms)
        return terms, loss

    def _reduce(
        self, terms: dict[str, torch.Tensor], loss: torch.Tensor, gradients: bool = False
    ) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
        """The terms and loss over all processes (`World.average_loss`), with `gradients`
        the parameters' gradients too. Outside Adam the caller checks the loss at once; an
        Adam step's check is recorded on the device (`_watch`), read at the next row."""
        return self.world.average_loss(terms, loss, self.parameters if gradients else ())

    def _eager_loss(self, batch: Batch) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
        """What `CompiledLoss` compiles: the terms and their weighted sum (fixed weights)."""
        terms = loss_terms(self.problem, self.model, batch, self.engine)
        return terms, self.weights.total(terms)

    def _decide_compile(self) -> None:
        """Once the first step has planned every field: compile the loss, or not, and say why."""
        if self._compile_decided or not self.engine.recorded:
            return  # decided, or before the first fields (which record what is asked)
        self._compile_decided = True
        blockers = self.engine.compile_blockers()
        if self.weights.method != "fixed":
            blockers.append(f"the loss weights adapt (trainer.weighting={self.weights.method})")
        if self.points.refinement.method == "rar":
            blockers.append("RAR grows the batch (each new shape would compile anew)")
        device = self.batch.interior.device
        compiled, why = compile_decision(
            self.settings.compile, blockers, self.settings.steps, device
        )
        log.info("training step: %s (%s)", "compiled" if compiled else "eager", why)
        if compiled:
            self._compiled = CompiledLoss(self._eager_loss, self.settings.compile == "true")

    def _watch(self, step: int, terms: dict[str, torch.Tensor], loss: torch.Tensor) -> None:
        """Record, on the device (no wait), whether this Adam step's loss is the first bad one."""
        values = torch.stack([loss.detach(), *(value.detach() for value in terms.values())])
        if self._first_bad is None:
            self._watched = list(terms)
            self._first_bad = torch.full((), -1, dtype=torch.long, device=loss.device)
            self._bad_values = torch.zeros_like(values)
        first = (self._first_bad < 0) & ~torch.isfinite(values[0])
        self._first_bad = torch.where(first, step, self._first_bad)
        self._bad_values = torch.where(first, values, self._bad_values)

    def _check_watch(self) -> None:
        """Raise if an Adam step since the last check had a non-finite loss."""
        if self._first_bad is None or int(self._first_bad) < 0:
            return
        loss, *terms = self._bad_values.tolist()
        bad = [name for name, value in zip(self._watched, terms) if not math.isfinite(value)]
        self._diverged(loss, bad, int(self._first_bad), "adam")

    def _require_finite(
        self, terms: dict[str, torch.Tensor], loss: torch.Tensor, step: int, phase: str
    ) -> None:
        """Raise at once if `loss` is not finite (L-BFGS and the final loss)."""
        if not torch.isfinite(loss):
            bad = [name for name, value in terms.items() if not torch.isfinite(value)]
            self._diverged(loss.item(), bad, step, phase)

    def _diverged(self, loss: float, bad: list[str], step: int, phase: str) -> None:
        """Stop the run: the loss at `step` was `loss`, with the non-finite terms `bad`."""
        where = (
            f"written at step {self._last_saved}"
            if self._last_saved is not None
            else ("not written: no step finished with a finite loss")
        )
        raise TrainingDiverged(
            f"the loss became {loss} at step {step} ({phase}; "
            f"non-finite terms: {bad}). Training stopped; the last good checkpoint was "
            f"{where}. Try a lower trainer.lr, float64 (dtype=float64), or other weights."
        )

    def _residual_magnitude(self, x: torch.Tensor) -> torch.Tensor:
        """(M,) |PDE residual| at the (M, d) points, for refinement (systems: root sum square)."""
        field = self.engine.field(x, self.problem.inputs, self.problem.outputs, "interior")
        return residual_magnitude(self.problem.residual(field.x, field))

    def _advance(self, steps: int = 1) -> None:
        self.result.steps += steps
        self.bar.update(steps)

    def _log(self, step, phase, terms, loss, lr=math.nan, force=False, validate=True) -> None:
        every = self.settings.log_every
        if not force and step % every:
            return
        self._check_watch()  # no row after a non-finite loss
        row = {
            "step": step,
            "phase": phase,
            "loss": loss.item(),
            "lr": lr,
            **{name: value.item() for name, value in terms.items()},
        }
        unknowns = self.unknowns.values()  # a column for each, beside the loss terms
        if set(unknowns) & set(row):
            raise ConfigError(
                f"unknown(s) {sorted(set(unknowns) & set(row))} share their name with a loss "
                "term; rename one or the other"
            )
        row.update(unknowns)
        if self.weights.method != "fixed":
            row.update(self.weights.row())
        if self.validator is not None and validate and self.world.is_main:
            row["rel_l2"] = self.validator.errors(self.model)["rel_l2"]
        row["time_s"] = time.perf_counter() - self.started
        self.result.history.append(row)
        if self.history_file is not None:
            self.history_file.update(self.result.history)
        shown = {"loss": f"{row['loss']:.3e}"}
        if "rel_l2" in row:
            shown["rel_l2"] = f"{row['rel_l2']:.2e}"
        self.bar.set_postfix(shown, refresh=False)

    # ---- checkpoints ---------------------------------------------------------------------

    def _checkpoint_due(self) -> bool:
        every = self.settings.checkpoint_every
        return bool(every) and self.result.steps - (self._last_saved or 0) >= every

    def _maybe_checkpoint(self, loss: torch.Tensor) -> None:
        if self._checkpoint_due():
            self._checkpoint(loss)

    def _checkpoint(self, loss: torch.Tensor) -> None:
        if self.checkpoint_path is None:
            return
        self._check_watch()  # never a checkpoint after a non-finite loss
        state = self.checkpoint_state(loss)  # on every process: it gathers each one's part
        if self.world.is_main:
            save_checkpoint(self.checkpoint_path, state)
        self._last_saved = self.result.steps

    def checkpoint_state(self, loss: torch.Tensor) -> dict[str, Any]:
        """Everything the run needs to continue, as tensors, numbers, strings, lists and dicts.

        model: the parameters at the start of step `step` (Adam), or after `step` steps
        (L-BFGS, final); loss: theirs; history: the rows logged before this state. training:
        phase ("adam", "lbfgs" or "done"); optimizer (Adam's moments and step counts, or
        L-BFGS's curvature memory and counters) and scheduler (the decaying
        rate, Adam only); sampler (generator state before the current batch was drawn, and that
        batch, and refinement state); engine (its plans); weights (the loss weights this step
        started with); settings (to check a resumption against); time_s; processes (how many
        trained together) and, for more than one, ranks: each process's sampler and engine,
        in rank order (sampler and engine themselves are rank 0's).
        unknowns: {name: 0-d tensor} of the problem's unknowns ({} without any).

        Called on every process at the same step: it gathers each one's part.
        """
        engine = (
            self._engine_at_start
            if self.phase == "adam" and self._engine_at_start is not None
            else self.engine.state_dict()
        )
        own = {"sampler": self.points.state_dict(), "engine": engine}
        per_process = {"ranks": self.world.gather(own)} if self.world.size > 1 else {}
        return {
            "model": self.model.state_dict(),
            "unknowns": self.unknowns.state(),
            "step": self.result.steps,
            "loss": loss.item(),
            "history": self.result.history,
            "training": {
                "phase": self.phase,
                "optimizer": self.optimizer.state_dict() if self.optimizer else None,
                "scheduler": self.scheduler.state_dict() if self.scheduler else None,
                **own,
                "weights": (
                    self._weights_at_start if self.phase == "adam" else self.weights.state_dict()
                ),
                "settings": shaping(self.settings),
                "time_s": time.perf_counter() - self.started,
                "processes": self.world.size,
                **per_process,
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
        if training["settings"] != shaping(self.settings):
            raise ConfigError(
                f"the checkpoint was trained with other settings, {training['settings']}, than "
                f"these, {shaping(self.settings)}: a resumed run keeps its settings"
            )
        processes = training.get("processes", 1)  # absent before distributed training
        if processes != self.world.size:
            raise ConfigError(
                f"the checkpoint was written by a run of {processes} process(es), this one has "
                f"{self.world.size}: resume it with as many (torchrun --nproc_per_node="
                f"{processes}, or no torchrun for 1), since each process's points continue "
                "its own generator"
            )
        own = training["ranks"][self.world.rank] if processes > 1 else training
        try:
            self.model.load_state_dict(state["model"])
        except RuntimeError as error:
            raise CheckpointError(f"the checkpoint's model is not this model: {error}") from error
        self.unknowns.load_state(state.get("unknowns", {}))
        self.engine.load_state_dict(own["engine"])
        if "weights" in training:  # absent from checkpoints written before adaptive weights
            self.weights.load_state_dict(training["weights"])
        self.batch = self.points.load_state_dict(own["sampler"])
        self.phase, self.resumed = training["phase"], dict(training)
        self.result = FitResult(list(state["history"]), state["step"], resumed_from=state["step"])
        if self.phase == "done":
            self.result.final_loss = state["loss"]
        self._last_saved = state["step"]
        self.started -= training["time_s"]  # history times go on from where they stopped


def _probe(problem: Problem, model: nn.Module, points: PointSampler) -> torch.Tensor:
    """Two points of the domain's bounding box, for tracing the model (draws nothing)."""
    dtype, device = _dtype_and_device(model, points)
    domain = problem.domain
    lower, upper = (
        torch.as_tensor(c, dtype=dtype, device=device) for c in (domain.lower, domain.upper)
    )
    return torch.stack([lower + (upper - lower) / 3, lower + 2 * (upper - lower) / 3])


def _dtype_and_device(model: nn.Module, points: PointSampler) -> tuple[torch.dtype, torch.device]:
    """Where the model's parameters live (the sampler's dtype and device for a model without)."""
    reference = next(model.parameters(), None)
    if reference is None:
        return points.dtype, torch.device(points.device)
    return reference.dtype, reference.device


def _adam(parameters: list[torch.Tensor], lr: float) -> torch.optim.Adam:
    """Adam with the fused kernel (one call updates every parameter: less per-step overhead)
    where this torch and device have one (CPU since torch 2.4), else the default kernel."""
    try:
        return torch.optim.Adam(parameters, lr=lr, fused=True)
    except (RuntimeError, ValueError):  # "fused=True requires ... supported devices"
        return torch.optim.Adam(parameters, lr=lr)
