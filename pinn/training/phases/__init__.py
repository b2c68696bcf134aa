"""The phases of a run: training methods run one after the other, as `trainer.phases` lists.

    trainer.phases: [adam, lbfgs]        # the default: Adam, then L-BFGS on the last points
    phase_class("lbfgs")                 # LBFGSPhase, or a ConfigError naming the known phases

Each is a `Phase` (pinn.training.phases.base) in its own module, with its settings dataclass
(the block `trainer.<name>` of the config). A phase may appear more than once in the list
([adam, lbfgs, adam]); each time it runs its whole budget with the same settings block.

Adding an optimiser, say Gauss-Newton (an algorithm module such as
pinn/training/levenberg_marquardt.py doing the steps):

1. pinn/training/phases/gauss_newton.py: `GaussNewtonSettings` (a dataclass with `steps`
   and its own keys, checked in `__post_init__`) and `GaussNewtonPhase(Phase)` with `name`,
   `settings_type`, `run(state, parts, saved)` and `state_dict()` (see adam.py, lbfgs.py).
2. One line in `PHASES` below, and its settings block as a field of `TrainSettings`
   (`gauss_newton: GaussNewtonSettings = field(default_factory=GaussNewtonSettings)`).
3. Its block in conf/trainer/default.yaml, each key with its comment (`--help` reads them).
"""

from __future__ import annotations

from pinn.errors import ConfigError
from pinn.training.phases.adam import AdamPhase, AdamSettings
from pinn.training.phases.base import Phase
from pinn.training.phases.lbfgs import LBFGSPhase, LBFGSSettings

PHASES: dict[str, type[Phase]] = {
    AdamPhase.name: AdamPhase,
    LBFGSPhase.name: LBFGSPhase,
}


def phase_class(name: object) -> type[Phase]:
    """The registered phase called `name`."""
    if name not in PHASES:
        raise ConfigError(
            f"trainer.phases: {name!r} is no phase; choose from {', '.join(PHASES)}, "
            "e.g. trainer.phases=[adam,lbfgs]"
        )
    return PHASES[name]


__all__ = ["PHASES", "AdamPhase", "AdamSettings", "LBFGSPhase", "LBFGSSettings", "Phase"]
