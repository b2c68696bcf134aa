"""The `bfgs` phase: dense BFGS or a self-scaled variant (`pinn.training.optim.bfgs`) on the
last points drawn (or redrawn every `resample_every` iterations), a strong Wolfe line search,
the inverse Hessian kept in float64 and saved in each checkpoint (the run is
`pinn.training.phases.quasi_newton`'s, as L-BFGS's).

    trainer.phases=[adam,bfgs] trainer.bfgs.steps=5000 trainer.bfgs.update=ssbroyden

Its inverse Hessian holds P² float64 numbers for P parameters: 32 MB at P = 2,000, 800 MB at
10,000, and it is written whole into every checkpoint. Above `max_parameters` the phase is
refused before training starts, naming L-BFGS (whose initial matrix is already self-scaled).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from pinn.errors import ConfigError, require_int
from pinn.settings import setting
from pinn.training.optim.bfgs import BFGS, UPDATES
from pinn.training.optim.quasi_newton import TRANSFORMS
from pinn.training.phases.base import check_stop_keys
from pinn.training.phases.quasi_newton import QuasiNewtonPhase

if TYPE_CHECKING:
    from pinn.training.state import RunState


@dataclass
class BFGSSettings:
    """The block `trainer.bfgs`.

    Attributes:
        steps: iterations (>= 0).
        update: how the inverse Hessian learns from a step (`pinn.training.optim.bfgs`):
            "ssbroyden" (self-scaled Broyden, the default), "ssbfgs" (self-scaled BFGS) or
            "bfgs".
        loss_transform: what the iterations minimise: "none" (the loss), "sqrt" (its square
            root) or "log" (its logarithm); history rows and stop rules use the loss itself.
        tolerance, stall_window, stall_decrease, resample_every, refine_every: as L-BFGS's
            (`LBFGSSettings`). The inverse Hessian is kept across a redraw or refinement, and
            across an update of the point weights.
        max_parameters: the most parameters (P) the dense P x P inverse Hessian is made for.
    """

    steps: int = setting(1000, "BFGS iterations (0 = none)")
    update: str = setting(
        "ssbroyden", "inverse Hessian update: ssbroyden (self-scaled Broyden), ssbfgs or bfgs"
    )
    loss_transform: str = setting(
        "none", "minimise the loss (none), its square root (sqrt) or its logarithm (log)"
    )
    tolerance: float = setting(
        0.0, "stop once an iteration lowers the loss by less than this fraction (0 = never)"
    )
    stall_window: int = setting(100, "stop once this many iterations together ...")
    stall_decrease: float = setting(
        1e-3, "... lowered the loss by less than this fraction (window 0 = never)"
    )
    resample_every: int = setting(
        0, "iterations between redraws of the training points (0 = never)"
    )
    refine_every: int = setting(
        0, "iterations between refinements of the points by residual (refinement.method; 0 = never)"
    )
    max_parameters: int = setting(
        10000, "refuse networks with more parameters (the inverse Hessian holds P² float64s)"
    )

    def __post_init__(self) -> None:
        check_stop_keys("bfgs", self, ("tolerance",))
        require_int("trainer.bfgs.max_parameters", self.max_parameters, minimum=1)
        for key, allowed in (("update", UPDATES), ("loss_transform", TRANSFORMS)):
            if getattr(self, key) not in allowed:
                raise ConfigError(
                    f"trainer.bfgs.{key} must be one of {', '.join(allowed)}, got "
                    f"{getattr(self, key)!r}"
                )


class BFGSPhase(QuasiNewtonPhase):
    """Dense (self-scaled) BFGS for what is left of `settings.steps`."""

    name = "bfgs"
    title = "BFGS"
    settings_type = BFGSSettings

    def check(self, state: RunState) -> None:
        size = sum(p.numel() for p in state.parameters)
        if size > self.settings.max_parameters:
            megabytes = 8 * size * size / 1e6
            raise ConfigError(
                f"trainer.phases has bfgs, whose dense inverse Hessian would hold {size}² "
                f"float64 numbers ({megabytes:,.1f} MB) for this network's {size} parameters, "
                f"above trainer.bfgs.max_parameters={self.settings.max_parameters}: use lbfgs "
                "(limited memory), a smaller network, or raise trainer.bfgs.max_parameters"
            )

    def make_optimizer(self, state: RunState) -> BFGS:
        return BFGS(state.parameters, self.settings)
