"""The L-BFGS phase: pinn's L-BFGS (`pinn.training.optim.lbfgs`, strong Wolfe line search) on the
last points drawn (or redrawn every `resample_every` iterations, refined by residual every
`refine_every`), a history row per iteration, stopping early on a stall, a failed line search or
the tolerance (the run is `pinn.training.phases.quasi_newton`'s)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from pinn.errors import require_int
from pinn.settings import setting
from pinn.training.optim.lbfgs import LBFGS
from pinn.training.phases.base import check_stop_keys
from pinn.training.phases.quasi_newton import QuasiNewtonPhase

if TYPE_CHECKING:
    from pinn.training.state import RunState


@dataclass
class LBFGSSettings:
    """The block `trainer.lbfgs`.

    Attributes:
        steps: L-BFGS iterations (>= 0).
        tolerance: stop after the first iteration that lowers the loss by less than this
            fraction of it (0 = run all `steps`); it also stops when its line search finds no
            lower loss.
        stall_window, stall_decrease: stop once the last `stall_window` iterations together
            lowered the loss by less than `stall_decrease` of it: a plateau that would only
            burn the clock (a window of 0 = never).
        history_size: curvature pairs kept (the memory of L-BFGS), >= 1.
        resample_every: iterations between redraws of the training points (0 = never): fixed
            points let L-BFGS drive the loss far below the residual between them (overfitting);
            fresh ones keep it honest. The curvature memory is kept across a redraw (the same
            PDE), the plateau window starts afresh (the loss jumps with the new points).
        refine_every: iterations between refinements of the points by their residual
            (`refinement.method`, rar or rad; 0 = never), kept across as a redraw is.
    """

    steps: int = setting(1000, "L-BFGS iterations (0 = none)")
    tolerance: float = setting(
        0.0, "stop once an iteration lowers the loss by less than this fraction (0 = never)"
    )
    stall_window: int = setting(100, "stop once this many iterations together ...")
    stall_decrease: float = setting(
        1e-3, "... lowered the loss by less than this fraction (window 0 = never)"
    )
    history_size: int = setting(50, "curvature pairs L-BFGS keeps (its memory)")
    resample_every: int = setting(
        0, "iterations between redraws of the training points (0 = never)"
    )
    refine_every: int = setting(
        0, "iterations between refinements of the points by residual (refinement.method; 0 = never)"
    )

    def __post_init__(self) -> None:
        check_stop_keys("lbfgs", self, ("tolerance",))
        require_int("trainer.lbfgs.history_size", self.history_size, minimum=1)


class LBFGSPhase(QuasiNewtonPhase):
    """L-BFGS for what is left of `settings.steps`."""

    name = "lbfgs"
    title = "L-BFGS"
    settings_type = LBFGSSettings

    def make_optimizer(self, state: RunState) -> LBFGS:
        return LBFGS(state.parameters, self.settings)
