"""The run directory's rules: one run per directory, one process writing it at a time.

    with claim_run_dir(run_dir, overwrite=False, resuming_in_place=False):
        ...   # train and write the outputs; the lock is held until the block ends

    check_run_dir(run_dir, overwrite, resuming_in_place)   # the same refusals, nothing held or
                                                           # removed: before Hydra writes there

- A directory holding another run's results (any of `RESULT_NAMES`) is refused, unless
  `overwrite` (the earlier run's files are removed first, so the directory never mixes two
  runs) or the run resumes in place (`resume=DIR hydra.run.dir=DIR`).
- A lock (`fcntl.flock` on `LOCK_NAME` in the directory) is held while the run lives; a second
  run into the same directory is refused. The OS releases it when the holder ends or dies.
- A directory that cannot be created or written is refused before any work.
"""

from __future__ import annotations

import fcntl
import logging
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.errors import HydraException

from pinn.errors import OutputError, RunDirectoryError, reason
from pinn.run.resume import checkpoint_file

LOCK_NAME = ".pinn.lock"
# What marks a directory as holding a run's results.
RESULT_NAMES = ("config.yaml", "metrics.json", "checkpoint.pt", "history.csv")
# What `overwrite` removes: every file a run writes (glob patterns), Hydra's .hydra/ excepted.
RUN_FILES = (
    *RESULT_NAMES,
    "prediction.npz",
    "prediction*.vtu",
    "prediction*.pvd",
    "solution.*",
    "loss.*",
    "status.json",
    "tensorboard",
    ".checkpoint.pt.*.tmp",
)


@contextmanager
def claim_run_dir(
    run_dir: str | Path, overwrite: bool = False, resuming_in_place: bool = False
) -> Iterator[Path]:
    """Hold `run_dir` for one run (created if missing): see the module's rules.

    Raises:
        OutputError: the directory cannot be created or written.
        RunDirectoryError: another run holds the lock, or its results are there (and neither
            `overwrite` nor `resuming_in_place`).
    """
    run_dir = Path(run_dir)
    lock = _open_lock(run_dir)
    try:
        _lock(lock, run_dir)
        if not resuming_in_place and _earlier_results(run_dir, overwrite):
            remove_run_files(run_dir)
        yield run_dir
    finally:
        lock.close()  # releases the lock


def check_run_dir(
    run_dir: str | Path, overwrite: bool = False, resuming_in_place: bool = False
) -> None:
    """Refuse `run_dir` as `claim_run_dir` would, holding nothing and removing nothing.

    The CLI calls it before Hydra starts: Hydra writes .hydra/ and its log into the run
    directory before `train` claims it, so a refused run would leave its config in the earlier
    run's folder (or fail inside Hydra on a directory it cannot create).

    Raises:
        OutputError, RunDirectoryError: as `claim_run_dir`.
    """
    with claim_run_dir(run_dir, overwrite=False, resuming_in_place=True) as claimed:
        if not resuming_in_place:
            _earlier_results(claimed, overwrite)


def _earlier_results(run_dir: Path, overwrite: bool) -> list[str]:
    """The results of an earlier run in `run_dir` (`RESULT_NAMES` there), refused unless
    `overwrite`."""
    earlier = [name for name in RESULT_NAMES if (run_dir / name).exists()]
    if earlier and not overwrite:
        raise RunDirectoryError(
            f"{run_dir} holds the results of another run ({', '.join(earlier)}); "
            "write this one elsewhere (leave hydra.run.dir at its default, or give a new "
            f"one), continue that run with resume={run_dir}, or replace it with "
            "overwrite=true"
        )
    return earlier


def remove_run_files(run_dir: Path) -> None:
    """Remove the files a run wrote into `run_dir` (`RUN_FILES`), nothing else, and empty the
    log files this process appends to there (Hydra's `<job>.log`, opened before the run
    starts, which hold the earlier run's lines)."""
    for pattern in RUN_FILES:
        for path in run_dir.glob(pattern):
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink()
    for handler in _file_handlers_in(run_dir):
        with _held(handler):
            if handler.stream is not None:
                handler.stream.seek(0)
                handler.stream.truncate()
            else:  # opened at the first record (delay=True): empty the file itself
                Path(handler.baseFilename).write_text("")


def _file_handlers_in(run_dir: Path) -> list[logging.FileHandler]:
    """The logging file handlers of this process whose files lie directly in `run_dir`."""
    loggers = [logging.getLogger(), *logging.Logger.manager.loggerDict.values()]
    handlers = {
        handler
        for logger in loggers
        if isinstance(logger, logging.Logger)
        for handler in logger.handlers
        if isinstance(handler, logging.FileHandler)
    }
    folder = run_dir.resolve()
    return [h for h in handlers if Path(h.baseFilename).resolve().parent == folder]


@contextmanager
def _held(handler: logging.Handler) -> Iterator[None]:
    handler.acquire()
    try:
        yield
    finally:
        handler.release()


def _open_lock(run_dir: Path):
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
        return open(run_dir / LOCK_NAME, "a+")
    except OSError as error:
        raise OutputError(
            f"the run directory {run_dir} cannot be written: {reason(error)}; choose another "
            "hydra.run.dir"
        ) from error


def _lock(lock, run_dir: Path) -> None:
    """Take the lock without waiting, and leave this process's id in the file."""
    try:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        lock.seek(0)
        holder = lock.read().strip() or "unknown"
        raise RunDirectoryError(
            f"another run (process {holder}) is writing into {run_dir} right now; wait for it "
            "to end, or write this one elsewhere (leave hydra.run.dir at its default)"
        ) from None
    try:
        lock.seek(0)
        lock.truncate()
        lock.write(f"{os.getpid()}\n")
        lock.flush()
    except OSError as error:
        raise OutputError(
            f"the run directory {run_dir} cannot be written: {reason(error)}; choose another "
            "hydra.run.dir"
        ) from error


def check_cli_run_dir(arguments: list[str]) -> None:
    """`check_run_dir` for a single run's command line (`hydra.run.dir=DIR`, `overwrite=`,
    `resume=` among `arguments`), before Hydra writes anything into DIR.

    Nothing is checked for a sweep or Hydra's flags (`-m`, `--help`, ...), nor without
    `hydra.run.dir=` (the default directory is new: `train` still claims it), nor for
    overrides Hydra cannot parse (Hydra reports those itself)."""
    if any(argument.startswith("-") for argument in arguments):
        return
    try:
        overrides = OverridesParser.create().parse_overrides(arguments)
    except HydraException:
        return
    given = {o.key_or_group: o.value() for o in overrides if not o.is_delete()}
    run_dir = given.get("hydra.run.dir")
    if not isinstance(run_dir, str):
        return
    resume = given.get("resume")
    in_place = isinstance(resume, str) and (
        checkpoint_file(resume).parent.resolve() == Path(run_dir).resolve()
    )
    check_run_dir(run_dir, given.get("overwrite") is True, in_place)
