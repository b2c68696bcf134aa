"""When a run writes its checkpoint, and the writing: rank 0 writes, every process gathers.

checkpoints = Checkpoints(path, every=500, extra={"config": ...}, world=world)
if checkpoints.due(state.step): checkpoints.write(state, loss)
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pinn.errors import OutputError, reason
from pinn.training.checkpoint import save_checkpoint
from pinn.training.distributed import World
from pinn.training.state import RunState


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
