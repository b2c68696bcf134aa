"""pinn's L-BFGS: a strong Wolfe line search, every iteration reported, stop rules built in.

    optimizer = LBFGS(parameters, settings)            # settings: LBFGSSettings
    done, why = optimizer.iterate(closure, 100, on_iteration, tolerance=0.0)

The iterations, the line search and the closure's contract are `QuasiNewton`'s
(pinn.training.optim.quasi_newton); this module keeps the limited memory of curvature pairs.

Against `torch.optim.LBFGS` (the algorithm is the same, Nocedal & Wright, algorithms 7.4 and
3.5/3.6): a curvature pair (s, y) enters the memory when y·s > eps·y·y, relative to the scale
of the pair, where torch asks for y·s > 1e-10 absolutely. Near a good PINN minimum (loss ~1e-7,
steps ~1e-4) every pair falls under torch's threshold, its memory freezes and the iterations
crawl; pinn's keeps learning the curvature. The initial inverse Hessian of each direction is the
newest pair's y·s / y·y times the identity (the self-scaling of Oren & Luenberger in
limited-memory form). `state_dict` holds the memory and the counters, so a resumed run
continues exactly.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import torch

from pinn.training.optim.line_search import Trial
from pinn.training.optim.quasi_newton import (
    QuasiNewton,
    plateau_reason,
    stalled_reason,
    tolerance_reason,
)

if TYPE_CHECKING:  # the settings' module runs this algorithm: imported for the hints only
    from pinn.training.phases.lbfgs import LBFGSSettings

STALLED = stalled_reason()
TOLERANCE = tolerance_reason("lbfgs")

__all__ = ["LBFGS", "STALLED", "TOLERANCE", "plateau_reason"]


class LBFGS(QuasiNewton):
    """Limited-memory BFGS over `params`, one `iterate` call per chunk of iterations.

    Args:
        params: the tensors to optimise (their `.grad` is read after each closure call).
        settings: `LBFGSSettings` (the block `trainer.lbfgs`): `history_size`, the curvature
            pairs kept; `stall_window`, `stall_decrease`, stop once the last `stall_window`
            iterations together lowered the loss by less than `stall_decrease` of it (0 =
            never). `steps`, `tolerance` and `resample_every` are the phase's.
        max_evaluations: closure calls one line search may spend.
    """

    def __init__(
        self, params: Iterable[torch.Tensor], settings: LBFGSSettings, max_evaluations: int = 25
    ):
        super().__init__(
            params, "lbfgs", settings.stall_window, settings.stall_decrease, "none", max_evaluations
        )
        self.history_size = settings.history_size
        self.memory: list[tuple[torch.Tensor, torch.Tensor]] = []  # (s, y), oldest first

    def state_dict(self) -> dict[str, Any]:
        return {
            **super().state_dict(),
            "memory": [(s.clone(), y.clone()) for s, y in self.memory],
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Continue from `state_dict()`'s result; its (P,) pairs move to the parameters' device
        and dtype (a checkpoint is loaded on the CPU, whatever device the run trains on)."""
        super().load_state_dict(state)
        like = self._like()
        self.memory = [
            (s.to(**like, copy=True), y.to(**like, copy=True)) for s, y in state["memory"]
        ]

    def _direction(self, grad: torch.Tensor) -> torch.Tensor:
        """-H grad by the two-loop recursion; -grad when the memory's direction is no descent.

        The coefficients stay on the device (0-d tensors): the recursion reads one number on
        the host, whether the direction descends, not two per curvature pair (`pinn.syncs`)."""
        direction = grad.neg()
        coefficients = []
        for s, y in reversed(self.memory):
            a = s.dot(direction) / s.dot(y)
            direction.addcmul_(y, a, value=-1)
            coefficients.append(a)
        if self.memory:
            s, y = self.memory[-1]
            direction.mul_(s.dot(y) / y.dot(y))  # the newest pair's scale
        for (s, y), a in zip(self.memory, reversed(coefficients)):
            b = y.dot(direction) / s.dot(y)
            direction.addcmul_(s, a - b)
        if direction.dot(grad).item() >= 0:  # rounding broke the memory: start it afresh
            self.memory.clear()
            return grad.neg()
        return direction

    def _remember(self, here: Trial, found: Trial) -> None:
        """Keep the pair when its curvature is positive beyond rounding, relative to its scale
        (one number read on the host)."""
        s, y = found.params - here.params, found.grad - here.grad
        if (s.dot(y) > torch.finfo(s.dtype).eps * y.dot(y)).item():
            self.memory.append((s, y))
            del self.memory[: -self.history_size]
