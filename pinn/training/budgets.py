"""A resumed run may change a phase's step budget, where it then ends as a fresh run with the
new budget would have (the 120 Gauss-Newton iterations of a run stopped at 60 cut to 80, or
raised to 200):

    check_budget_changes(training, step, settings)   # raises ConfigError where it may not

Allowed for a phase whose iterations do not depend on its budget, only where they end
(`Phase.budget_free`: L-BFGS and Gauss-Newton; Adam's learning-rate schedule and the compile
decision are made from its budget), when that phase has not run yet or is the one the run is
in and the new budget is no less than the steps it has taken. Refused for a finished run (it
is not trained again), and for a phase the run has left behind.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pinn.errors import ConfigError
from pinn.training.phases import PHASES
from pinn.training.settings import TrainSettings


def without_budgets(shaped: Mapping[str, Any]) -> dict[str, Any]:
    """`shaping(settings)`'s dict with the budgets of the phases that may change them left
    out, and the blocks of phases it does not list (they change no number; a checkpoint
    written before a phase existed lacks its block): what must be equal between a run and its
    resumption."""
    listed = set(shaped.get("phases", ()))
    kept = {key: value for key, value in shaped.items() if key not in PHASES or key in listed}
    for name, phase in PHASES.items():
        if phase.budget_free and isinstance(kept.get(name), Mapping):
            kept[name] = {key: value for key, value in kept[name].items() if key != "steps"}
    return kept


def changed_budgets(saved: Mapping[str, Any], settings: TrainSettings) -> dict[str, int]:
    """{phase: its saved budget} for each phase whose `steps` differ from `settings`'."""
    return {
        name: saved[name]["steps"]
        for name in PHASES
        if isinstance(saved.get(name), Mapping)
        and saved[name].get("steps") != settings.block(name).steps
    }


def check_budget_changes(training: Mapping[str, Any], step: int, settings: TrainSettings) -> None:
    """Refuse the budgets of `settings` that differ from the checkpoint's (`training`, the
    checkpoint's "training" entry, at `step`) where the resumed run would not end as a fresh
    run with them.

    Raises:
        ConfigError: naming the phase, its saved and new budgets, and why.
    """
    phases, current = list(settings.phases), training["phase_index"]
    for name, saved in changed_budgets(training["settings"], settings).items():
        new = settings.block(name).steps
        change = f"trainer.{name}.steps={new} (saved: {saved})"
        if not PHASES[name].budget_free:
            raise ConfigError(
                f"resume: {change}: the {name} phase's steps depend on its budget (Adam's "
                f"learning rate falls over it), so a changed one would not continue this run; "
                f"give trainer.{name}.steps={saved}, or start a new run"
            )
        if training["phase"] == "done":
            raise ConfigError(
                f"resume: {change}: the run has finished, and a finished run is not trained "
                f"again; start a new run with trainer.{name}.steps={new}, or resume with "
                f"trainer.{name}.steps={saved} to write its outputs again"
            )
        places = [index for index, phase in enumerate(phases) if phase == name]
        if any(index < current for index in places):
            raise ConfigError(
                f"resume: {change}: the run has finished its {name} phase and gone on to "
                f"{phases[current]}; a budget may change only for the phase the run is in or "
                f"one it has not begun; give trainer.{name}.steps={saved}"
            )
        taken = step - training["phase_start"]
        if current in places and new < taken:
            raise ConfigError(
                f"resume: {change}: the run has taken {taken} {name} steps already; give "
                f"trainer.{name}.steps={taken} or more"
            )
