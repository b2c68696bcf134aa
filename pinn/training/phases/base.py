"""`Phase`: the one interface every training method of a run has.

    phase = AdamPhase(AdamSettings(steps=1000))
    phase.steps_left(state)              # steps of its budget not yet taken (0: skip it)
    phase.run(state, parts, saved)       # from where `state` is, to the end of its budget
    phase.state_dict()                   # its optimiser's state, for the checkpoint
    phase.check(state)                   # refuses what it cannot train, before any phase runs

A phase starts where the state is: `state.step - state.phase_start` steps of it are done (a
resumed run takes up mid-phase, with `saved`, what `state_dict` returned when its checkpoint
was written). It reports history rows, checkpoints and its entry through `Parts`.

What the phases share lives here too: `check_stop_keys` (the settings every phase but Adam
has), `run_chunks` (a budget in chunks of `trainer.log_every`,
checkpoints between them), `redraw_if_due` (new points, refinements, point weights) and, for
the phases that step on residual rows (Gauss-Newton, KFAC), `rows_at_iterate` and
`run_row_steps`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

from pinn.errors import ConfigError, is_finite_number, require_int

if TYPE_CHECKING:  # the phases are imported by the settings, below the state and parts
    from pinn.training.phases.parts import Parts
    from pinn.training.state import RunState


def check_stop_keys(block: str, settings: Any, fractions: tuple[str, ...] = ()) -> None:
    """Refuse bad values of the keys the second-order phases share (the block
    `trainer.<block>`): steps, stall_window, resample_every, refine_every (whole numbers >= 0),
    and stall_decrease with the phase's other `fractions` (numbers in [0, 1))."""
    for key in ("steps", "stall_window", "resample_every", "refine_every"):
        require_int(f"trainer.{block}.{key}", getattr(settings, key), minimum=0)
    for key in ("stall_decrease", *fractions):
        fraction = getattr(settings, key)
        if not is_finite_number(fraction) or not 0 <= fraction < 1:
            raise ConfigError(f"trainer.{block}.{key} must be in [0, 1), got {fraction!r}")


