"""What a run shows as it goes: the history rows, rel_l2, the progress bar.

recorder = Recorder(state, validator, progress=True)
recorder.row(step, "adam", terms, loss, lr=...)   # a history row; validates if asked (rel_l2
                                                  # and the problem's quantities)
recorder.advance()                                # one step done: the bar moves
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from tqdm.auto import tqdm

from pinn.errors import ConfigError
from pinn.evaluation.validation import Validator
from pinn.problem.columns import BOOKKEEPING, LOSS, LR, PHASE, REL_L2, STEP, TIME_S
from pinn.problem.quantities import quantity_columns
from pinn.training.state import RunState


def _own_columns(values: dict[str, float], row: dict) -> dict[str, float]:
    """`values` (quantities), refused where a name is already a column of the row."""
    taken = sorted(set(values) & (set(row) | set(BOOKKEEPING)))
    if taken:
        raise ConfigError(
            f"quantit{'y' if len(taken) == 1 else 'ies'} {taken} share their name with a loss "
            "term, an unknown or a history column; rename them in quantities()"
        )
    return values


class Recorder:
    """History rows into `state.history` (history.csv and the other callbacks see them through
    `Parts.row`), the bar on rank 0 only.

    Only rank 0 validates, so only its rows carry rel_l2; losses are the values given (under
    data-parallel training, the averages over the processes).
    """

    def __init__(
        self,
        state: RunState,
        validator: Validator | None = None,
        progress: bool = True,
        quantities: Callable[[torch.nn.Module], dict] | None = None,
    ):
        self.state = state
        self.main = state.world.is_main
        self.validator = validator if self.main else None
        self.quantities = quantities if self.main else None
        settings = state.settings
        self.bar = tqdm(
            total=settings.planned_steps(),  # every phase's budget
            initial=state.step,
            disable=not (progress and self.main),
            desc=state.phase,
            dynamic_ncols=True,
        )

    def row(
        self,
        step: int,
        phase: str,
        terms: dict[str, torch.Tensor],
        loss: torch.Tensor,
        lr: float = math.nan,
        validate: bool = True,
        extra: dict[str, float] | None = None,
    ) -> None:
        """Append the history row of `step`: loss, rate, terms, unknowns, weights, rel_l2, and
        a phase's `extra` columns (named apart from loss terms: `pinn.problem.columns`)."""
        state = self.state
        row = {
            STEP: step,
            PHASE: phase,
            LOSS: loss.item(),
            LR: lr,
            **{name: value.item() for name, value in terms.items()},
        }
        unknowns = state.unknowns.values()  # a column for each, beside the loss terms
        if set(unknowns) & set(row):
            raise ConfigError(
                f"unknown(s) {sorted(set(unknowns) & set(row))} share their name with a loss "
                "term; rename one or the other"
            )
        row.update(unknowns)
        if state.weights.method != "fixed":
            row.update(state.weights.row())
        if state.causal is not None:  # the causal weights' front (pinn.problem.causal)
            row.update(state.causal.row())
        if state.point_weights is not None:  # RBA's weights (pinn.problem.point_weights)
            row.update(state.point_weights.row())
        row.update(extra or {})
        if self.validator is not None and validate:
            row[REL_L2] = self.validator.errors(state.model)[REL_L2]
        if self.quantities is not None and validate:
            row.update(_own_columns(quantity_columns(self.quantities(state.model)), row))
        row[TIME_S] = state.elapsed()
        state.history.append(row)
        shown = {"loss": f"{row['loss']:.3e}"}
        if "rel_l2" in row:
            shown["rel_l2"] = f"{row['rel_l2']:.2e}"
        self.bar.set_postfix(shown, refresh=False)

    def advance(self, steps: int = 1) -> None:
        """`steps` optimiser steps done."""
        self.state.step += steps
        self.bar.update(steps)

    def phase(self, name: str) -> None:
        self.bar.set_description(name)

    def say(self, message: str) -> None:
        """A line for the user, below the bar (rank 0 only)."""
        if self.main:
            tqdm.write(message)

    def close(self) -> None:
        self.bar.close()
