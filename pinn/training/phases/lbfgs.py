"""The L-BFGS phase: pinn's L-BFGS (`pinn.training.optim.lbfgs`, strong Wolfe line search) on the
last points drawn (or redrawn every `resample_every` iterations), a history row per iteration,
stopping early on a stall, a failed line search or the tolerance."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

from pinn.errors import ConfigError, require_int
from pinn.settings import setting
from pinn.training.optim.lbfgs import LBFGS
from pinn.training.phases.base import Phase

if TYPE_CHECKING:
    from pinn.training.phases.parts import Parts
    from pinn.training.state import RunState


@dataclass
class LBFGSSettings:
    """The block `trainer.lbfgs`.

    Attributes:
        steps: L-BFGS iterations (>= 0).
        tolerance: stop after the first iteration that lowers the loss by less than this
            fraction of it (0 = run all `steps`); it also stops when its line search finds no
            lower loss.
        stall_window, stall_decrease: stop once the last `stall_window` iterations together
            lowered the loss by less than `stall_decrease` of it: a plateau that would only
            burn the clock (a window of 0 = never).
        history_size: curvature pairs kept (the memory of L-BFGS), >= 1.
        resample_every: iterations between redraws of the training points (0 = never): fixed
            points let L-BFGS drive the loss far below the residual between them (overfitting);
            fresh ones keep it honest. The curvature memory is kept across a redraw (the same
            PDE), the plateau window starts afresh (the loss jumps with the new points).
    """

    steps: int = setting(1000, "L-BFGS iterations (0 = none)")
    tolerance: float = setting(
        0.0, "stop once an iteration lowers the loss by less than this fraction (0 = never)"
    )
    stall_window: int = setting(100, "stop once this many iterations together ...")
    stall_decrease: float = setting(
        1e-3, "... lowered the loss by less than this fraction (window 0 = never)"
    )
    history_size: int = setting(50, "curvature pairs L-BFGS keeps (its memory)")
    resample_every: int = setting(
        0, "iterations between redraws of the training points (0 = never)"
    )

    def __post_init__(self) -> None:
        for key in ("steps", "stall_window", "resample_every"):
            require_int(f"trainer.lbfgs.{key}", getattr(self, key), minimum=0)
        require_int("trainer.lbfgs.history_size", self.history_size, minimum=1)
        for key in ("tolerance", "stall_decrease"):
            fraction = getattr(self, key)
            if not isinstance(fraction, (int, float)) or not 0 <= fraction < 1:
                raise ConfigError(f"trainer.lbfgs.{key} must be in [0, 1), got {fraction!r}")


class LBFGSPhase(Phase):
    """L-BFGS for what is left of `settings.steps`, in chunks of `trainer.log_every`
    iterations with a checkpoint maybe between them; it says why when it stops early."""

    name = "lbfgs"
    title = "L-BFGS"
    settings_type = LBFGSSettings
    deterministic = True
    budget_free = True

    def __init__(self, settings: LBFGSSettings):
        super().__init__(settings)
        self.optimizer: LBFGS | None = None

    def run(self, state: RunState, parts: Parts, saved: dict[str, Any] | None) -> None:
        settings, log_every = self.settings, state.settings.log_every
        optimizer = LBFGS(state.parameters, settings)
        if saved is not None:  # directions, step sizes, last gradient, ...
            optimizer.load_state_dict(saved["optimizer"])
        self.optimizer = optimizer
        causal = state.causal  # the PDE terms causally weighted (pinn.problem.causal), or None

        def closure() -> tuple[torch.Tensor, tuple]:
            optimizer.zero_grad()
            terms, loss = parts.loss(state.batch)
            if causal is not None:  # the chunk's first evaluation set the weights: held from here
                causal.freeze()
            loss.backward()
            terms, loss = parts.loss.reduce(terms, loss, gradients=True)
            parts.watch.require_finite(terms, loss, state.step, self.name)
            # The causal weights travel with the terms: the line search may take an earlier try.
            detached = {name: value.detach() for name, value in terms.items()}
            return loss, (detached, causal and causal.seen())

        last = {}

        def on_iteration(loss: torch.Tensor, info: tuple) -> None:
            # The model is at this iteration's parameters and `loss` is theirs (no extra
            # evaluation: see LBFGS.iterate).
            terms, seen = info
            if causal is not None:
                causal.show(seen)
            parts.recorder.advance()
            step = state.step
            parts.row(step, self.name, terms, loss, validate=step % log_every == 0)
            last["loss"] = loss

        every = settings.resample_every

        def iterate(n: int) -> tuple[int, str | None]:
            # Causal weights are held for a chunk: a line search measuring each trial with its
            # own weights compares different losses (and fails at once when the tolerance is
            # large). They are recomputed here, so the loss may jump, as with new points.
            n, redrawn = self.redraw_if_due(state, every, n)
            loss_changes = causal is not None or redrawn
            if causal is not None:
                causal.thaw()
            if loss_changes:
                optimizer.forget_plateau()
            return optimizer.iterate(
                closure, n, on_iteration, settings.tolerance, parts.interrupts.requested
            )

        try:
            self.run_chunks(state, parts, iterate, last)
        finally:
            if causal is not None:
                causal.thaw()  # the phases after this one weigh each evaluation afresh

    def state_dict(self) -> dict[str, Any] | None:
        return None if self.optimizer is None else {"optimizer": self.optimizer.state_dict()}
