"""Ctrl-C (SIGINT) and SIGTERM stop a run at a step boundary, its state checkpointed first.

    with Interrupts(enabled=True) as interrupts:   # handlers installed, the old ones kept
        ...                                        # a signal only sets `interrupts.received`
        if interrupts.requested():                 # checked by the phases between steps
            save the state; interrupts.stop(step, checkpoint_path)   # TrainingInterrupted

The handlers live only inside the `with` block and only in the main thread (Python allows
signal handlers nowhere else), so a notebook or a caller keeps its own. A second signal while
the step in flight finishes stops at once (KeyboardInterrupt), for a step that hangs.

Under torchrun the processes agree (`World.any`, one small all-reduce at each check): the
first step boundary at which any of them has received a signal is where all of them stop, so
they checkpoint the same step together (torchrun forwards a signal to each of its processes,
which get it at slightly different moments, or only one process may be sent it).
"""

from __future__ import annotations

import signal
import threading
from pathlib import Path
from typing import NoReturn

from pinn.errors import TrainingInterrupted
from pinn.training.distributed import World

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupts:
    """The first SIGINT or SIGTERM received inside the `with` block (`received`, else None).

    Disabled (never installed, `requested()` always False) when `enabled` is False: a run
    without a checkpoint to save. In a `world` of several processes every one must be
    enabled alike and call `requested()` at the same points: they answer it together."""

    def __init__(self, enabled: bool = True, world: World | None = None):
        self.enabled = enabled
        self.world = world or World()
        self.received: int | None = None
        self._agreed = False  # some process received a signal (all of them know it)
        self._previous: dict[int, object] = {}

    def __enter__(self) -> Interrupts:
        if self.enabled and threading.current_thread() is threading.main_thread():
            for number in SIGNALS:
                previous = signal.getsignal(number)
                signal.signal(number, self._handle)
                self._previous[number] = signal.SIG_DFL if previous is None else previous
        return self

    def __exit__(self, *exc_info) -> None:
        for number, previous in self._previous.items():
            signal.signal(number, previous)
        self._previous.clear()

    def _handle(self, number: int, frame) -> None:
        if self.received is not None:
            raise KeyboardInterrupt(f"a second {signal.Signals(number).name}: stopped at once")
        self.received = number

    def requested(self) -> bool:
        """Whether a signal asked the run to stop (in any of the processes)."""
        if self.enabled and not self._agreed:
            self._agreed = self.world.any(self.received is not None)
        return self._agreed

    def stop(self, step: int, checkpoint: str | Path | None) -> NoReturn:
        """End the run: the checkpoint at `checkpoint` holds its state at `step`. A process
        that was sent no signal itself stops with the SIGTERM status (its peers' request)."""
        number = self.received if self.received is not None else signal.SIGTERM
        name = signal.Signals(number).name
        raise TrainingInterrupted(
            f"interrupted at step {step} ({name}); continue with resume_from={checkpoint}",
            number,
            step,
        )
