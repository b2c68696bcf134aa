"""What the quasi-Newton phases share (`lbfgs`, `bfgs`): their stop keys, checked alike, and
their run: the optimiser on the last points drawn (or redrawn every `resample_every`
iterations, refined by residual every `refine_every`), a history row per iteration, stopping
early on a stall, a failed line search, a plateau or the tolerance. Between chunks the points
and point weights may change (`Phase.redraw_if_due`): the optimiser keeps its curvature and
starts its plateau window afresh.

A subclass names its optimiser (`make_optimizer`); the closure, the chunks, the causal weights
held through a line search and the checkpoints are this module's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from pinn.errors import trusting
from pinn.training.phases.base import Phase

if TYPE_CHECKING:
    from pinn.training.optim.quasi_newton import QuasiNewton
    from pinn.training.phases.parts import Parts
    from pinn.training.state import RunState


class QuasiNewtonPhase(Phase):
    """A quasi-Newton optimiser for what is left of `settings.steps`, in chunks of
    `trainer.log_every` iterations with a checkpoint maybe between them; it says why when it
    stops early."""

    deterministic = True
    budget_free = True
    evaluates_step_loss = True  # one or two evaluations an iteration (the line search)

    def __init__(self, settings: Any):
        super().__init__(settings)
        self.optimizer: QuasiNewton | None = None

    def make_optimizer(self, state: RunState) -> QuasiNewton:
        """The optimiser over `state.parameters`, from this phase's settings."""
        raise NotImplementedError

    def run(self, state: RunState, parts: Parts, saved: dict[str, Any] | None) -> None:
        settings, log_every = self.settings, state.settings.log_every
        optimizer = self.make_optimizer(state)
        if saved is not None:  # curvature, counters, plateau window
            optimizer.load_state_dict(saved["optimizer"])
        self.optimizer = optimizer
        causal = state.causal  # the PDE terms causally weighted (pinn.problem.causal), or None

        def closure() -> tuple[torch.Tensor, tuple]:
            optimizer.zero_grad()
            with trusting(checked["chunk"]):  # the chunk's first evaluation checks values
                terms, loss = parts.loss.with_gradients(state.batch)
            checked["chunk"] = True
            if causal is not None:  # the chunk's first evaluation set the weights: held from here
                causal.freeze()
            terms, loss = parts.loss.reduce(terms, loss, gradients=True)
            parts.watch.require_finite(terms, loss, state.step, self.name)
            # The causal weights travel with the terms: the line search may take an earlier try.
            detached = {name: value.detach() for name, value in terms.items()}
            return loss, (detached, causal and causal.seen())

        last = {}
        checked = {"chunk": False}  # whether this chunk's first evaluation has run

        def on_iteration(loss: torch.Tensor, info: tuple) -> None:
            # The model is at this iteration's parameters and `loss` is theirs (no extra
            # evaluation: see QuasiNewton.iterate).
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
            # large). They are recomputed here, so the loss may jump, as with new points, new
            # point weights (updated by the chunk's first evaluation) or refined points.
            n, redrawn = self.redraw_if_due(state, every, n)
            checked["chunk"] = False
            if causal is not None:
                causal.thaw()
            if causal is not None or redrawn:
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
