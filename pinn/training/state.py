"""`RunState`: the state of one training run in one place, and exactly what its checkpoint holds.

    state = RunState(model, unknowns, points, engine, weights, settings)
    saved = state.checkpoint(loss)     # tensors, numbers, strings, lists and dicts only
    state.restore(saved)               # take up where `saved` left off

The live objects (model, optimiser, sampler, engine, loss weights) keep their own state; a
checkpoint is theirs plus the run's counters. Under data-parallel training every process
holds its own sampler and engine: `checkpoint` gathers them, and `restore` takes this rank's.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from pinn.derivatives.engines import Engine
from pinn.errors import CheckpointError, ConfigError
from pinn.geometry import Batch, PointSampler
from pinn.problem.causal import CausalWeighting
from pinn.problem.point_weights import PointWeights
from pinn.problem.unknowns import Unknowns
from pinn.training.budgets import check_budget_changes, without_budgets
from pinn.training.checkpoints import check_run_entries
from pinn.training.distributed import World
from pinn.training.phases import Phase
from pinn.training.settings import TrainSettings, saved_shaping, shaping
from pinn.training.strategies.weighting import LossWeights


@dataclass
class FitResult:
    """What `fit` returns: the history rows, the number of optimiser steps and the last loss.

    `resumed_from` is the step the run was resumed at (None for a run started afresh).
    """

    history: list[dict[str, float]] = field(default_factory=list)
    steps: int = 0
    final_loss: float = math.nan
    resumed_from: int | None = None


@dataclass
class RunState:
    """Everything a run needs to continue: its parts and where it is.

    step: optimiser steps taken over all phases (Adam steps, L-BFGS iterations, ...); phase:
    the name of the phase the run is in ("adam", "lbfgs", ...) or "done"; phase_index: its
    place in `settings.phases` (len(phases) when done); phase_start: the step it began at;
    history: the rows logged so far; batch: the current points; active: the running `Phase`
    (its optimiser state goes into the checkpoint); resumed: the training state a resumed
    run was saved with, for the phase it was in to take its optimiser state from.
    engine_at_start, weights_at_start: the engine's and loss weights' state at the start of
    the current Adam step (a checkpoint written after the step's loss redoes the step).
    causal: the causal weighting of the PDE terms (`settings.causal`), None when off; it holds
    no state a checkpoint needs (its weights follow from the current residual), only the last
    evaluation's weights, for the history rows. point_weights: the weights of the PDE terms'
    points (`settings.point_weights`), None when off: state, in the checkpoint (per process);
    point_weights_at_start: theirs as the current Adam step started. refine_by: what the
    points are refined by, (M, d) points -> (M,) |PDE residual| (`StepLoss.residual_magnitude`,
    set by `fit`).
    """

    model: nn.Module
    unknowns: Unknowns
    points: PointSampler
    engine: Engine
    weights: LossWeights
    settings: TrainSettings
    world: World = field(default_factory=World)
    step: int = 0
    phase: str = ""
    phase_index: int = 0
    phase_start: int = 0
    history: list[dict[str, Any]] = field(default_factory=list)
    batch: Batch | None = None
    active: Phase | None = None
    resumed: dict[str, Any] = field(default_factory=dict)
    resumed_from: int | None = None
    final_loss: float = math.nan
    started: float = field(default_factory=time.perf_counter)
    engine_at_start: dict[str, Any] | None = None
    weights_at_start: dict[str, Any] | None = None
    causal: CausalWeighting | None = field(init=False, default=None)
    point_weights: PointWeights | None = field(init=False, default=None)
    point_weights_at_start: dict[str, Any] | None = field(init=False, default=None)
    refine_by: Callable[[torch.Tensor], torch.Tensor] | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        # What both optimisers train: the network's parameters, then the unknowns.
        self.parameters = [*self.model.parameters(), *self.unknowns.parameters()]
        self.weights_at_start = self.weights.state_dict()
        self.phase = self.phase or self.settings.phases[0]
        if self.settings.causal.on:
            self.causal = CausalWeighting(self.settings.causal)
        if self.settings.point_weights.on:
            self.point_weights = PointWeights(self.settings.point_weights)

    def elapsed(self) -> float:
        """Training seconds so far, earlier invocations of a resumed run included."""
        return time.perf_counter() - self.started

    def mark_step_start(self) -> None:
        """Keep the engine's, weights' and point weights' state as the Adam step about to run
        starts."""
        self.engine_at_start = self.engine.state_dict()
        self.weights_at_start = self.weights.state_dict()
        if self.point_weights is not None:
            self.point_weights_at_start = self.point_weights.state_dict()

    def result(self) -> FitResult:
        return FitResult(self.history, self.step, self.final_loss, self.resumed_from)

    def checkpoint(self, loss: float, extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Everything the run needs to continue, as tensors, numbers, strings, lists and dicts.

        model: the parameters at the start of step `step` (Adam), or after `step` steps
        (L-BFGS, final); loss: theirs; history: the rows logged before this state. training:
        phase, phases (the list), phase_index, phase_start (the step it began at);
        phase_state (the running phase's optimiser: Adam's moments, step counts and decaying
        rate, or L-BFGS's curvature memory and counters); sampler (generator state before
        the current batch was drawn, that batch, refinement state); engine (its plans, the
        estimator's generator); point_weights, with `settings.point_weights` on (the weights of
        the PDE terms' points, their points and update count, as this step started); weights
        (the loss weights this step started with); settings
        (to check a resumption against); time_s; processes (how many trained together) and,
        for more than one, ranks: each process's sampler, engine and point weights in rank order
        (those themselves are rank 0's). unknowns: {name: 0-d tensor} ({} without any).
        `extra` entries (the resolved config, say) are added at the top level.

        Called on every process at the same step: it gathers each one's part.
        """
        in_adam = self.active is not None and self.active.saves_step_start  # mid-step
        at_start = in_adam and self.engine_at_start is not None
        engine = self.engine_at_start if at_start else self.engine.state_dict()
        own = {"sampler": self.points.state_dict(), "engine": engine}
        if self.point_weights is not None:
            own["point_weights"] = (
                self.point_weights_at_start if at_start else self.point_weights.state_dict()
            )
        per_process = {"ranks": self.world.gather(own)} if self.world.size > 1 else {}
        return {
            "model": self.model.state_dict(),
            "unknowns": self.unknowns.state(),
            "step": self.step,
            "loss": loss,
            "history": self.history,
            "training": {
                "phase": self.phase,
                "phases": list(self.settings.phases),
                "phase_index": self.phase_index,
                "phase_start": self.phase_start,
                "phase_state": self.active.state_dict() if self.active else None,
                **own,
                "weights": self.weights_at_start if in_adam else self.weights.state_dict(),
                "settings": shaping(self.settings),
                "time_s": self.elapsed(),
                "processes": self.world.size,
                **per_process,
            },
            **(extra or {}),
        }

    def restore(self, saved: Mapping[str, Any]) -> None:
        """Take up the run `saved` (from `checkpoint`) left off.

        Raises:
            CheckpointError: `saved` holds no training state, or another model.
            ConfigError: it was trained with other phases, other settings or another number
                of processes.
        """
        training = saved.get("training")
        if not isinstance(training, Mapping) or "phases" not in training:
            raise CheckpointError(
                "the checkpoint holds no training state this pinn can continue (written before "
                "it could resume, or before trainer.phases), so the run cannot be continued "
                "from it; start a new run"
            )
        check_run_entries(saved, "the checkpoint")
        if training["phases"] != list(self.settings.phases):
            raise ConfigError(
                f"the checkpoint was trained with trainer.phases={training['phases']}, this run "
                f"has {list(self.settings.phases)}: a resumed run keeps its phases; give "
                f"trainer.phases=[{','.join(training['phases'])}] or start a new run"
            )
        check_budget_changes(training, saved["step"], self.settings)
        trained = saved_shaping(training)
        if without_budgets(trained) != without_budgets(shaping(self.settings)):
            raise ConfigError(
                f"the checkpoint was trained with other settings, {trained}, than "
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
            self.model.load_state_dict(saved["model"])
        except RuntimeError as error:
            raise CheckpointError(f"the checkpoint's model is not this model: {error}") from error
        self.unknowns.load_state(saved.get("unknowns", {}))
        self.engine.load_state_dict(own["engine"])
        if self.point_weights is not None:  # on in the saved run too: its settings are these
            self.point_weights.load_state_dict(own["point_weights"], self.points.device)
        if "weights" in training:  # absent from checkpoints written before adaptive weights
            self.weights.load_state_dict(training["weights"])
        self.batch = self.points.load_state_dict(own["sampler"])
        self.phase, self.resumed = training["phase"], dict(training)
        self.phase_index, self.phase_start = training["phase_index"], training["phase_start"]
        self.history, self.step = list(saved["history"]), saved["step"]
        self.resumed_from = saved["step"]
        if self.phase == "done":
            self.final_loss = saved["loss"]
        self.started -= training["time_s"]  # history times go on from where they stopped
