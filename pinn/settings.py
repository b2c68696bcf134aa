"""Declaring a config key: its default, its type and its one-line help in one place, a field of
the settings dataclass that owns its block.

    @dataclass
    class AdamSettings:
        steps: int = setting(1000, "Adam steps (0 = none)")

The config's defaults (what Hydra composes), its schema (`pinn.config.schema`), `python -m pinn
--help` and the documentation's key reference are all read from these fields: none of them
writes a default or an explanation of its own.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any


def setting(default: Any = dataclasses.MISSING, help: str = "", *, factory: Callable | None = None):
    """A dataclass field for a config key: `default` (or a `factory` for a mutable or nested
    default) and `help`, the one line `--help` and the documentation show for it."""
    metadata = {"help": help}
    if factory is not None:
        return dataclasses.field(default_factory=factory, metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


def help_of(field: dataclasses.Field) -> str:
    """The one-line help a field was declared with ("" for a field declared otherwise)."""
    return field.metadata.get("help", "")
