"""The plateau rule L-BFGS and Levenberg-Marquardt share: stop once the last `window`
iterations together lowered the loss by less than `decrease` of it."""

from __future__ import annotations


def on_plateau(
    recent: list[float], loss: float, window: int, decrease: float
) -> tuple[list[float], bool]:
    """(the last `window` + 1 losses with `loss`, whether they show a plateau); a window of 0
    keeps nothing and never stops."""
    if window <= 0:
        return recent, False
    recent = [*recent, loss][-(window + 1) :]
    first = recent[0]
    return recent, len(recent) > window and first - loss < decrease * abs(first)
