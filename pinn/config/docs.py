"""Every config key with its default and one-line help, read from the settings dataclasses
(`pinn.config.schema`, each key declared once with `pinn.settings.setting`), and `python -m
pinn --help` made from them; the documentation's key reference is generated from the same.

    key_docs()                # {"seed": "seeds the network's initialisation ...", ...}
    key_reference()           # [("seed", "0", "seeds ..."), ...]: key, default, help
    register_help(conf_dir)   # Hydra's help template `hydra/help=pinn`, listing every key
"""

from __future__ import annotations

import dataclasses
import json
import typing
from pathlib import Path
from typing import Any

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING

from pinn.config.schema import RunConfig
from pinn.settings import help_of


def key_reference(schema: type = RunConfig, prefix: str = "") -> list[tuple[str, str, str]]:
    """(dotted key, its default as the command line writes it, its help) for every key of
    `schema`, a block before its keys, in declaration order."""
    rows = []
    hints = typing.get_type_hints(schema)
    for field in dataclasses.fields(schema):
        key = prefix + field.name
        if dataclasses.is_dataclass(hints[field.name]):
            rows.append((key, "", help_of(field)))
            rows += key_reference(hints[field.name], f"{key}.")
        else:
            rows.append((key, shown(default_of(field)), help_of(field)))
    return rows


def key_docs() -> dict[str, str]:
    """{dotted key: its help} for every key and block."""
    return {key: doc for key, _, doc in key_reference()}


def default_of(field: dataclasses.Field) -> Any:
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    return field.default


def shown(value: Any) -> str:
    """A default as one writes it on the command line: null, true, 1.0e-08, [adam,lbfgs]."""
    if value is None:
        return "null"
    if value == MISSING:
        return "???"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, list):
        return "[" + ",".join(shown(item) for item in value) + "]"
    if isinstance(value, dict):
        return json.dumps(value).replace('"', "")
    return str(value)


def help_text(conf_dir: str | Path, user_dir: str | Path | None = None) -> str:
    """What `python -m pinn --help` prints (a Hydra help template: `$` is written `$$`): the
    groups' choices, those of `user_dir` (the conf/ where pinn runs) after pinn's own, then
    every key with its default and help."""
    rows = key_reference()
    key_width = max(len(key) for key, _, _ in rows) + 2
    default_width = max(len(default) for _, default, _ in rows) + 2
    keys = "\n".join(
        f"  {key:<{key_width}}{default:<{default_width}}{doc}".rstrip()
        for key, default, doc in rows
    )
    text = (
        "pinn: physics-informed neural networks for PDEs.\n\n"
        "Usage: python -m pinn problem=<name> [key=value ...]\n"
        "       python -m pinn -m problem=poisson,heat seed=0,1,2   (a sweep)\n\n"
        f"Groups (choose one of each):\n{group_choices(conf_dir, user_dir)}\n\n"
        "Config keys, their defaults (a problem's yaml may set others) and what they do; set "
        "any on the command line, e.g. model.width=64:\n"
        f"{keys}\n\n"
        "Hydra's own options (python -m pinn --hydra-help) set the run directory "
        "(hydra.run.dir=...) and more.\n"
    )
    return text.replace("$", "$$")


def group_choices(conf_dir: str | Path, user_dir: str | Path | None = None) -> str:
    """One line per config group, `problem: allen_cahn, ...; in ./conf: mine, ...` (Hydra's
    own listing leaves out a search path given on the command line)."""
    lines = []
    for group in sorted(path for path in Path(conf_dir).iterdir() if path.is_dir()):
        own = sorted(path.stem for path in group.glob("*.yaml"))
        extra = []
        if user_dir is not None:
            found = (Path(user_dir) / group.name).glob("*.yaml")
            extra = sorted(path.stem for path in found if path.stem not in own)
        here = f"; in ./conf: {', '.join(extra)}" if extra else ""
        lines.append(f"{group.name}: {', '.join(own)}{here}")
    return "\n".join(lines)


def register_help(conf_dir: str | Path, user_dir: str | Path | None = None) -> None:
    """Store the help template as Hydra's `hydra/help=pinn` (conf/config.yaml chooses it)."""
    template = help_text(conf_dir, user_dir)
    ConfigStore.instance().store(
        group="hydra/help",
        name="pinn",
        node={"app_name": "pinn", "header": "", "footer": "", "template": template},
    )
