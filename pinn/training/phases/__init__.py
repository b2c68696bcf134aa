"""The phases of a run: training methods run one after the other, as `trainer.phases` lists.

    trainer.phases: [adam, lbfgs]        # the default: Adam, then L-BFGS on the last points
    phase_class("lbfgs")                 # LBFGSPhase, or a ConfigError naming the known phases

Each is a `Phase` (pinn.training.phases.base) in its own module, with its settings dataclass
(the block `trainer.<name>` of the config). A phase may appear more than once in the list
([adam, lbfgs, adam]); each time it runs its whole budget with the same settings block.

Adding an optimiser (gauss_newton.py is the example: the algorithm lives in
pinn/training/optim/levenberg_marquardt.py, the phase only runs it):

1. pinn/training/phases/<name>.py: a settings dataclass with `steps` and its own keys, each
   declared with `pinn.settings.setting(default, help)` (its one home: the config's defaults,
   `--help` and the documentation read it) and checked in `__post_init__`, and a `Phase`
   subclass with `name`, `title`, `settings_type`, `run(state, parts, saved)`,
   `state_dict()`, and `check(state)` where it cannot train every network (bfgs.py: its
   dense matrix). The algorithm itself goes in pinn/training/optim/ and takes the settings
   object, with no defaults of its own.
2. One line in `PHASES` below, and its settings block as a field of `TrainSettings`
   (`<name>: <Name>Settings = setting(help=..., factory=<Name>Settings)`).
"""

from __future__ import annotations

from pinn.errors import ConfigError
from pinn.training.phases.adam import AdamPhase, AdamSettings
from pinn.training.phases.base import Phase
from pinn.training.phases.bfgs import BFGSPhase, BFGSSettings
from pinn.training.phases.gauss_newton import GaussNewtonPhase, GaussNewtonSettings
from pinn.training.phases.kfac import KFACPhase, KFACSettings
from pinn.training.phases.lbfgs import LBFGSPhase, LBFGSSettings

PHASES: dict[str, type[Phase]] = {
    AdamPhase.name: AdamPhase,
    LBFGSPhase.name: LBFGSPhase,
    GaussNewtonPhase.name: GaussNewtonPhase,
    BFGSPhase.name: BFGSPhase,
    KFACPhase.name: KFACPhase,
}


def phase_class(name: object) -> type[Phase]:
    """The registered phase called `name`."""
    if name not in PHASES:
        raise ConfigError(
            f"trainer.phases: {name!r} is no phase; choose from {', '.join(PHASES)}, "
            "e.g. trainer.phases=[adam,lbfgs]"
        )
    return PHASES[name]


__all__ = [
    "PHASES",
    "AdamPhase",
    "AdamSettings",
    "BFGSPhase",
    "BFGSSettings",
    "GaussNewtonPhase",
    "GaussNewtonSettings",
    "KFACPhase",
    "KFACSettings",
    "LBFGSPhase",
    "LBFGSSettings",
    "Phase",
]
