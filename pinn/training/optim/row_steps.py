"""What the Gauss-Newton optimisers (`LevenbergMarquardt`, `KFAC`) share: iterations over their
`step` with a stop on a refused step or a plateau of the chained losses, and the parameters
read and written as one flat vector.

    class MyOptimizer(RowSteps):
        def step(self, evaluate) -> (new loss, info) or None    # None: every try refused

A subclass sets `params`, `dtype`, `stall_window`, `stall_decrease`, `recent` (the plateau's
window, for its state) and, after each accepted step, `last_ratio` (its new loss over its
iterate's).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from pinn.errors import CheckpointError
from pinn.training.optim.plateau import on_plateau

STALLED = "no damping gave a step that lowers the loss"


def plateau_reason(window: int, decrease: float) -> str:
    """Why `iterate` stopped on a plateau."""
    return f"the last {window} iterations lowered the loss by less than {decrease:g} of it"


class RowSteps:
    """The iterations and parameters of a Gauss-Newton optimiser (module docstring)."""

    params: list[torch.Tensor]
    dtype: torch.dtype
    stall_window: int
    stall_decrease: float
    recent: list[float]
    last_ratio: float
    iterations: int
    evaluations: int
    refusals: int

    title = "optimiser"  # its name in messages

    def step(self, evaluate: Callable) -> tuple[torch.Tensor, Any] | None:
        raise NotImplementedError

    def state_dict(self) -> dict[str, Any]:
        raise NotImplementedError

    def _counters(self) -> dict[str, Any]:
        """The counters and the plateau's window, for `state_dict`."""
        return {
            "iterations": self.iterations,
            "evaluations": self.evaluations,
            "refusals": self.refusals,
            "recent": list(self.recent),
        }

    def _load_counters(self, state: dict[str, Any]) -> None:
        """Refuse a saved state that lacks a key of this one's `state_dict`; take its counters."""
        self._require_keys(state)
        self.iterations, self.evaluations = state["iterations"], state["evaluations"]
        self.refusals, self.recent = state["refusals"], list(state["recent"])

    def _require_keys(self, state: dict[str, Any]) -> None:
        """Refuse a saved state that lacks a key of this one's `state_dict`."""
        missing = sorted(set(self.state_dict()) - set(state))
        if missing:
            raise CheckpointError(
                f"this {self.title} state lacks {', '.join(missing)}: it was written by an "
                "older pinn, which this one cannot resume: start the run again without resume="
            )

    def iterate(
        self,
        evaluate: Callable,
        max_iter: int,
        on_iteration: Callable[[torch.Tensor, Any], None],
        stop: Callable[[], bool] | None = None,
    ) -> tuple[int, str | None]:
        """Run up to `max_iter` iterations; returns (iterations done, why it must stop).

        The reason is STALLED (no damping lowered the loss; the parameters stay where they
        were), a plateau (`plateau_reason`) or None. `stop()`, asked after each iteration,
        ends the chunk early (reason None).
        """
        for done in range(max_iter):
            accepted = self.step(evaluate)
            if accepted is None:
                return done, STALLED
            loss, info = accepted
            on_iteration(loss, info)
            why = self._plateau(loss.item(), self.last_ratio)
            if why is not None or (stop is not None and stop()):
                return done + 1, why
        return max_iter, None

    def _plateau(self, loss: float, ratio: float) -> str | None:
        """Whether the recent steps, chained, lowered the loss too little; `loss` is the last
        step's new loss, `ratio` that over its iterate's loss, both measured alike.

        The window holds the loss chained through each step's own ratio, not the losses as
        reported: where `evaluate` reweights the rows at each iterate (causal weights, which
        open up and raise the loss as the earlier times are fitted) a rise between iterates is
        no lack of progress. With fixed rows the chain is the loss itself."""
        chained = self.recent[-1] * ratio if self.recent else loss
        self.recent, flat = on_plateau(self.recent, chained, self.stall_window, self.stall_decrease)
        return plateau_reason(self.stall_window, self.stall_decrease) if flat else None

    # ---- parameters ----------------------------------------------------------------------

    def _flat_params(self) -> torch.Tensor:
        return torch.cat([p.detach().reshape(-1).to(self.dtype) for p in self.params])

    def _set_params(self, flat: torch.Tensor) -> None:
        """Write `flat` into the parameters, through `.data`: a matrix-free Jacobian's graph
        saved them, and a refused step puts back the very values it was made at, so its
        products stay valid (`MatrixFreeJacobian` checks that they are)."""
        offset = 0
        for p in self.params:
            p.data.copy_(flat[offset : offset + p.numel()].view_as(p))
            offset += p.numel()
