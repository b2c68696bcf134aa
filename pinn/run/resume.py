"""`resume=<run dir>`: find a run's checkpoint and check that this config continues that run.

    state = load_resume(cfg)   # None without cfg.resume; else the checkpoint, config checked

A resumed run keeps its config: every key that could change a number of the result must be
the saved one, or the run is refused with a `ConfigError` that names each difference. Only the
keys in `FREE_KEYS` may differ (they change how a run is shown or checkpointed, not what it
computes), and the L-BFGS and Gauss-Newton budgets (`BUDGET_KEYS`) where the run then ends as a
fresh run with them would (`pinn.training.budgets`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from pinn.config.defaults import defaults_tree
from pinn.config.schema import upgraded
from pinn.errors import CheckpointError, ConfigError
from pinn.training.budgets import check_budget_changes
from pinn.training.checkpoints import CHECKPOINT_NAME, check_run_entries, load_checkpoint
from pinn.training.phases import PHASES
from pinn.training.settings import FREE_SETTINGS, TrainSettings

FREE_KEYS = (
    "resume",
    "overwrite",
    "threads",
    "outputs.loggers",
    "distributed.timeout_s",
    "outputs.vtk",
    "outputs.error_scale",
    "outputs.plot_formats",
    *(f"trainer.{key}" for key in FREE_SETTINGS),
)


# Budgets a resumed run may change, where it ends as a fresh run with them would
# (`pinn.training.budgets`, checked against the checkpoint by `load_resume`); not with time
# windows, whose finished windows ran the saved budgets.
BUDGET_KEYS = tuple(f"trainer.{name}.steps" for name, phase in PHASES.items() if phase.budget_free)


def _marching(config: Mapping[str, Any]) -> bool:
    """Whether the config trains window by window in time (`windows.count` > 1)."""
    return (config.get("windows") or {}).get("count", 0) > 1


def checkpoint_file(resume: str | Path) -> Path:
    """The checkpoint `resume=` points at: a run directory's checkpoint.pt, or the file itself."""
    path = Path(resume).expanduser()
    return path / CHECKPOINT_NAME if path.is_dir() else path


def load_resume(cfg: DictConfig) -> dict[str, Any] | None:
    """The checkpoint to continue from (None when `cfg.resume` is null), after checking it.

    Raises:
        CheckpointError: no checkpoint there, or not a readable pinn checkpoint with a state to
            continue from.
        ConfigError: the checkpoint holds no config, or `cfg` differs from it outside
            `FREE_KEYS`.
    """
    if cfg.get("resume") is None:
        return None
    path = checkpoint_file(cfg.resume)
    if path.suffix in (".yaml", ".yml"):
        raise ConfigError(
            f"resume={cfg.resume} is a config file; give the run directory it lies in "
            f"(resume={path.parent}) or that run's {CHECKPOINT_NAME}"
        )
    try:
        state = load_checkpoint(path)
    except CheckpointError as error:
        raise CheckpointError(f"resume={cfg.resume}: {error}") from error
    if "training" not in state or not isinstance(state.get("config"), Mapping):
        raise CheckpointError(
            f"resume={cfg.resume}: {path} holds no run to continue (written by an older pinn, "
            "or by fit() without a config); start a new run instead"
        )
    check_run_entries(state, f"resume={cfg.resume}: {path}")
    current = OmegaConf.to_container(cfg, resolve=True)
    check_same_run(state["config"], current, path)
    if not _marching(current):  # a changed budget: checked against where the run is
        settings = TrainSettings(**current["trainer"])
        check_budget_changes(state["training"], state["step"], settings)
    return state


def check_same_run(saved: Mapping[str, Any], current: Mapping[str, Any], path: Path) -> None:
    """Refuse `current` unless it equals `saved` outside `FREE_KEYS`, naming each difference.

    A key the saved config lacks (one pinn added after the run was written, such as
    `trainer.causal.chunks`) counts as saved with pinn's default: what the run computed with;
    a key that has moved since counts as saved in its new place (`upgraded`).
    """
    old, new = _flatten(upgraded(saved)), _flatten(current)
    defaults = _flatten(defaults_tree())
    old |= {key: defaults[key] for key in new.keys() - old.keys() if key in defaults}
    free = FREE_KEYS if _marching(current) else FREE_KEYS + BUDGET_KEYS
    unused = _unlisted_blocks(saved, current)
    differ = [
        key
        for key in sorted(old.keys() | new.keys())
        if key not in free
        and not key.startswith(unused)
        and old.get(key, "<unset>") != new.get(key, "<unset>")
    ]
    if differ:
        listed = ", ".join(
            f"{key}={new.get(key, '<unset>')!r} (saved: {old.get(key, '<unset>')!r})"
            for key in differ
        )
        started = _started_with(path)
        given = (
            f" ({' '.join(started)})"
            if started
            else " (see the config.yaml next to the checkpoint)"
        )
        raise ConfigError(
            f"resume: this config differs from the run in {path} in {listed}. A resumed run "
            f"continues with its own config: give the overrides it was started with{given}, "
            "or start a new run without resume="
        )


def _started_with(path: Path) -> list[str]:
    """The command-line overrides the run beside the checkpoint `path` was started with (its
    Hydra `.hydra/overrides.yaml`), but where it ran and how it was shown; [] if unknown."""
    try:
        overrides = OmegaConf.load(path.parent / ".hydra" / "overrides.yaml")
    except (OSError, OmegaConfBaseException):
        return []
    skipped = ("hydra.", "resume=", "overwrite=")
    return [str(item) for item in overrides if not str(item).startswith(skipped)]


def _unlisted_blocks(saved: Mapping[str, Any], current: Mapping[str, Any]) -> tuple[str, ...]:
    """The prefixes ("trainer.bfgs.", ...) of the phase blocks neither config lists in
    `trainer.phases`: they change no number of the run (a library yaml may set a block of a
    phase the run was not started with, and a checkpoint of before lacks a newer phase's)."""
    listed = {
        name
        for config in (saved, current)
        for name in (config.get("trainer") or {}).get("phases") or ()
    }
    return tuple(f"trainer.{name}." for name in PHASES if name not in listed)


def _flatten(tree: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """{"a": {"b": 1}} -> {"a.b": 1}: one entry per leaf."""
    flat: dict[str, Any] = {}
    for key, value in tree.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            flat.update(_flatten(value, f"{name}."))
        else:
            flat[name] = value
    return flat
