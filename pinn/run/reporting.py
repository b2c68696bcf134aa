"""What the console prints for a mistake: one line, `pinn: error: <message>`, and exit 1; under
torchrun once (rank 0 speaks for all: every process refuses the same config alike).

    run_reporting(main)   # main() with Hydra's and OmegaConf's errors made one line
"""

from __future__ import annotations

import itertools
import logging
import os
import re
import sys
import time
from collections.abc import Callable
from typing import Any, NoReturn

from hydra.errors import HydraException, MissingConfigException
from omegaconf.errors import OmegaConfBaseException

from pinn.config.schema import explain
from pinn.training.distributed import launched

# How long another rank waits before it exits: torchrun stops every worker when the first one
# fails, and a rank that exited before rank 0 printed would silence the only report.
OTHER_RANK_GRACE_S = 10.0


def report(message: str) -> NoReturn:
    """Print `message` as pinn's one-line error (on rank 0 only) and exit with status 1.

    Under torchrun the other ranks wait up to OTHER_RANK_GRACE_S first: rank 0's exit ends them
    sooner (torchrun stops the group), after its line is out."""
    place = launched()
    if place is None or place[0] == 0:
        print(f"pinn: error: {message}", file=sys.stderr)
        log_to_files(f"pinn: error: {message}")
    else:
        time.sleep(OTHER_RANK_GRACE_S)
    sys.exit(1)


def log_to_files(message: str) -> None:
    """Write `message` to the log files only (the run directory's `__main__.log` under Hydra),
    so that a refused or failed run's directory says why it stopped; the console has it
    already."""
    record = logging.LogRecord("pinn", logging.ERROR, __file__, 0, message, None, None)
    for handler in logging.getLogger().handlers:
        if isinstance(handler, logging.FileHandler):
            handler.handle(record)


def run_reporting(entry: Callable[[], Any], docs: dict[str, str] | None = None) -> Any:
    """Call `entry` (a `@hydra.main` function), refusing a config Hydra cannot compose (an
    unknown key, a value of the wrong type, a group option that does not exist) in one line.

    Hydra prints such errors over several lines with a HYDRA_FULL_ERROR hint; told to re-raise
    them (HYDRA_FULL_ERROR=1 in this process) they come here instead. A user who set
    HYDRA_FULL_ERROR=1 keeps Hydra's full report."""
    wants_full = os.environ.get("HYDRA_FULL_ERROR") == "1"
    os.environ["HYDRA_FULL_ERROR"] = "1"
    try:
        return entry()
    except (HydraException, OmegaConfBaseException) as error:
        if wants_full:
            raise
        report(one_line(error, docs or {}))


def _where_groups_are(missing: str) -> str:
    """Where a yaml of one's own is looked for, when Hydra could not find one (its message:
    "In 'config': Could not find 'problem/fisher'")."""
    found = re.search(r"Could not find '(\w+)/", missing)
    if not found:
        return ""
    group = found.group(1)
    return (
        f". Your own {group} yamls are read from conf/{group}/ in the folder pinn runs from "
        f"({os.getcwd()}) or from a folder on hydra.searchpath"
    )


def one_line(error: BaseException, docs: dict[str, str]) -> str:
    """A Hydra or OmegaConf error as one line: about a key, said with the schema's words."""
    cause: BaseException | None = error
    while cause is not None:
        if isinstance(cause, OmegaConfBaseException) and getattr(cause, "full_key", None):
            return explain(cause, docs)
        cause = cause.__cause__
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    if isinstance(error, MissingConfigException) and len(lines) > 2:  # the options follow
        options = list(itertools.takewhile(lambda line: not line.endswith(":"), lines[2:]))
        return f"{lines[0]}; {lines[1]} {', '.join(options)}{_where_groups_are(lines[0])}"
    return " ".join(lines)
