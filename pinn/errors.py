"""The errors `pinn` raises for the user to read: each says what was wrong and how to fix it."""

import math

import torch


class PinnError(Exception):
    """Base class of every error raised by pinn on purpose."""


class ConfigError(PinnError, ValueError):
    """A configuration value or argument is invalid; raised before any work is done."""


class NotPointwiseError(PinnError, ValueError):
    """A model couples the points of a batch, so per-point derivatives would be wrong."""


class CheckpointError(PinnError, ValueError):
    """A file is not a readable pinn checkpoint, or not one of this run."""


class TrainingDiverged(PinnError, RuntimeError):
    """The loss became NaN or infinite; the last good checkpoint is kept on disk."""


def first_line(error: Exception) -> str:
    """The first line of an exception's message ("" for an empty one), for a one-line report."""
    text = str(error).strip()
    return text.splitlines()[0] if text else ""


def is_finite_number(value: object) -> bool:
    """Whether `value` is a finite int or float (a bool is not a number here)."""
    is_number = isinstance(value, (int, float)) and not isinstance(value, bool)
    return is_number and math.isfinite(value)


def require_int(key: str, value: object, minimum: int) -> None:
    """Refuse `value` unless it is a whole number >= `minimum`, naming the config `key`."""
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise ConfigError(f"{key} must be a whole number >= {minimum}, got {value!r}")


def validating() -> bool:
    """Whether checks that read tensor values should run: always, except while `torch.compile`
    traces a training step (there they would split the graph; the eager first step of every
    run has already made them)."""
    return not torch.compiler.is_compiling()
