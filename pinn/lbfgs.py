"""L-BFGS with a strong Wolfe line search that reports every iteration's loss, for free.

torch.optim.LBFGS runs up to `max_iter` iterations per `step(closure)` and returns only the loss
it started from; stepping it one iteration at a time would evaluate the closure once more per
iteration. `IterationLBFGS.iterate` runs a chunk of iterations and calls

    on_iteration(loss, info)

after each one, with the model at that iteration's parameters and the loss (and whatever the
closure returned with it) of exactly those parameters: the line-search evaluation they were
accepted from. How: every line-search evaluation is kept with its parameters; an iteration's
accepted parameters are the point the next iteration's line search starts from (or where the
chunk ends), and the evaluation with bitwise those parameters is the one reported. (It hooks
torch's `_directional_evaluate`, the method every line-search evaluation goes through.)

An iteration whose line search found no lower loss leaves the parameters where they were: it
is not counted, and `iterate` stops with STALLED. With `tolerance > 0` it stops with TOLERANCE
after the first iteration whose relative decrease of the loss, (previous - loss) / |previous|,
is below `tolerance`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

STALLED = "the line search found no lower loss"
TOLERANCE = "the relative decrease of the loss fell below trainer.lbfgs_tolerance"

# closure() -> (loss, info): the loss to minimise (its backward done) and what to report with it.
Closure = Callable[[], tuple[torch.Tensor, Any]]


class _Stop(Exception):
    """Raised from inside torch's step to end it at an iteration's boundary."""


class IterationLBFGS(torch.optim.LBFGS):
    """torch.optim.LBFGS (use line_search_fn="strong_wolfe") with `iterate` reporting each step.

    Its `state_dict` is torch's: a fresh optimiser given it continues between chunks exactly.
    """

    def iterate(
        self,
        closure: Closure,
        max_iter: int,
        on_iteration: Callable[[torch.Tensor, Any], None],
        tolerance: float = 0.0,
    ) -> tuple[int, str | None]:
        """Run up to `max_iter` iterations; returns (iterations done, why L-BFGS must stop).

        The reason is STALLED, TOLERANCE or None: no reason to stop, though fewer than
        `max_iter` iterations are done when the chunk used up its `max_eval` evaluations. The
        closure is evaluated once at the start of the chunk (as in torch), then only by the
        line search.
        """
        self.param_groups[0]["max_iter"] = max_iter
        self._on_iteration, self._tolerance = on_iteration, tolerance
        self._start: tuple[torch.Tensor, torch.Tensor, Any] | None = None  # params, loss, info
        self._trials: list[tuple[torch.Tensor, torch.Tensor, Any]] = []
        self._searching, self._done = False, 0
        self._iteration = self._first = first = self._n_iter()

        def evaluate() -> torch.Tensor:
            loss, info = closure()
            point = (self._flat_params(), loss.detach(), info)
            if self._searching:
                self._trials.append(point)
            else:  # the start of the chunk
                self._start = point
            return loss

        try:
            self.step(evaluate)
            if self._n_iter() == first:  # a zero gradient: not a single iteration
                return self._done, STALLED
            self._finish(self._flat_params())  # the chunk's last iteration ends here
        except _Stop as stop:
            # Stopped where an iteration had just begun, before its parameters moved.
            self.state[self._params[0]]["n_iter"] = first + self._done
            return self._done, str(stop)
        return self._done, None

    def _directional_evaluate(self, closure, x, t, d):
        if self._n_iter() != self._iteration:  # a new iteration: `x` is where the last one ended
            if self._n_iter() > self._iteration + 1 or self._iteration > self._n_iter():
                raise RuntimeError("L-BFGS skipped an iteration the trainer could not see")
            if self._iteration != self._first:
                self._finish(torch.cat([p.flatten() for p in x]))
            self._iteration = self._n_iter()
        self._searching = True
        try:
            return super()._directional_evaluate(closure, x, t, d)
        finally:
            self._searching = False

    def _finish(self, params: torch.Tensor) -> None:
        """The iteration that ended at `params`: report it, or stop."""
        start_params, start_loss, _ = self._start
        if torch.equal(params, start_params):
            raise _Stop(STALLED)
        point = next((p for p in reversed(self._trials) if torch.equal(p[0], params)), None)
        if point is None:
            raise RuntimeError("L-BFGS ended an iteration at a point it never evaluated")
        self._start, self._trials = point, []
        self._done += 1
        loss, info = point[1], point[2]
        self._on_iteration(loss, info)
        previous = start_loss.item()
        if self._tolerance > 0 and (previous - loss.item()) < self._tolerance * abs(previous):
            raise _Stop(TOLERANCE)

    def _flat_params(self) -> torch.Tensor:
        return torch.cat([p.detach().flatten() for p in self._params]).clone()

    def _n_iter(self) -> int:
        return int(self.state[self._params[0]].get("n_iter", 0))
