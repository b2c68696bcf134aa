"""`TrainSettings`: how `pinn.fit` trains, every field checked when it is made."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from pinn.errors import ConfigError, require_int
from pinn.training.compiling import check_compile
from pinn.training.schedules import check_schedule
from pinn.training.weighting import LossWeights


@dataclass
class TrainSettings:
    """How to train. Every field has the same name under `trainer.` in the config.

    Attributes:
        steps: Adam steps (>= 0).
        lr: Adam's initial learning rate (> 0).
        lr_decay: the learning rate falls to lr * lr_decay by the last Adam step.
        schedule: how it falls, "exponential", "cosine" or "constant" (`pinn.training.schedules`).
        lbfgs_steps: L-BFGS iterations after Adam (>= 0), on the last points drawn.
        lbfgs_tolerance: stop L-BFGS after the first iteration that lowers the loss by less
            than this fraction of it (0 = run all `lbfgs_steps`); it also stops when its line
            search finds no lower loss.
        lbfgs_stall_window, lbfgs_stall_decrease: stop L-BFGS once the last
            `lbfgs_stall_window` iterations together lowered the loss by less than
            `lbfgs_stall_decrease` of it: a plateau that would only burn the clock (a window of 0
            = never).
        resample_every: Adam steps between redraws of the points; 0 draws them once.
        weighting: "fixed" (the weights given to `fit`) or "lra", learning-rate annealing
            (`pinn.training.weighting`): during Adam, every `weighting_every` steps, the
            condition and data terms' weights move towards balancing their gradients with the
            residual's, by `new = (1 - weighting_alpha) old + weighting_alpha estimate`.
            L-BFGS keeps the last weights.
        log_every: Adam steps between rows of the history (L-BFGS: one row per iteration), and
            steps between rel_l2 values, progress-bar updates and L-BFGS chunks.
        checkpoint_every: steps between checkpoints; 0 writes one only at the end.
        progress: show a tqdm progress bar.
        compile: "auto", "true" or "false": compile each step's loss (Taylor passes,
            residuals, conditions, weighted sum) and its backward with `torch.compile`
            (`pinn.training.compiling`). "auto" compiles when the run allows it and is long
            enough to repay the compile time; the run logs what it decided and why.
    """

    steps: int = 1000
    lr: float = 1e-3
    lr_decay: float = 0.1
    schedule: str = "exponential"
    lbfgs_steps: int = 1000
    lbfgs_tolerance: float = 0.0
    lbfgs_stall_window: int = 100
    lbfgs_stall_decrease: float = 1e-3
    resample_every: int = 0
    weighting: str = "fixed"
    weighting_every: int = 100
    weighting_alpha: float = 0.1
    log_every: int = 100
    checkpoint_every: int = 500
    progress: bool = True
    compile: str = "auto"

    def __post_init__(self) -> None:
        for key in (
            "steps",
            "lbfgs_steps",
            "lbfgs_stall_window",
            "resample_every",
            "checkpoint_every",
        ):
            require_int(f"trainer.{key}", getattr(self, key), minimum=0)
        require_int("trainer.log_every", self.log_every, minimum=1)
        for key in ("lr", "lr_decay"):
            value = getattr(self, key)
            if not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
                raise ConfigError(f"trainer.{key} must be a number > 0, got {value!r}")
        check_schedule(self.schedule)
        self.compile = check_compile(self.compile)
        LossWeights({}, self.weighting, self.weighting_every, self.weighting_alpha)  # checks
        for key in ("lbfgs_tolerance", "lbfgs_stall_decrease"):
            fraction = getattr(self, key)
            if not isinstance(fraction, (int, float)) or not 0 <= fraction < 1:
                raise ConfigError(f"trainer.{key} must be in [0, 1), got {fraction!r}")


# What may differ between a run and its resumption: neither changes a single number.
FREE_SETTINGS = ("progress", "checkpoint_every")


def shaping(settings: TrainSettings) -> dict[str, Any]:
    """The settings that shape the result: all but progress and checkpoint_every."""
    return {k: v for k, v in vars(settings).items() if k not in FREE_SETTINGS}
