"""The strong Wolfe line search of pinn's quasi-Newton methods (L-BFGS, BFGS and its self-scaled
variants): Nocedal & Wright, algorithms 3.5 and 3.6, with cubic interpolation (eq. 3.59).

    start = evaluate(0.0)                       # a Trial: step 0, the loss and gradient there
    found = strong_wolfe(evaluate, start, direction, 1.0, max_evaluations=25)

`evaluate(t)` sets the parameters to start + t * direction and returns their `Trial`. The search
returns a trial meeting both strong Wolfe conditions,

    f(t) <= f(0) + c1 t f'(0)          (sufficient decrease, c1 = SUFFICIENT_DECREASE)
    |f'(t)| <= c2 |f'(0)|              (curvature, c2 = CURVATURE)

or, when its evaluations run out first, the lowest trial that decreases the loss enough
(Armijo), or None when there is none. `f` is the objective the optimiser minimises (the loss,
or its square root or logarithm: `pinn.training.optim.quasi_newton`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any

import torch

SUFFICIENT_DECREASE = 1e-4  # Armijo constant c1
CURVATURE = 0.9  # strong Wolfe constant c2 (0.9: the usual choice for quasi-Newton methods)


@dataclasses.dataclass
class Trial:
    """One evaluation on the search line.

    Attributes:
        t: the step along the direction.
        params: (P,) flat parameters.
        loss: the loss (a 0-d tensor), as the run reports it.
        value: the objective minimised there (the loss, or its transform), a float.
        grad: (P,) flat gradient of the objective.
        info: what the closure reported with the loss (terms, causal weights).
        slope: grad · direction (set by the search).
    """

    t: float
    params: torch.Tensor
    loss: torch.Tensor
    value: float
    grad: torch.Tensor
    info: Any
    slope: float = math.nan


def strong_wolfe(
    evaluate: Callable[[float], Trial],
    start: Trial,
    direction: torch.Tensor,
    step: float,
    max_evaluations: int,
) -> Trial | None:
    """A trial along `direction` from `start` meeting the strong Wolfe conditions, first trying
    `step`; else the lowest trial that lowers the objective enough (Armijo), else None."""
    start = dataclasses.replace(start, t=0.0, slope=start.grad.dot(direction).item())
    evaluations = 0

    def at(t: float) -> Trial:
        nonlocal evaluations
        evaluations += 1
        trial = evaluate(t)
        trial.slope = trial.grad.dot(direction).item()
        return trial

    previous, t = start, step
    while True:  # bracketing: step out until the minimum along the line is enclosed
        trial = at(t)
        no_lower = previous is not start and trial.value >= previous.value
        if _too_high(start, trial) or no_lower:
            low, high = previous, trial
            break
        if _flat_enough(start, trial):
            return trial
        if trial.slope >= 0:
            low, high = trial, previous
            break
        if evaluations >= max_evaluations:
            return trial
        reach = trial.t - previous.t
        guess = cubic_minimum(previous, trial)
        lower, upper = trial.t + 0.01 * reach, 10 * trial.t
        t = upper if guess is None else min(max(guess, lower), upper)
        previous = trial

    scale = direction.abs().max().item()
    resolution = torch.finfo(direction.dtype).eps * max(1.0, start.params.abs().max().item())
    while evaluations < max_evaluations:  # zoom: shrink the bracket [low, high]
        if abs(high.t - low.t) * scale <= resolution:
            break
        left, right = sorted((low.t, high.t))
        margin = 0.1 * (right - left)
        guess = cubic_minimum(low, high)
        inside = guess is not None and left + margin <= guess <= right - margin
        trial = at(guess if inside else (left + right) / 2)
        if _too_high(start, trial) or trial.value >= low.value:
            high = trial
            continue
        if _flat_enough(start, trial):
            return trial
        if trial.slope * (high.t - low.t) >= 0:
            high = low
        low = trial
    return None if low is start else low


def _too_high(start: Trial, trial: Trial) -> bool:
    """The Armijo condition fails (or the objective is not a number)."""
    bound = start.value + SUFFICIENT_DECREASE * trial.t * start.slope
    return not trial.value <= bound


def _flat_enough(start: Trial, trial: Trial) -> bool:
    """The strong curvature condition holds."""
    return abs(trial.slope) <= -CURVATURE * start.slope


def cubic_minimum(a: Trial, b: Trial) -> float | None:
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
