"""What pinn's quasi-Newton optimisers share: the iterations, the line search, the objective.

    optimizer = LBFGS(parameters, settings)            # or BFGS (pinn.training.optim.bfgs)
    done, why = optimizer.iterate(closure, 100, on_iteration, tolerance=0.0)

`closure()` returns `(loss, info)` with `loss.backward()` done; `on_iteration(loss, info)` is
called after each iteration with the parameters at that iteration's end and the loss (and info)
the line search evaluated at exactly those parameters: no evaluation is spent on reporting.
`iterate` evaluates the closure once where it starts, then only in the line search
(`pinn.training.optim.line_search`), and stops early with a reason or None.

A subclass says how a direction comes from the gradient (`_direction`) and what it learns from
a step (`_remember`); its state joins the counters in `state_dict`.

The objective may be the loss itself or a transform of it (`TRANSFORMS`): "sqrt" minimises
sqrt(L), "log" minimises log(L), with the same minimisers; near a small minimum their
curvature is better scaled for a quasi-Newton model (Urbán, Stefanou & Pons 2025, sec. 4). The
gradient is the loss's times d transform / dL, exact. Stop rules and reports use the loss.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

import torch

from pinn.training.optim.line_search import Trial, strong_wolfe
from pinn.training.optim.plateau import on_plateau

# closure() -> (loss, info): the loss to minimise (its backward done) and what to report with it.
Closure = Callable[[], tuple[torch.Tensor, Any]]

TRANSFORMS = ("none", "sqrt", "log")


def stalled_reason() -> str:
    """Why `iterate` stopped when the line search found nothing lower."""
    return "the line search found no lower loss"


def tolerance_reason(block: str) -> str:
    """Why `iterate` stopped on `tolerance` (the phase's block named)."""
    return f"the relative decrease of the loss fell below trainer.{block}.tolerance"


def plateau_reason(window: int, decrease: float, block: str = "lbfgs") -> str:
    """Why `iterate` stopped on a plateau (the message names the settings that chose it)."""
    return (
        f"the last {window} iterations lowered the loss by less than {decrease:g} of it "
        f"(trainer.{block}.stall_window, trainer.{block}.stall_decrease)"
    )


def objective(loss: float, grad: torch.Tensor, transform: str) -> tuple[float, torch.Tensor]:
    """(f, grad f) for f = transform(loss): the loss, sqrt(loss) or log(loss); `grad` (P,) is the
    loss's gradient. A loss of 0 under sqrt or log gives -inf or a zero gradient: the search
    then sees no lower value, as at any exact minimum."""
    if transform == "none":
        return loss, grad
    if not loss > 0:
        return (0.0 if transform == "sqrt" else -math.inf), torch.zeros_like(grad)
    if transform == "sqrt":
        root = math.sqrt(loss)
        return root, grad / (2 * root)
    return math.log(loss), grad / loss


class QuasiNewton:
    """Iterations along quasi-Newton directions with a strong Wolfe line search.

    Args:
        params: the tensors to optimise (their `.grad` is read after each closure call).
        block: the phase's settings block ("lbfgs", "bfgs"), named in the stop reasons.
        stall_window, stall_decrease: stop once the last `stall_window` iterations together
            lowered the loss by less than `stall_decrease` of it (0 = never).
        transform: the objective minimised, one of `TRANSFORMS`.
        max_evaluations: closure calls one line search may spend.
    """

    def __init__(
        self,
        params: Iterable[torch.Tensor],
        block: str,
        stall_window: int,
        stall_decrease: float,
        transform: str = "none",
        max_evaluations: int = 25,
    ):
        self.params = list(params)
        self.block, self.transform, self.max_evaluations = block, transform, max_evaluations
        self.stall_window, self.stall_decrease = stall_window, stall_decrease
        self.iterations = 0
        self.evaluations = 0
        self.recent: list[float] = []  # the losses of the last `stall_window` + 1 iterations

    # ---- state ---------------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        return {
            "iterations": self.iterations,
            "evaluations": self.evaluations,
            "recent": list(self.recent),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.iterations, self.evaluations = state["iterations"], state["evaluations"]
        self.recent = list(state["recent"])

    def forget_plateau(self) -> None:
        """Start the plateau window afresh: the loss changed (new points), not by a step."""
        self.recent = []

    def zero_grad(self) -> None:
        for p in self.params:
            p.grad = None

    # ---- what a subclass says ------------------------------------------------------------

    def _direction(self, grad: torch.Tensor) -> torch.Tensor:
        """(P,) a descent direction from the (P,) gradient of the objective."""
        raise NotImplementedError

    def _first_step(self, grad: torch.Tensor) -> float:
        """The step the line search tries first: 1 once curvature is known."""
        return 1.0 if self.iterations else min(1.0, 1.0 / grad.abs().sum().item())

    def _remember(self, here: Trial, found: Trial) -> None:
        """Learn from the step from `here` to `found` (both with their gradients)."""
        raise NotImplementedError

    def _forget_curvature(self) -> bool:
        """Start the curvature afresh after a failed line search; False where there was none
        to forget (then the iterations stop). By default nothing is forgotten."""
        return False

    # ---- iterations ----------------------------------------------------------------------

    def iterate(
        self,
        closure: Closure,
        max_iter: int,
        on_iteration: Callable[[torch.Tensor, Any], None],
        tolerance: float = 0.0,
        stop: Callable[[], bool] | None = None,
    ) -> tuple[int, str | None]:
        """Run up to `max_iter` iterations; returns (iterations done, why it must stop).

        `stop()`, asked after each whole iteration, ends the chunk early (reason None): the
        state is then what a chunk of that length would have left.

        The reason is `stalled_reason()` (no lower objective along the search direction, or a
        zero gradient; the parameters stay where they were and the iteration is not counted),
        `tolerance_reason` (an iteration lowered the loss by less than `tolerance` of it), a
        plateau (`plateau_reason`), or None.
        """
        here = self._evaluate(closure, self._flat_params(), 0.0)
        for done in range(max_iter):
            if not torch.any(here.grad != 0):
                return done, stalled_reason()
            found = self._search(closure, here)
            if found is None and self._forget_curvature():  # stale curvature: try afresh
                found = self._search(closure, here)
            if found is None:
                self._set_params(here.params)
                return done, stalled_reason()
            self._remember(here, found)
            self._set_params(found.params)
            previous, here = here, found
            self.iterations += 1
            on_iteration(here.loss, here.info)
            why = self._stop_reason(previous.loss.item(), here.loss.item(), tolerance)
            if why is not None or (stop is not None and stop()):
                return done + 1, why
        return max_iter, None

    def _search(self, closure: Closure, here: Trial) -> Trial | None:
        """The strong Wolfe point along this iteration's direction from `here`, or None."""
        direction = self._direction(here.grad)

        def evaluate(t: float) -> Trial:
            return self._evaluate(closure, here.params + t * direction, t)

        step = self._first_step(here.grad)
        return strong_wolfe(evaluate, here, direction, step, self.max_evaluations)

    def _stop_reason(self, previous: float, loss: float, tolerance: float) -> str | None:
        if tolerance > 0 and previous - loss < tolerance * abs(previous):
            return tolerance_reason(self.block)
        self.recent, flat = on_plateau(self.recent, loss, self.stall_window, self.stall_decrease)
        if flat:
            return plateau_reason(self.stall_window, self.stall_decrease, self.block)
        return None

    # ---- parameters ----------------------------------------------------------------------

    def _evaluate(self, closure: Closure, params: torch.Tensor, t: float) -> Trial:
        self._set_params(params)
        loss, info = closure()
        self.evaluations += 1
        loss = loss.detach()
        value, grad = objective(loss.item(), self._flat_grad(), self.transform)
        return Trial(t, params, loss, value, grad, info)

    def _like(self) -> dict[str, Any]:
        """The device and dtype of the flat parameters (what a loaded state must move to)."""
        first = self.params[0] if self.params else torch.empty(0)
        return {"device": first.device, "dtype": first.dtype}

    def _flat_params(self) -> torch.Tensor:
        return torch.cat([p.detach().flatten() for p in self.params])

    def _flat_grad(self) -> torch.Tensor:
        grads = [torch.zeros_like(p) if p.grad is None else p.grad for p in self.params]
        return torch.cat([g.flatten() for g in grads])

    def _set_params(self, flat: torch.Tensor) -> None:
        offset = 0
        with torch.no_grad():
            for p in self.params:
                p.copy_(flat[offset : offset + p.numel()].view_as(p))
                offset += p.numel()
