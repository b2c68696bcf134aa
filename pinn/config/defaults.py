"""The config's defaults, read from the settings dataclasses (`pinn.config.schema.RunConfig`)
and given to Hydra as the first entry of conf/config.yaml's defaults list, `pinn_defaults`.

    register_defaults()        # before Hydra composes: the CLI and compose_config call it
    defaults_tree()            # {"seed": 0, "dtype": "float64", ..., "trainer": {...}}

The yaml files hold only choices (which problem, which network) and what a problem's settings
change: no default is written twice.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from hydra.core.config_store import ConfigStore

from pinn.config.schema import RunConfig

DEFAULTS_NAME = "pinn_defaults"


def defaults_tree() -> dict[str, Any]:
    """Every key's default, as nested dicts (problem.target is "???": every problem's yaml
    gives it)."""
    return dataclasses.asdict(RunConfig())


def register_defaults() -> None:
    """Store the defaults as Hydra's config `pinn_defaults` (a plain dict: types are checked
    after composing, by `check_config`, which words each mistake for the user)."""
    ConfigStore.instance().store(name=DEFAULTS_NAME, node=defaults_tree())
