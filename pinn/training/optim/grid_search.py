"""The line search of the Gauss-Newton steps (Levenberg-Marquardt, KFAC): the best of a grid of
lengths along a solved step.

    length, loss, info = best_length(move, measure, 12, loss)

A PINN's Gauss-Newton direction is good, its length often too long by a factor 2 to 16, and a
grid costs a few evaluations of the rows, cheap beside one of their Jacobian (or factors).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch


def best_length(
    move: Callable[[float], None],
    measure: Callable[[], tuple[torch.Tensor, Any]],
    count: int,
    loss: torch.Tensor,
    first: bool = False,
) -> tuple[float, torch.Tensor, Any]:
    """(the length taken, the loss there, its info) of the lengths 1, 1/2, ..., 1/2^(count-1)
    (at least 1): `move(t)` puts the parameters at length t along the step, `measure()` returns
    (their loss, info). The lowest loss below `loss` wins, the parameters left there; length 0
    (and `loss`, None) when none is lower, the parameters then at the last length tried. With
    `first`, the first length that lowers the loss is taken (backtracking: for a step whose
    length a model already chose, one evaluation where it holds)."""
    best_length, best_loss, best_info = 0.0, loss, None
    for k in range(max(count, 1)):
        length = 0.5**k
        move(length)
        new_loss, info = measure()
        if new_loss.item() < best_loss.item():  # NaN fails too
            best_length, best_loss, best_info = length, new_loss, info
            if first:
                break
    if best_length > 0 and best_length != length:
        move(best_length)
    return best_length, best_loss, best_info
