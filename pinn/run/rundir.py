"""The run directory's rules: one run per directory, one process writing it at a time.

    with claim_run_dir(run_dir, overwrite=False, resuming_in_place=False):
        ...   # train and write the outputs; the lock is held until the block ends

- A directory holding another run's results (any of `RESULT_NAMES`) is refused, unless
  `overwrite` (the earlier run's files are removed first, so the directory never mixes two
  runs) or the run resumes in place (`resume=DIR hydra.run.dir=DIR`).
- A lock (`fcntl.flock` on `LOCK_NAME` in the directory) is held while the run lives; a second
  run into the same directory is refused. The OS releases it when the holder ends or dies.
- A directory that cannot be created or written is refused before any work.
"""

from __future__ import annotations

import fcntl
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pinn.errors import OutputError, RunDirectoryError, reason

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
        if not resuming_in_place:
            earlier = [name for name in RESULT_NAMES if (run_dir / name).exists()]
            if earlier and not overwrite:
                raise RunDirectoryError(
                    f"{run_dir} holds the results of another run ({', '.join(earlier)}); "
                    "write this one elsewhere (leave hydra.run.dir at its default, or give a new "
                    f"one), continue that run with resume={run_dir}, or replace it with "
                    "overwrite=true"
                )
            if earlier:
                remove_run_files(run_dir)
        yield run_dir
    finally:
        lock.close()  # releases the lock


def remove_run_files(run_dir: Path) -> None:
    """Remove the files a run wrote into `run_dir` (`RUN_FILES`), nothing else."""
    for pattern in RUN_FILES:
        for path in run_dir.glob(pattern):
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink()


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
