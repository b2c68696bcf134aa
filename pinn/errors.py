"""The errors `pinn` raises for the user to read: each says what was wrong and how to fix it."""

import contextlib
import math
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import TypeVar

import torch

T = TypeVar("T")

_TRUSTED: ContextVar[bool] = ContextVar("pinn_trusted", default=False)


class PinnError(Exception):
    """Base class of every error raised by pinn on purpose."""


class ConfigError(PinnError, ValueError):
    """A configuration value or argument is invalid; raised before any work is done."""


class NotPointwiseError(PinnError, ValueError):
    """A model couples the points of a batch, so per-point derivatives would be wrong."""


class UnknownNameError(PinnError, KeyError):
    """A residual, condition or quantity asks a field for an input or output the problem does
    not have (`u("w")`, `u.d("z")`)."""

    def __str__(self) -> str:
        return Exception.__str__(self)  # KeyError's would put the message in quotes


class IndexOutOfRangeError(PinnError, IndexError):
    """A field is asked for an input or output by an index past the problem's."""


class CheckpointError(PinnError, ValueError):
    """A file is not a readable pinn checkpoint, or not one of this run."""


class TrainingDiverged(PinnError, RuntimeError):
    """The loss became NaN or infinite; the last good checkpoint is kept on disk."""


class OutputError(PinnError):
    """A file of the run could not be written (no permission, disk full, not a directory)."""


class RunDirectoryError(PinnError):
    """The run directory holds another run's results, or another run is writing into it."""


class TrainingInterrupted(PinnError):
    """SIGINT or SIGTERM stopped training at a step boundary, its state checkpointed.

    `signal`: the signal's number; `step`: the step the checkpoint resumes at; `exit_code`:
    what a shell reports for a process the signal ended (128 + the number: 130, 143)."""

    def __init__(self, message: str, signal: int, step: int):
        super().__init__(message)
        self.signal, self.step = signal, step
        self.exit_code = 128 + signal


def naming_where(where: str, call: Callable[[], T]) -> T:
    """`call()`, its unknown input or output names (`u("w")`) said with `where` they were
    asked for (a residual, a condition): the field that raises knows only the names it has."""
    try:
        return call()
    except (UnknownNameError, IndexOutOfRangeError) as error:
        raise type(error)(f"{where}: {error}") from None


def first_line(error: Exception) -> str:
    """The first line of an exception's message ("" for an empty one), for a one-line report."""
    text = str(error).strip()
    return text.splitlines()[0] if text else ""


def reason(error: BaseException) -> str:
    """Why a write failed, in words: the OS's ("No space left on device"), or torch's first
    line with what it means ("unexpected pos ..." is how torch.save reports a full disk)."""
    if isinstance(error, OSError) and error.strerror:
        return error.strerror
    text = first_line(error) or type(error).__name__
    if "unexpected pos" in text:
        return f"{text} (torch could not write the whole file: is the disk full?)"
    return text


def is_finite_number(value: object) -> bool:
    """Whether `value` is a finite int or float (a bool is not a number here)."""
    is_number = isinstance(value, (int, float)) and not isinstance(value, bool)
    return is_number and math.isfinite(value)


def require_int(key: str, value: object, minimum: int) -> None:
    """Refuse `value` unless it is a whole number >= `minimum`, naming the config `key`."""
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise ConfigError(f"{key} must be a whole number >= {minimum}, got {value!r}")


def require_positive(key: str, value: object) -> None:
    """Refuse `value` unless it is a finite number > 0 (not a bool), naming the config `key`."""
    if not (is_finite_number(value) and value > 0):
        raise ConfigError(f"{key} must be a number > 0, got {value!r}")


def validating() -> bool:
    """Whether checks that read tensor values should run: always, except while `torch.compile`
    traces a training step (there they would split the graph; the eager first step of every
    run has already made them) and inside `trusting()` (the eager steps between logged rows:
    on a GPU each such check makes the host wait for the device, `pinn.syncs`)."""
    return not (torch.compiler.is_compiling() or _TRUSTED.get())


@contextlib.contextmanager
def trusting(trusted: bool = True) -> Iterator[None]:
    """Inside (when `trusted`), `validating()` is False: the checks that read tensor values
    are skipped, as in a compiled step. The phases trust the steps between logged rows, whose
    batches have the shapes and parts of a step already checked; what only the values show (a
    predicate's mask that selects no point of a new batch) is caught by the next logged row's
    checks or the divergence watch."""
    token = _TRUSTED.set(trusted)
    try:
        yield
    finally:
        _TRUSTED.reset(token)
