"""Checkpoints: the files, written atomically so a crash mid-write never destroys the last good
one, and when a run writes them (rank 0 writes, every process gathers its part).

    save_checkpoint(path, state); load_checkpoint(path)      # the file, any time
    checkpoints = Checkpoints(path, every=500, extra={"config": ...}, world=world)
    if checkpoints.due(state.step): checkpoints.write(state, loss)
"""

from __future__ import annotations

import os
import pickle
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from pinn.errors import CheckpointError, OutputError, reason
from pinn.training.distributed import World

if TYPE_CHECKING:
    from pinn.training.state import RunState

CHECKPOINT_NAME = "checkpoint.pt"
_FORMAT = "pinn-checkpoint-1"


def save_checkpoint(path: str | Path, state: dict[str, Any]) -> None:
    """Write `state` (tensors, numbers, strings, lists, dicts) to `path` atomically.

    The data goes to a temporary file in the same folder, is flushed to disk, and only then
    replaces `path` in one rename: a reader sees the old file or the new one, never half of one.
    The file gets the mode any other new file gets (0o666 less the umask), not mkstemp's 0o600.

    Raises:
        OutputError: the file could not be written (no permission, disk full: torch reports
            that as "unexpected pos"); the temporary file is removed and `path` is unchanged.
    """
    path = Path(path)
    temporary = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(
            dir=path.parent, prefix=f".{path.name}.", suffix=".tmp"
        )
        os.chmod(temporary, 0o666 & ~_umask())
        with os.fdopen(handle, "wb") as file:
            torch.save({"format": _FORMAT, **state}, file)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException as error:
        if temporary is not None:
            Path(temporary).unlink(missing_ok=True)
        if isinstance(error, (OSError, RuntimeError)):
            raise OutputError(
                f"cannot write the checkpoint {path}: {reason(error)}; the last one written "
                "there is unchanged. Free some space or choose another hydra.run.dir, then "
                "continue with resume=<that run directory>"
            ) from error
        raise


def _umask() -> int:
    """The process's umask (read by setting it and putting it back at once)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def load_checkpoint(path: str | Path) -> dict[str, Any]:
    """Read a checkpoint written by `save_checkpoint` (with `weights_only=True`: no code runs)."""
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"no checkpoint at {path}")
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except OSError as error:
        raise CheckpointError(f"cannot read {path}: {error.strerror or error}") from None
    except Exception as error:  # torch.load of foreign bytes raises many kinds
        raise CheckpointError(f"{path} is not a readable pinn checkpoint: {_why(error)}") from None
    if not isinstance(state, dict) or state.get("format") != _FORMAT:
        raise CheckpointError(f"{path} is a torch file but not a pinn checkpoint")
    return state


# What a run's checkpoint holds (`RunState.checkpoint`), and inside its "training" entry. Entries
# added to it later (unknowns, weights, processes) are optional: older checkpoints lack them.
RUN_ENTRIES = ("model", "step", "loss", "history", "training")
TRAINING_ENTRIES = ("phase", "phases", "phase_index", "phase_start", "settings", "time_s")


def check_run_entries(state: Mapping[str, Any], where: str) -> None:
    """Refuse, in one line naming them, a run's checkpoint `state` that lacks entries a run
    reads back (a file cut or edited by hand); `where` names it in the message."""
    missing = [entry for entry in RUN_ENTRIES if entry not in state]
    training = state.get("training")
    if isinstance(training, Mapping):
        missing += [f"training.{entry}" for entry in TRAINING_ENTRIES if entry not in training]
    if missing:
        raise CheckpointError(
            f"{where} lacks {', '.join(missing)}: it is not a whole checkpoint of a pinn run "
            "(edited, or written by another program); resume from another checkpoint or start "
            "a new run"
        )


def _why(error: Exception) -> str:
    """What torch.load's `error` means for a checkpoint, in pinn's words (torch's own advice,
    to load with weights_only=False, would run whatever code the file holds)."""
    if isinstance(error, pickle.UnpicklingError) and "Weights only load failed" in str(error):
        return (
            "it holds Python objects besides tensors, numbers, strings, lists and dicts, so pinn "
            "did not write it (pinn runs no code from a file); give a checkpoint.pt of a pinn run"
        )
    if isinstance(error, EOFError) or "central directory" in str(error):
        return "it is empty or truncated (a copy cut short?); give a complete checkpoint.pt"
    return "it is not a file torch.save wrote (corrupt, or another format); give a checkpoint.pt"


class Checkpoints:
    """Every `every` steps (0: only the final state), `path` replaced atomically by the run's
    state; None writes nothing. `last_saved` is the step of the last state written.
    `companions` ({file name: text}) are written beside `path` with the first checkpoint."""

    def __init__(
        self,
        path: str | Path | None,
        every: int,
        extra: Mapping[str, Any] | None = None,
        world: World | None = None,
        companions: Mapping[str, str] | None = None,
    ):
        self.path, self.every = path, every
        self.extra = dict(extra or {})
        self.companions = dict(companions or {})
        self.world = world or World()
        self.last_saved: int | None = None

    def due(self, step: int) -> bool:
        """Whether the state at `step` is to be written (never without a path)."""
        if self.path is None or not self.every:
            return False
        return step - (self.last_saved or 0) >= self.every

    def write(self, state: RunState, loss: float) -> bool:
        """Write `state` (its loss `loss`); every process calls this, rank 0 writes. Returns
        whether this process wrote the file."""
        if self.path is None:
            return False
        saved = state.checkpoint(loss, self.extra)  # on every process: it gathers their parts
        if self.world.is_main:
            save_checkpoint(self.path, saved)
            self._write_companions()
        self.last_saved = state.step
        return self.world.is_main

    def _write_companions(self) -> None:
        folder = Path(self.path).parent
        for name, text in self.companions.items():
            try:
                (folder / name).write_text(text)
            except OSError as error:
                raise OutputError(f"cannot write {folder / name}: {reason(error)}") from error
        self.companions = {}  # once