class Phase:
    """One training method: its name (in `trainer.phases` and the history), its settings
    dataclass (the block `trainer.<name>`), and how it runs.

    Class attributes:
        name: the registry's and history's name of the phase ("adam").
        title: its name for people: the progress bar and the loss plot ("Adam").
        settings_type: the dataclass of its settings, with a field `steps` (its budget).
        deterministic: it needs a deterministic loss (refused with a stochastic Laplacian).
        saves_step_start: its checkpoints are written after a step's loss and before its
            update, so they hold the engine and loss weights as the step started (Adam).
        budget_free: its iterations do not depend on its budget `steps`, only where they
            end, so a resumed run may change it (`pinn.training.budgets`).
        evaluates_step_loss: its steps evaluate the batch's loss and gradient (`StepLoss`),
            which `trainer.compile` compiles: they count toward what repays compiling.
    """

    name: ClassVar[str]
    title: ClassVar[str]
    settings_type: ClassVar[type]
    deterministic: ClassVar[bool] = False
    saves_step_start: ClassVar[bool] = False
    budget_free: ClassVar[bool] = False
    evaluates_step_loss: ClassVar[bool] = False

    def __init__(self, settings: Any):
        self.settings = settings

    def steps_left(self, state: RunState) -> int:
        """How many of its `settings.steps` the run has not taken yet (from `state.phase_start`
        when the state is in this phase; all of them before it starts)."""
        return self.settings.steps - (state.step - state.phase_start)

    @staticmethod
    def due(done: int, every: int) -> bool:
        """Whether something done every `every` iterations (0 = never) falls before iteration
        `done` of the phase: at its multiples, never at its first iteration."""
        return every > 0 and done > 0 and done % every == 0

    def redraw_if_due(self, state: RunState, every: int, n: int) -> tuple[int, bool]:
        """Before a chunk of up to `n` iterations of a phase that holds its points (and loss)
        fixed within a chunk: what falls at the chunk's first iteration, and where the chunk
        must end. Returns (the chunk cut to end before the next of them, whether the loss
        changed: new points or weights).

        - The points are redrawn every `every` iterations (its `resample_every`; 0 = never),
        - then refined by the residual every `settings.refine_every` (0 or absent = never;
          `refinement.method`, `PointSampler.refine`),
        - and the point weights (`trainer.point_weights`) are updated every
          `trainer.point_weights.every` iterations, from the first on: the chunk's first
          evaluation updates them, every later one in the chunk weighs as it did.

        Redraws and refinements fall before a chunk's first iteration, never at the phase's
        first: a checkpoint taken at their iteration holds the points before them, and the
        resumed run makes them again (the refinement from the same parameters, generator and
        residual). Each phase that calls this says in its docs what it keeps across them."""
        done = state.step - state.phase_start
        refine_every = getattr(self.settings, "refine_every", 0)
        weights = state.point_weights
        weigh_every = weights.settings.every if weights is not None else 0
        changed = False
        if self.due(done, every):
            state.batch = state.points.draw()
            changed = True
        if self.due(done, refine_every):
            state.batch = state.points.refine(state.refine_by)
            changed = True
        if weights is not None and done % weigh_every == 0:
            weights.request()
            changed = True
        intervals = [k - done % k for k in (every, refine_every, weigh_every) if k]
        return min([n, *intervals]), changed

    @staticmethod
    def rows_at_iterate(causal, fresh: bool, make: Callable[[], Any]) -> tuple[Any, tuple]:
        """(rows, info): `make()`'s rows (anything with `terms`) for a phase that steps on
        residual rows (Gauss-Newton, KFAC), and (their terms, the causal weights seen). Causal
        weights: made afresh at an iterate (`fresh`: the Jacobian's or the factors'
        evaluation), then held for the trial steps from it, so that a line search compares one
        loss; they travel with the terms, so the search keeps the best try's."""
        if causal is not None and fresh:
            causal.thaw()
        rows = make()
        if causal is not None and fresh:
            causal.freeze()
        return rows, (rows.terms, causal and causal.seen())

    def run_row_steps(
        self,
        state: RunState,
        parts: Parts,
        optimizer: Any,
        evaluate: Callable,
        columns: Callable[[], dict],
    ) -> None:
        """Run a phase that steps on residual rows (Gauss-Newton, KFAC): `optimizer.iterate`
        over `evaluate` in chunks (`run_chunks`), the points redrawn every
        `settings.resample_every`, a history row per accepted iteration with the `columns()` of
        its step, the causal weights thawed at the end (every later loss makes its own)."""
        last: dict[str, Any] = {}

        def on_iteration(loss, info: tuple) -> None:
            terms, seen = info  # `rows_at_iterate`'s: this process's terms, averaged here
            if state.causal is not None:
                state.causal.show(seen)
            terms, loss = state.world.average_loss(terms, loss)
            parts.watch.require_finite(terms, loss, state.step, self.name)
            parts.recorder.advance()
            step, validate = state.step, state.step % state.settings.log_every == 0
            parts.row(step, self.name, terms, loss, validate=validate, extra=columns())
            last["loss"] = loss

        def iterate(n: int) -> tuple[int, str | None]:
            n, _ = self.redraw_if_due(state, self.settings.resample_every, n)
            return optimizer.iterate(evaluate, n, on_iteration, parts.interrupts.requested)

        try:
            self.run_chunks(state, parts, iterate, last)
        finally:
            if state.causal is not None:
                state.causal.thaw()

    def check(self, state: RunState) -> None:
        """Refuse, with a ConfigError, what this phase cannot train (called before any phase
        runs, so nothing is lost); nothing by default."""

    def run(self, state: RunState, parts: Parts, saved: dict[str, Any] | None) -> None:
        """Train from `state` to the end of the budget (or an early stop it says why)."""
        raise NotImplementedError

    def state_dict(self) -> dict[str, Any] | None:
        """The optimiser's state (tensors, numbers, lists, dicts), or None before it runs."""
        return None

    def run_chunks(
        self,
        state: RunState,
        parts: Parts,
        iterate: Callable[[int], tuple[int, str | None]],
        last: dict[str, Any],
    ) -> None:
        """Run what is left of the budget in chunks of `trainer.log_every` iterations:
        `iterate(n)` does up to n and returns (done, why it must stop or None); `last["loss"]`
        is the latest iteration's loss. Between chunks: a checkpoint when due, or on a signal
        the checkpoint and the end of the run; an early stop is said with its reason."""
        total, remaining = self.settings.steps, self.steps_left(state)
        while remaining > 0:  # chunks from the phase's start whatever the budget: it may change
            done, why = iterate(min(state.settings.log_every, remaining))
            remaining -= done
            if why is not None:
                parts.recorder.say(
                    f"{self.title} stopped after {total - remaining} iterations: {why}."
                )
                return
            if parts.interrupts.requested():  # a signal: the chunk ended after this iteration
                parts.save(state, last["loss"])
                parts.stop(state)
            parts.save_if_due(state, last["loss"])
