"""`TrainSettings`: how `pinn.fit` trains, every field checked when it is made.

    TrainSettings()                     # the defaults: Adam, then L-BFGS
    TrainSettings(adam=AdamSettings(steps=2000), lbfgs=LBFGSSettings(steps=500))
    TrainSettings(phases=["adam"], adam={"steps": 5000, "lr": 3e-3}, log_every=50)

A phase's block may be given as its settings dataclass or as a dict of its keys.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from pinn.errors import ConfigError, require_int
from pinn.problem.causal import CausalSettings
from pinn.settings import setting
from pinn.training.compiling import check_compile
from pinn.training.phases import (
    PHASES,
    AdamSettings,
    BFGSSettings,
    GaussNewtonSettings,
    LBFGSSettings,
    phase_class,
)
from pinn.training.strategies.weighting import LossWeights


@dataclass
class TrainSettings:
    """How to train. Every field has the same name under `trainer.` in the config.

    Attributes:
        phases: the training methods, run in this order (`pinn.training.phases`): "adam",
            "lbfgs", "gauss_newton", "bfgs"; each has its settings block, the field of its name (a
            dict of its keys is taken too). A phase of 0 steps is skipped.
        adam: `AdamSettings` (steps, lr, lr_decay, schedule, resample_every).
        lbfgs: `LBFGSSettings` (steps, tolerance, stall_window, stall_decrease, history_size).
        gauss_newton: `GaussNewtonSettings` (steps, damping, line_search, solver, max_tries,
            stall_window, stall_decrease, dense_limit, cg_iterations).
        bfgs: `BFGSSettings` (steps, update, loss_transform, tolerance, stall_window,
            stall_decrease, resample_every, max_parameters).
        weighting: "fixed" (the weights given to `fit`) or "lra", learning-rate annealing
            (`pinn.training.strategies.weighting`): during Adam, every `weighting_every` steps, the
            condition and data terms' weights move towards balancing their gradients with the
            residual's, by `new = (1 - weighting_alpha) old + weighting_alpha estimate`.
            L-BFGS keeps the last weights.
        causal: `CausalSettings` (chunks, tolerance, time), or a dict of its keys: causal
            weighting in time (`pinn.problem.causal`). With chunks = M > 0 the PDE residual's
            points are split into M equal intervals of the time coordinate `time`, and each
            PDE term becomes (1/M') sum_i w_i L_i, L_i the mean square over chunk i, w_i =
            exp(-tolerance sum_{k<i} L_k) (detached; the equations of a system summed in L_k),
            M' the chunks holding points: every phase minimises it (Gauss-Newton's rows are
            scaled alike), and the history rows carry causal_min_weight and
            causal_mean_weight. 0 chunks (the default) is off.
        log_every: Adam steps between rows of the history, from each Adam phase's first step
            (L-BFGS: one row per iteration), and steps between rel_l2 values, progress-bar
            updates and L-BFGS chunks.
        checkpoint_every: steps between checkpoints; 0 writes one only at the end.
        progress: show a tqdm progress bar.
        compile: "auto", "true" or "false": compile each step's loss (Taylor passes,
            residuals, conditions, weighted sum) and its backward with `torch.compile`
            (`pinn.training.compiling`). "auto" compiles when the run allows it and is long
            enough to repay the compile time; the run logs what it decided and why.
    """

    phases: list[str] = setting(
        help="training methods in order: adam, lbfgs, gauss_newton, bfgs (a phase may repeat; "
        "0 steps = skipped)",
        factory=lambda: ["adam", "lbfgs"],
    )
    adam: AdamSettings = setting(help="Adam with a decaying learning rate", factory=AdamSettings)
    lbfgs: LBFGSSettings = setting(
        help="L-BFGS on the last points drawn, strong Wolfe line search", factory=LBFGSSettings
    )
    gauss_newton: GaussNewtonSettings = setting(
        help="Levenberg-Marquardt on the last points drawn: the loss as a sum of squared rows",
        factory=GaussNewtonSettings,
    )
    bfgs: BFGSSettings = setting(
        help="dense (self-scaled) BFGS on the last points drawn, strong Wolfe line search",
        factory=BFGSSettings,
    )
    weighting: str = setting(
        "fixed", "loss weights: fixed (problem.weights) or lra (learning-rate annealing, Adam only)"
    )
    weighting_every: int = setting(100, "lra: Adam steps between weight updates")
    weighting_alpha: float = setting(0.1, "lra: new weight = (1 - alpha) old + alpha estimate")
    causal: CausalSettings = setting(
        help="causal weighting in time (Wang et al. 2022): later times wait for earlier ones",
        factory=CausalSettings,
    )
    log_every: int = setting(
        100,
        "steps between history rows (L-BFGS: a row per iteration); rel_l2, progress bar",
    )
    checkpoint_every: int = setting(500, "steps between checkpoints (0 = only at the end)")
    progress: bool = setting(True, "show the tqdm progress bar")
    compile: str = setting(
        "auto",
        "compile each step's loss with torch.compile: auto (long Adam runs that allow it), "
        "true, false",
    )

    def __post_init__(self) -> None:
        if isinstance(self.phases, str) or not isinstance(self.phases, (list, tuple)):
            raise ConfigError(
                f"trainer.phases must be a list of phase names, e.g. [adam,lbfgs], got "
                f"{self.phases!r}"
            )
        if not self.phases:
            raise ConfigError("trainer.phases is empty; list at least one, e.g. [adam,lbfgs]")
        self.phases = list(self.phases)
        for name in self.phases:
            phase_class(name)  # a known phase, or refused naming the known ones
        for name, phase in PHASES.items():  # every block, listed in `phases` or not
            block = getattr(self, name)
            if isinstance(block, dict):  # TrainSettings(adam={"steps": 10}), or from the config
                setattr(self, name, _settings_of(phase.settings_type, name, block))
            elif not isinstance(block, phase.settings_type):
                raise ConfigError(
                    f"trainer.{name} must be a {phase.settings_type.__name__} or a dict of its "
                    f"keys, got {block!r}"
                )
        self.causal = _causal_of(self.causal)
        require_int("trainer.checkpoint_every", self.checkpoint_every, minimum=0)
        require_int("trainer.log_every", self.log_every, minimum=1)
        self.compile = check_compile(self.compile)
        LossWeights({}, self.weighting, self.weighting_every, self.weighting_alpha)  # checks

    def block(self, phase: str) -> Any:
        """The settings block of the phase called `phase`."""
        return getattr(self, phase)

    def planned_steps(self, phase: str | None = None) -> int:
        """The steps the phase list plans (each phase's budget), of `phase` only when named."""
        return sum(self.block(p).steps for p in self.phases if phase in (None, p))


def _settings_of(settings_type: type, name: str, block: dict[str, Any]) -> Any:
    """`settings_type(**block)`, a key it does not have refused naming the keys it has."""
    known = [f.name for f in dataclasses.fields(settings_type)]
    unknown = sorted(set(block) - set(known))
    if unknown:
        raise ConfigError(
            f"trainer.{name} has no key {', '.join(unknown)}; its keys are {', '.join(known)}"
        )
    return settings_type(**block)


def _causal_of(block: Any) -> CausalSettings:
    """`trainer.causal` as `CausalSettings` (a dict of its keys is taken), checked."""
    if isinstance(block, CausalSettings):
        return block
    if not isinstance(block, dict):
        raise ConfigError(
            f"trainer.causal must be a CausalSettings or a dict of its keys (chunks, tolerance, "
            f"time), got {block!r}"
        )
    return _settings_of(CausalSettings, "causal", block)


# What may differ between a run and its resumption: neither changes a single number.
FREE_SETTINGS = ("progress", "checkpoint_every")


def shaping(settings: TrainSettings) -> dict[str, Any]:
    """The settings that shape the result: all but progress and checkpoint_every (the phase
    blocks as dicts). `causal` only when on, so that a checkpoint written before it existed
    still resumes (off, it changes no number)."""
    return {
        key: dataclasses.asdict(value) if dataclasses.is_dataclass(value) else value
        for key, value in vars(settings).items()
        if key not in FREE_SETTINGS and not (key == "causal" and not value.on)
    }
