"""`TrainSettings`: how `pinn.fit` trains, every field checked when it is made.

    TrainSettings()                     # the defaults: Adam, then L-BFGS
    TrainSettings(adam=AdamSettings(steps=2000), lbfgs=LBFGSSettings(steps=500))
    TrainSettings(phases=["adam"], adam={"steps": 5000, "lr": 3e-3}, log_every=50)

A phase's block may be given as its settings dataclass or as a dict of its keys.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pinn.errors import ConfigError, require_int
from pinn.problem.causal import CausalSettings
from pinn.problem.point_weights import PointWeightSettings
from pinn.settings import setting
from pinn.training.compiling import check_compile
from pinn.training.phases import (
    PHASES,
    AdamSettings,
    BFGSSettings,
    GaussNewtonSettings,
    KFACSettings,
    LBFGSSettings,
    phase_class,
)
from pinn.training.strategies.weighting import LossWeights


@dataclass
class TrainSettings:
    """How to train. Every field has the same name under `trainer.` in the config.

    Attributes:
        phases: the training methods, run in this order (`pinn.training.phases`): "adam",
            "lbfgs", "gauss_newton", "bfgs", "kfac"; each has its settings block, the field of its
            name (a dict of its keys is taken too). A phase of 0 steps is skipped.
        adam: `AdamSettings` (steps, lr, lr_decay, schedule, resample_every, refine_every).
        lbfgs: `LBFGSSettings` (steps, tolerance, stall_window, stall_decrease, history_size,
            resample_every, refine_every).
        gauss_newton: `GaussNewtonSettings` (steps, damping, line_search, solver, max_tries,
            stall_window, stall_decrease, dense_limit, cg_iterations, preconditioner,
            sketch_size, resample_every, refine_every, adapt_damping).
        kfac: `KFACSettings` (steps, approximation, damping, ema, step_rule, line_search,
            max_tries, stall_window, stall_decrease, resample_every, refine_every).
        bfgs: `BFGSSettings` (steps, update, loss_transform, tolerance, stall_window,
            stall_decrease, resample_every, refine_every, max_parameters). Every phase's
            `refine_every` refines its points by residual (`refinement.method`) at that
            interval, 0 never.
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
        point_weights: `PointWeightSettings` (method, gamma, eta, initial, every, temperature),
            or a dict of its keys: residual-based attention (`pinn.problem.point_weights`), a
            weight λ per interior point of each PDE term, updated every `every` steps of any
            phase from the residual by λ <- gamma λ + eta target (rba: |r| / max|r|; vrba:
            the variational form's exponential density); each PDE term becomes mean (λ r)^2
            (a product with the causal and term weights; Gauss-Newton's rows are λ r); the
            history rows carry attention_mean_weight and attention_max_weight. method none (the
            default) is off.
        log_every: Adam steps between rows of the history, from each Adam phase's first step
            (L-BFGS: one row per iteration), and steps between rel_l2 values, progress-bar
            updates and L-BFGS chunks.
        checkpoint_every: steps between checkpoints; 0 writes one only at the end.
        progress: show a tqdm progress bar.
        compile: "auto", "true", "false" or "reduce-overhead": compile each step's loss
            (Taylor passes, residuals, conditions, weighted sum) and its backward with
            `torch.compile` (`pinn.training.compiling`). "auto" compiles when the run allows it
            and is long enough to repay the compile time; the run logs what it decided and
            why. "reduce-overhead" compiles as "true" does and, on cuda, records the step as
            CUDA graphs (for small networks, whose steps are launch-bound on a GPU); on another
            device it compiles without them and says so.
    """

    phases: list[str] = setting(
        help="training methods in order: adam, lbfgs, gauss_newton, bfgs, kfac (a phase may "
        "repeat; 0 steps = skipped)",
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
    kfac: KFACSettings = setting(
        help="KFAC: Gauss-Newton steps with Kronecker-factored curvature per Linear layer",
        factory=KFACSettings,
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
    point_weights: PointWeightSettings = setting(
        help="residual-based attention (RBA, vRBA): a weight per PDE point, large where the "
        "residual stays large",
        factory=PointWeightSettings,
    )
    log_every: int = setting(
        100,
        "steps between history rows (L-BFGS: a row per iteration); rel_l2, progress bar",
    )
    checkpoint_every: int = setting(500, "steps between checkpoints (0 = only at the end)")
    progress: bool = setting(True, "show the tqdm progress bar")
    compile: str = setting(
        "auto",
        "compile each step's loss with torch.compile: auto (runs that allow it, of 10000 steps "
        "of Adam, L-BFGS or BFGS on a CPU, 1000 on a GPU), true, false, reduce-overhead "
        "(true, and CUDA graphs on cuda)",
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
        self.causal = _block_of(CausalSettings, "causal", self.causal)
        self.point_weights = _block_of(PointWeightSettings, "point_weights", self.point_weights)
        require_int("trainer.checkpoint_every", self.checkpoint_every, minimum=0)
        require_int("trainer.log_every", self.log_every, minimum=1)
        self.compile = check_compile(self.compile)
        LossWeights({}, self.weighting, self.weighting_every, self.weighting_alpha)  # checks

    def block(self, phase: str) -> Any:
        """The settings block of the phase called `phase`."""
        return getattr(self, phase)

    def planned_steps(self) -> int:
        """The steps the phase list plans (each phase's budget)."""
        return sum(self.block(p).steps for p in self.phases)

    def step_loss_steps(self) -> tuple[int, list[str]]:
        """(steps, phases): the planned steps of the phases that evaluate the batch's loss
        (Adam, L-BFGS, BFGS: what `trainer.compile` compiles), and those phases' names."""
        names = [p for p in dict.fromkeys(self.phases) if PHASES[p].evaluates_step_loss]
        return sum(self.block(p).steps for p in self.phases if p in names), names


def _settings_of(settings_type: type, name: str, block: dict[str, Any]) -> Any:
    """`settings_type(**block)`, a key it does not have refused naming the keys it has."""
    known = [f.name for f in dataclasses.fields(settings_type)]
    unknown = sorted(set(block) - set(known))
    if unknown:
        raise ConfigError(
            f"trainer.{name} has no key {', '.join(unknown)}; its keys are {', '.join(known)}"
        )
    return settings_type(**block)


def _block_of(settings_type: type, name: str, block: Any) -> Any:
    """`trainer.<name>` as `settings_type` (a dict of its keys is taken), checked."""
    if isinstance(block, settings_type):
        return block
    if not isinstance(block, dict):
        keys = ", ".join(f.name for f in dataclasses.fields(settings_type))
        raise ConfigError(
            f"trainer.{name} must be a {settings_type.__name__} or a dict of its keys ({keys}), "
            f"got {block!r}"
        )
    return _settings_of(settings_type, name, block)


def check_refinement(settings: TrainSettings, method: str) -> None:
    """Refuse, in one line, a phase that refines the points by residual (its `refine_every`)
    when `refinement.method` is none."""
    for name in dict.fromkeys(settings.phases):
        every = getattr(settings.block(name), "refine_every", 0)
        if every and method == "none":
            raise ConfigError(
                f"trainer.{name}.refine_every={every} refines the points by their residual, but "
                f"refinement.method=none: choose refinement.method=rad (or rar), or set "
                f"trainer.{name}.refine_every=0"
            )


def unused_refinement(settings: TrainSettings, method: str) -> str | None:
    """What to warn of when `refinement.method` is set but no phase of `settings.phases`
    refines by it (a problem's yaml refines in a phase the command line took out: harmless, the
    points are then drawn only), or None."""
    listed = list(dict.fromkeys(settings.phases))
    if method == "none" or any(getattr(settings.block(name), "refine_every", 0) for name in listed):
        return None
    return (
        f"refinement.method={method}, but no phase of trainer.phases=[{','.join(listed)}] "
        f"refines the points: give one a refine_every, e.g. trainer.{listed[0]}.refine_every="
        "100, to refine them"
    )


# What may differ between a run and its resumption: neither changes a single number.
FREE_SETTINGS = ("progress", "checkpoint_every")


# Blocks written into `shaping` only when on: a checkpoint written before they existed resumes.
SWITCHED_BLOCKS = ("causal", "point_weights")


def shaping(settings: TrainSettings) -> dict[str, Any]:
    """The settings that shape the result: all but progress and checkpoint_every (the phase
    blocks as dicts). `causal` and `point_weights` only when on, so that a checkpoint written
    before they existed still resumes (off, they change no number)."""
    return {
        key: dataclasses.asdict(value) if dataclasses.is_dataclass(value) else value
        for key, value in vars(settings).items()
        if key not in FREE_SETTINGS and not (key in SWITCHED_BLOCKS and not value.on)
    }


def saved_shaping(training: Mapping[str, Any]) -> dict[str, Any]:
    """A checkpoint's `shaping` settings (its "training" entry's) as this pinn writes them:
    a phase block without `refine_every` (written before each phase had one) gets what its run
    did, 0, but Adam the interval its points were refined at, then `refinement.every`, saved
    with the sampler's refinement settings."""
    settings = dict(training["settings"])
    refined = (training.get("sampler") or {}).get("refinement") or {}
    for name in PHASES:
        block = settings.get(name)
        if isinstance(block, Mapping) and "refine_every" not in block:
            every = refined.get("every", 0) if name == "adam" else 0
            settings[name] = {**block, "refine_every": every}
    return settings
