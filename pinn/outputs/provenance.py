"""What metrics.json records about how a run was made: the problem, seed, device, dtype, the
versions of pinn, torch and Python, and when the run started and ended.

    started = utc_now()
    ...
    metrics |= provenance(cfg, device, started, utc_now())
"""

from __future__ import annotations

import inspect
import platform
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import torch
from omegaconf import DictConfig

from pinn._version import __version__


def utc_now() -> str:
    """The time now in UTC, ISO 8601 to the second: '2026-12-01T21:40:05+00:00'."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def problem_name(cfg: DictConfig) -> str:
    """The name of the problem's config (`problem=<name>`): Hydra's choice when the run is
    started by Hydra (the CLI); else, for a config composed in Python, the name of the target's
    module, which is the config's name by the library's rule (problems/<name>.py and
    conf/problem/<name>.yaml)."""
    from hydra.core.hydra_config import HydraConfig

    if HydraConfig.initialized():
        choice = HydraConfig.get().runtime.choices.get("problem")
        if choice:
            return str(choice)
    module = str(cfg.problem.target).rpartition(".")[0]
    return module.rpartition(".")[2]


def provenance(
    cfg: DictConfig, device: torch.device, started: str, ended: str, problem: object = None
) -> dict[str, Any]:
    """metrics.json's record of the run: problem (config name, target class and, given the
    `problem`, the file its class is defined in), seed, device (the one this process trained
    on), dtype, versions, started and ended (ISO 8601, UTC)."""
    record = {"name": problem_name(cfg), "target": str(cfg.problem.target)}
    if problem is not None:
        record["file"] = source_file(type(problem))
    return {
        "problem": record,
        "seed": int(cfg.seed),
        "device": str(device),
        "dtype": str(cfg.dtype),
        "versions": {
            "pinn": __version__,
            "torch": torch.__version__,
            "python": platform.python_version(),
        },
        "started": started,
        "ended": ended,
    }


def source_file(cls: type) -> str | None:
    """The absolute path of the file `cls` is defined in (None for one made at run time)."""
    try:
        return str(Path(inspect.getfile(cls)).resolve())
    except (TypeError, OSError):
        return None
