"""Ctrl-C (SIGINT) and SIGTERM stop a run at a step boundary, its state checkpointed first.

    with Interrupts(enabled=True) as interrupts:   # handlers installed, the old ones kept
        ...                                        # a signal only sets `interrupts.received`
        if interrupts.requested():                 # checked by the phases between steps
            save the state; interrupts.stop(step, checkpoint_path)   # TrainingInterrupted

The handlers live only inside the `with` block and only in the main thread (Python allows
signal handlers nowhere else), so a notebook or a caller keeps its own. A second signal while
the step in flight finishes stops at once (KeyboardInterrupt), for a step that hangs.
"""

from __future__ import annotations

import signal
import threading
from pathlib import Path
from typing import NoReturn

from pinn.errors import TrainingInterrupted

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupts:
    """The first SIGINT or SIGTERM received inside the `with` block (`received`, else None).

    Disabled (never installed, `requested()` always False) when `enabled` is False: a run
    without a checkpoint to save, or one of several processes (they would stop at different
    steps and wait for each other forever)."""

    def __init__(self, enabled: bool = True):
        self.enabled = enabled
        self.received: int | None = None
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
        """Whether a signal asked the run to stop."""
        return self.received is not None

    def stop(self, step: int, checkpoint: str | Path | None) -> NoReturn:
        """End the run: the checkpoint at `checkpoint` holds its state at `step`."""
        name = signal.Signals(self.received).name
        raise TrainingInterrupted(
            f"interrupted at step {step} ({name}); continue with resume_from={checkpoint}",
            self.received,
            step,
        )
