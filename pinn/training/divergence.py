"""A loss that turns NaN or infinite stops the run, without an Adam step waiting for the device.

    watch = DivergenceWatch(lambda: checkpoints.last_saved)
    watch.record(step, terms, loss)      # an Adam step: kept on the device, no host sync
    watch.check()                        # at a history row or checkpoint: raise if one was bad
    watch.require_finite(terms, loss, step, "lbfgs")    # L-BFGS and the final loss: at once

`TrainingDiverged` names the step, the phase, the non-finite terms and the last checkpoint
written (which, written only before the check passes, holds finite parameters).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from pinn.errors import TrainingDiverged


class DivergenceWatch:
    """The first Adam step whose loss was not finite, and its loss and terms, on the device."""

    def __init__(self, last_saved: Callable[[], int | None] = lambda: None) -> None:
        self._last_saved = last_saved  # the step of the last checkpoint written, for messages
        self._first_bad: torch.Tensor | None = None  # -1: none yet
        self._bad_values: torch.Tensor | None = None  # that step's loss, then its terms
        self._names: list[str] = []  # the names of the terms in _bad_values

    def record(self, step: int, terms: dict[str, torch.Tensor], loss: torch.Tensor) -> None:
        """Note, on the device (no wait), whether this Adam step's loss is the first bad one."""
        values = torch.stack([loss.detach(), *(value.detach() for value in terms.values())])
        if self._first_bad is None:
            self._names = list(terms)
            self._first_bad = torch.full((), -1, dtype=torch.long, device=loss.device)
            self._bad_values = torch.zeros_like(values)
        first = (self._first_bad < 0) & ~torch.isfinite(values[0])
        self._first_bad = torch.where(first, step, self._first_bad)
        self._bad_values = torch.where(first, values, self._bad_values)

    def check(self) -> None:
        """Raise if an Adam step recorded since the start had a non-finite loss."""
        if self._first_bad is None or int(self._first_bad) < 0:
            return
        loss, *terms = self._bad_values.tolist()
        bad = [name for name, value in zip(self._names, terms) if not math.isfinite(value)]
        self._diverged(loss, bad, int(self._first_bad), "adam")

    def require_finite(
        self, terms: dict[str, torch.Tensor], loss: torch.Tensor, step: int, phase: str
    ) -> None:
        """Raise at once if `loss` is not finite (L-BFGS and the final loss)."""
        if not torch.isfinite(loss):
            bad = [name for name, value in terms.items() if not torch.isfinite(value)]
            self._diverged(loss.item(), bad, step, phase)

    def _diverged(self, loss: float, bad: list[str], step: int, phase: str) -> None:
        diverged(loss, bad, step, phase, self._last_saved())


def diverged(loss: float, bad: list[str], step: int, phase: str, last_saved: int | None) -> None:
    """Stop the run: the loss at `step` was `loss`, with the non-finite terms `bad`."""
    where = (
        f"written at step {last_saved}"
        if last_saved is not None
        else "not written: no step finished with a finite loss"
    )
    raise TrainingDiverged(
        f"the loss became {loss} at step {step} ({phase}; "
        f"non-finite terms: {bad}). Training stopped; the last good checkpoint was "
        f"{where}. Try a lower trainer.adam.lr, float64 (dtype=float64), or other weights."
    )
