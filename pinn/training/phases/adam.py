"""The Adam phase: `steps` Adam steps, the learning rate falling by a schedule, the points
redrawn or refined as it goes, loss weights (LRA) and point weights (RBA) adapting where asked."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

from pinn.errors import require_int, require_positive, trusting
from pinn.settings import setting
from pinn.training.optim.schedules import adam_schedule, check_schedule
from pinn.training.phases.base import Phase

if TYPE_CHECKING:
    from pinn.training.phases.parts import Parts
    from pinn.training.state import RunState


@dataclass
class AdamSettings:
    """The block `trainer.adam`.

    Attributes:
        steps: Adam steps (>= 0).
        lr: the initial learning rate (> 0).
        lr_decay: the learning rate falls to lr * lr_decay by the last Adam step.
        schedule: how it falls, "exponential", "cosine" or "constant"
            (`pinn.training.optim.schedules`).
        resample_every: steps between redraws of the points; 0 draws them once.
        refine_every: steps between refinements of the points by their residual
            (`refinement.method`, rar or rad; 0 = never), after the redraw where both fall.
    """

    steps: int = setting(1000, "Adam steps (0 = none)")
    lr: float = setting(1e-3, "Adam's initial learning rate")
    lr_decay: float = setting(0.1, "the rate falls to lr * lr_decay by the last Adam step")
    schedule: str = setting(
        "exponential", "how it falls: exponential, cosine, linear or constant (lr throughout)"
    )
    resample_every: int = setting(
        0, "Adam steps between redraws of the training points (0 = never)"
    )
    refine_every: int = setting(
        0, "Adam steps between refinements of the points by residual (refinement.method; 0 = never)"
    )

    def __post_init__(self) -> None:
        for key in ("steps", "resample_every", "refine_every"):
            require_int(f"trainer.adam.{key}", getattr(self, key), minimum=0)
        for key in ("lr", "lr_decay"):
            require_positive(f"trainer.adam.{key}", getattr(self, key))
        check_schedule(self.schedule)


class AdamPhase(Phase):
    """Adam from the phase's current step to `settings.steps`. A checkpoint of a step holds
    the state at its start (written after its loss): resumed, it redoes the step."""

    name = "adam"
    title = "Adam"
    settings_type = AdamSettings
    saves_step_start = True
    evaluates_step_loss = True

    def __init__(self, settings: AdamSettings):
        super().__init__(settings)
        self.optimizer: torch.optim.Optimizer | None = None
        self.scheduler: torch.optim.lr_scheduler.LRScheduler | None = None

    def run(self, state: RunState, parts: Parts, saved: dict[str, Any] | None) -> None:
        settings, start = self.settings, state.phase_start
        first = state.step - start  # steps of this phase already taken
        self.optimizer = _adam(state.parameters, settings.lr)
        self.scheduler = adam_schedule(
            self.optimizer, settings.schedule, settings.steps, settings.lr_decay
        )
        if saved is not None:  # moments, step counts and the current rate
            self.optimizer.load_state_dict(saved["optimizer"])
            self.scheduler.load_state_dict(saved["scheduler"])
        point_weights = state.point_weights  # RBA's weights (pinn.problem.point_weights)
        for local in range(first, settings.steps):
            step = start + local
            # The phase's first step and each logged row check what only values show; the
            # steps between them trust it and never wait on the device (`pinn.syncs`).
            logged = local % state.settings.log_every == 0
            trusted = local != first and not logged
            # Fresh points every `resample_every` steps, then refined where the residual is
            # large; the first step uses the points drawn (or restored with the checkpoint).
            if local > first and self.due(local, settings.resample_every):
                state.batch = state.points.draw()
            if local > first and self.due(local, settings.refine_every):
                with trusting(trusted):  # waits once, for the candidates' residuals
                    state.batch = state.points.refine(state.refine_by)
            # A signal (Ctrl-C, SIGTERM) since the last step: this step's checkpoint, then stop.
            stopping = parts.interrupts.requested()
            checkpoint_due = stopping or parts.checkpoints.due(step)
            if checkpoint_due:
                state.mark_step_start()
            # The point weights move, from this step's residual, before it is weighed.
            if point_weights is not None and local % point_weights.settings.every == 0:
                point_weights.request()
            self.optimizer.zero_grad(set_to_none=True)
            with trusting(trusted):
                terms, loss = parts.loss.with_gradients(state.batch, step=local)
            terms, loss = parts.loss.reduce(terms, loss, gradients=True)
            parts.watch.record(step, terms, loss)  # on the device: read at the next row or save
            if checkpoint_due:
                parts.save(state, loss)
            if stopping:
                parts.stop(state)
            if logged:  # from the phase's first step on
                parts.row(step, self.name, terms, loss, lr=self.optimizer.param_groups[0]["lr"])
            self.optimizer.step()
            self.scheduler.step()
            parts.recorder.advance()
        parts.watch.check()

    def state_dict(self) -> dict[str, Any] | None:
        if self.optimizer is None:
            return None
        return {"optimizer": self.optimizer.state_dict(), "scheduler": self.scheduler.state_dict()}


def _adam(parameters: list[torch.Tensor], lr: float) -> torch.optim.Adam:
    """Adam with the fused kernel (one call updates every parameter: less per-step overhead)
    where this torch and device have one (CPU since torch 2.4), else the default kernel."""
    try:
        return torch.optim.Adam(parameters, lr=lr, fused=True)
    except (RuntimeError, ValueError):  # "fused=True requires ... supported devices"
        return torch.optim.Adam(parameters, lr=lr)
