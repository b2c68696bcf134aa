"""Adam's learning-rate schedules, from `lr` at step 0 to `lr * lr_decay` at step `steps`.

    exponential  lr * lr_decay ** (t / steps)                                (the default)
    cosine       lr * (lr_decay + (1 - lr_decay) * (1 + cos(pi * t / steps)) / 2)
    linear       lr * (lr_decay + (1 - lr_decay) * (1 - t / steps))
    constant     lr

Each is a torch LR scheduler, so its state goes into a checkpoint with `state_dict()`.
"""

from __future__ import annotations

import math

import torch

from pinn.errors import ConfigError

SCHEDULES = ("exponential", "cosine", "linear", "constant")


def check_schedule(name: object) -> None:
    """Refuse an unknown schedule name, listing the known ones."""
    if name not in SCHEDULES:
        raise ConfigError(
            f"trainer.adam.schedule={name!r} is unknown; choose one of {', '.join(SCHEDULES)}"
        )


def adam_schedule(
    optimizer: torch.optim.Optimizer, name: str, steps: int, lr_decay: float
) -> torch.optim.lr_scheduler.LRScheduler:
    """The scheduler `name` for `steps` Adam steps: step it once after each optimiser step."""
    check_schedule(name)
    if name == "exponential":
        return torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=lr_decay ** (1 / steps))
    if name == "cosine":

        def factor(step: int) -> float:
            return lr_decay + (1 - lr_decay) * (1 + math.cos(math.pi * step / steps)) / 2

    elif name == "linear":

        def factor(step: int) -> float:
            return lr_decay + (1 - lr_decay) * (1 - step / steps)

    else:

        def factor(step: int) -> float:
            return 1.0

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)
