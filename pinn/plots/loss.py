"""The loss plot: the loss and each loss term against the step (log scale), a dotted line at
each switch of phase (`trainer.phases`: Adam to L-BFGS, ...), named by the phase's title, and
rel_l2 on its own log axis on the right where the history has it."""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from pathlib import Path

from matplotlib.figure import Figure

from pinn.errors import is_finite_number
from pinn.plots.files import DPI
from pinn.problem.columns import (
    ATTENTION_PREFIX,
    BOOKKEEPING,
    CAUSAL_PREFIX,
    GAUSS_NEWTON_PREFIX,
    LOSS,
    PHASE,
    QUANTITY_PREFIX,
    REL_L2,
    STEP,
)
from pinn.training.phases import PHASES
from pinn.training.strategies.weighting import WEIGHT_PREFIX

_NON_TERMS = set(BOOKKEEPING) - {LOSS}
_NOT_TERM_PREFIXES = (
    WEIGHT_PREFIX,
    QUANTITY_PREFIX,
    CAUSAL_PREFIX,
    ATTENTION_PREFIX,
    GAUSS_NEWTON_PREFIX,
)
_NOT_A_PHASE = {"final"}  # the history's last row: the final loss, not a phase of its own
_REL_L2_STYLE = {"color": "black", "linestyle": "--", "marker": ".", "linewidth": 1.0}


def loss_columns(row: dict, skip: Collection[str] = ()) -> list[str]:
    """The columns of a history row that hold the loss or a loss term, in order.

    Left out: the bookkeeping (step, phase, lr, rel_l2, time_s), the loss weights
    (`weight_<term>`, `pinn.training.strategies.weighting`), the quantities of interest
    (`q_<name>`), the causal weights (`causal_min_weight`, `causal_mean_weight`), Gauss-Newton's
    search (`gn_length`, `gn_damping`) and the names in `skip` (a problem's unknowns).
    """
    return [
        key
        for key in row
        if key not in _NON_TERMS and not key.startswith(_NOT_TERM_PREFIXES) and key not in skip
    ]


def phase_switches(history: Sequence[dict]) -> list[tuple[int, str]]:
    """(step, phase) at the first row of each phase after the first: [(1000, "lbfgs")]."""
    switches, previous = [], None
    for row in history:
        phase = row.get(PHASE)
        if phase in _NOT_A_PHASE:
            continue
        if previous is not None and phase != previous:
            switches.append((row[STEP], phase))
        previous = phase
    return switches


def loss_figure(history: Sequence[dict], skip: Collection[str] = (), title: str = "") -> Figure:
    """The loss plot of a history (rows as `fit` returns them or history.csv holds them).

    `skip`: columns that are neither the loss nor a term (a problem's unknowns); see
    `loss_columns`. `title`: the figure's title ("training loss" when empty).
    """
    figure = Figure(figsize=(6.4, 4.2), layout="constrained")
    axis = figure.subplots()
    steps = [row[STEP] for row in history]
    every_column = dict.fromkeys(key for row in history for key in row)  # terms may start late
    for name in loss_columns(every_column, skip):
        width = 2.0 if name == LOSS else 1.2
        values = [row.get(name, math.nan) for row in history]  # NaN: a gap in the line
        axis.semilogy(steps, values, label=name, linewidth=width)
    axis.set_xlabel("step")
    axis.set_ylabel("mean-square residual")
    axis.set_title(title or "training loss")
    axis.grid(True, which="both", alpha=0.3)
    _mark_phases(axis, history)
    handles, labels = axis.get_legend_handles_labels()
    rel_l2 = _rel_l2_axis(axis, history)
    if rel_l2 is not None:
        extra_handles, extra_labels = rel_l2.get_legend_handles_labels()
        handles, labels = handles + extra_handles, labels + extra_labels
    if handles:
        axis.legend(handles, labels, fontsize="small")
    return figure


def plot_loss(
    history: Sequence[dict], path: str | Path, skip: Collection[str] = (), title: str = ""
) -> None:
    """Write `loss_figure(history, skip, title)` to `path` (its suffix picks the format)."""
    loss_figure(history, skip, title).savefig(path, dpi=DPI)


def _mark_phases(axis, history: Sequence[dict]) -> None:
    """A dotted vertical line at each phase switch, named at its top: right of the line, or
    left of it in the last third of the steps, where the name would run past the axes."""
    first, last = history[0][STEP], history[-1][STEP]
    for step, phase in phase_switches(history):
        name = PHASES[phase].title if phase in PHASES else phase  # a history from elsewhere
        axis.axvline(step, color="0.35", linestyle=":", linewidth=1.2, label=f"_{name}")
        late = last > first and (step - first) / (last - first) > 2 / 3
        axis.text(
            step,
            0.98,
            f"{name} " if late else f" {name}",
            transform=axis.get_xaxis_transform(),  # x in steps, y in axes fraction
            ha="right" if late else "left",
            va="top",
            fontsize="small",
            color="0.35",
        )


def _rel_l2_axis(axis, history: Sequence[dict]):
    """rel_l2 against the step on a right-hand log axis; None where no row holds a value."""
    pairs = [
        (row[STEP], row[REL_L2])
        for row in history
        if is_finite_number(row.get(REL_L2)) and row[REL_L2] > 0
    ]
    if not pairs:
        return None
    twin = axis.twinx()
    twin.semilogy([s for s, _ in pairs], [v for _, v in pairs], label=REL_L2, **_REL_L2_STYLE)
    twin.set_ylabel(REL_L2)
    return twin
