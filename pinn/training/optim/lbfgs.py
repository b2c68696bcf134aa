"""pinn's L-BFGS: a strong Wolfe line search, every iteration reported, stop rules built in.

    optimizer = LBFGS(parameters, history_size=50)
    done, why = optimizer.iterate(closure, 100, on_iteration, tolerance=0.0)

`closure()` returns `(loss, info)` with `loss.backward()` done; `on_iteration(loss, info)` is
called after each iteration with the parameters at that iteration's end and the loss (and info)
the line search evaluated at exactly those parameters: no evaluation is spent on reporting.
`iterate` evaluates the closure once where it starts, then only in the line search, and stops
early with a reason (STALLED, TOLERANCE, PLATEAU) or None.

Against `torch.optim.LBFGS` (the algorithm is the same, Nocedal & Wright, algorithms 7.4 and
3.5/3.6): a curvature pair (s, y) enters the memory when y·s > eps·y·y, relative to the scale
of the pair, where torch asks for y·s > 1e-10 absolutely. Near a good PINN minimum (loss ~1e-7,
steps ~1e-4) every pair falls under torch's threshold, its memory freezes and the iterations
crawl; pinn's keeps learning the curvature. `state_dict` holds the memory and the counters, so
a resumed run continues exactly.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import torch

from pinn.training.optim.plateau import on_plateau

if TYPE_CHECKING:  # the settings' module runs this algorithm: imported for the hints only
    from pinn.training.phases.lbfgs import LBFGSSettings

STALLED = "the line search found no lower loss"
TOLERANCE = "the relative decrease of the loss fell below trainer.lbfgs.tolerance"

# closure() -> (loss, info): the loss to minimise (its backward done) and what to report with it.
Closure = Callable[[], tuple[torch.Tensor, Any]]

SUFFICIENT_DECREASE = 1e-4  # Armijo constant c1
CURVATURE = 0.9  # strong Wolfe constant c2 (0.9: the usual choice for quasi-Newton methods)


def plateau_reason(window: int, decrease: float) -> str:
    """Why `iterate` stopped on a plateau (the message names the settings that chose it)."""
    return (
        f"the last {window} iterations lowered the loss by less than {decrease:g} of it "
        "(trainer.lbfgs.stall_window, trainer.lbfgs.stall_decrease)"
    )


@dataclasses.dataclass
class _Point:
    """One evaluation on the search line: step t, flat parameters, loss, flat gradient, info."""

    t: float
    params: torch.Tensor
    loss: torch.Tensor
    grad: torch.Tensor
    info: Any
    slope: float = math.nan  # grad · direction

    @property
    def value(self) -> float:
        return self.loss.item()


class LBFGS:
    """Limited-memory BFGS over `params`, one `iterate` call per chunk of iterations.

    Args:
        params: the tensors to optimise (their `.grad` is read after each closure call).
        settings: `LBFGSSettings` (the block `trainer.lbfgs`): `history_size`, the curvature
            pairs kept; `stall_window`, `stall_decrease`, stop (PLATEAU) once the last
            `stall_window` iterations together lowered the loss by less than `stall_decrease`
            of it (0 = never). `steps`, `tolerance` and `resample_every` are the phase's.
        max_evaluations: closure calls one line search may spend.
    """

    def __init__(
        self, params: Iterable[torch.Tensor], settings: LBFGSSettings, max_evaluations: int = 25
    ):
        self.params = list(params)
        self.history_size, self.max_evaluations = settings.history_size, max_evaluations
        self.stall_window, self.stall_decrease = settings.stall_window, settings.stall_decrease
        self.iterations = 0
        self.evaluations = 0
        self.memory: list[tuple[torch.Tensor, torch.Tensor]] = []  # (s, y), oldest first
        self.recent: list[float] = []  # the losses of the last `stall_window` + 1 iterations

    # ---- state ---------------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        return {
            "iterations": self.iterations,
            "evaluations": self.evaluations,
            "memory": [(s.clone(), y.clone()) for s, y in self.memory],
            "recent": list(self.recent),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.iterations, self.evaluations = state["iterations"], state["evaluations"]
        self.memory = [(s.clone(), y.clone()) for s, y in state["memory"]]
        self.recent = list(state["recent"])

    def forget_plateau(self) -> None:
        """Start the plateau window afresh: the loss changed (new points), not by a step."""
        self.recent = []

    def zero_grad(self) -> None:
        for p in self.params:
            p.grad = None

    # ---- iterations ----------------------------------------------------------------------

    def iterate(
        self,
        closure: Closure,
        max_iter: int,
        on_iteration: Callable[[torch.Tensor, Any], None],
        tolerance: float = 0.0,
        stop: Callable[[], bool] | None = None,
    ) -> tuple[int, str | None]:
        """Run up to `max_iter` iterations; returns (iterations done, why L-BFGS must stop).

        `stop()`, asked after each whole iteration, ends the chunk early (reason None): the
        state is then what a chunk of that length would have left.

        The reason is STALLED (no lower loss along the search direction, or a zero gradient;
        the parameters stay where they were and the iteration is not counted), TOLERANCE (an
        iteration lowered the loss by less than `tolerance` of it), a plateau (see
        `plateau_reason`), or None.
        """
        here = self._evaluate(closure, self._flat_params(), 0.0)
        for done in range(max_iter):
            direction = self._direction(here.grad)
            if direction is None:
                return done, STALLED
            step = 1.0 if self.iterations else min(1.0, 1.0 / here.grad.abs().sum().item())
            found = self._line_search(closure, here, direction, step)
            if found is None:
                self._set_params(here.params)
                return done, STALLED
            self._remember(found.params - here.params, found.grad - here.grad)
            self._set_params(found.params)
            previous, here = here, found
            self.iterations += 1
            on_iteration(here.loss, here.info)
            why = self._stop_reason(previous.value, here.value, tolerance)
            if why is not None or (stop is not None and stop()):
                return done + 1, why
        return max_iter, None

    def _direction(self, grad: torch.Tensor) -> torch.Tensor | None:
        """-H grad by the two-loop recursion; -grad when the memory's direction is no descent."""
        if not torch.any(grad != 0):
            return None
        direction = grad.neg()
        coefficients = []
        for s, y in reversed(self.memory):
            a = s.dot(direction) / s.dot(y)
            direction.sub_(y, alpha=a.item())
            coefficients.append(a)
        if self.memory:
            s, y = self.memory[-1]
            direction.mul_((s.dot(y) / y.dot(y)).item())  # the newest pair's scale
        for (s, y), a in zip(self.memory, reversed(coefficients)):
            b = y.dot(direction) / s.dot(y)
            direction.add_(s, alpha=(a - b).item())
        if direction.dot(grad).item() >= 0:  # rounding broke the memory: start it afresh
            self.memory.clear()
            return grad.neg()
        return direction

    def _remember(self, s: torch.Tensor, y: torch.Tensor) -> None:
        """Keep the pair when its curvature is positive beyond rounding, relative to its scale."""
        if s.dot(y).item() > torch.finfo(s.dtype).eps * y.dot(y).item():
            self.memory.append((s, y))
            del self.memory[: -self.history_size]

    def _stop_reason(self, previous: float, loss: float, tolerance: float) -> str | None:
        if tolerance > 0 and previous - loss < tolerance * abs(previous):
            return TOLERANCE
        self.recent, flat = on_plateau(self.recent, loss, self.stall_window, self.stall_decrease)
        return plateau_reason(self.stall_window, self.stall_decrease) if flat else None

    # ---- the strong Wolfe line search ----------------------------------------------------

    def _line_search(
        self, closure: Closure, start: _Point, direction: torch.Tensor, step: float
    ) -> _Point | None:
        """A point along `direction` meeting the strong Wolfe conditions, else the lowest
        point found that lowers the loss enough (Armijo), else None."""
        start = dataclasses.replace(start, t=0.0, slope=start.grad.dot(direction).item())
        evaluations = 0

        def at(t: float) -> _Point:
            nonlocal evaluations
            evaluations += 1
            point = self._evaluate(closure, start.params + t * direction, t)
            point.slope = point.grad.dot(direction).item()
            return point

        previous, t = start, step
        while True:  # bracketing: step out until the minimum along the line is enclosed
            point = at(t)
            no_lower = previous is not start and point.value >= previous.value
            if self._too_high(start, point) or no_lower:
                low, high = previous, point
                break
            if self._flat_enough(start, point):
                return point
            if point.slope >= 0:
                low, high = point, previous
                break
            if evaluations >= self.max_evaluations:
                return point
            reach = point.t - previous.t
            guess = _cubic_minimum(previous, point)
            lower, upper = point.t + 0.01 * reach, 10 * point.t
            t = upper if guess is None else min(max(guess, lower), upper)
            previous = point

        scale = direction.abs().max().item()
        resolution = torch.finfo(direction.dtype).eps * max(1.0, start.params.abs().max().item())
        while evaluations < self.max_evaluations:  # zoom: shrink the bracket [low, high]
            if abs(high.t - low.t) * scale <= resolution:
                break
            left, right = sorted((low.t, high.t))
            margin = 0.1 * (right - left)
            guess = _cubic_minimum(low, high)
            inside = guess is not None and left + margin <= guess <= right - margin
            point = at(guess if inside else (left + right) / 2)
            if self._too_high(start, point) or point.value >= low.value:
                high = point
                continue
            if self._flat_enough(start, point):
                return point
            if point.slope * (high.t - low.t) >= 0:
                high = low
            low = point
        return None if low is start else low

    @staticmethod
    def _too_high(start: _Point, point: _Point) -> bool:
        """The Armijo condition fails (or the loss is not a number)."""
        bound = start.value + SUFFICIENT_DECREASE * point.t * start.slope
        return not point.value <= bound

    @staticmethod
    def _flat_enough(start: _Point, point: _Point) -> bool:
        """The strong curvature condition holds."""
        return abs(point.slope) <= -CURVATURE * start.slope

    # ---- parameters ----------------------------------------------------------------------

    def _evaluate(self, closure: Closure, params: torch.Tensor, t: float) -> _Point:
        self._set_params(params)
        loss, info = closure()
        self.evaluations += 1
        return _Point(t, params, loss.detach(), self._flat_grad(), info)

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


def _cubic_minimum(a: _Point, b: _Point) -> float | None:
    """The minimiser of the cubic through (a.t, a.value, a.slope), (b.t, b.value, b.slope);
    None when it has none (Nocedal & Wright, eq. 3.59)."""
    if a.t == b.t:
        return None
    d1 = a.slope + b.slope - 3 * (a.value - b.value) / (a.t - b.t)
    square = d1 * d1 - a.slope * b.slope
    if not square >= 0:
        return None
    d2 = math.copysign(math.sqrt(square), b.t - a.t)
    denominator = b.slope - a.slope + 2 * d2
    if denominator == 0:
        return None
    return b.t - (b.t - a.t) * (b.slope + d2 - d1) / denominator
