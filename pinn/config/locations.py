"""Where the Hydra configs come from: pinn's own, then the `conf/` folder of the directory a run
starts in.

pinn's configs (config.yaml and the groups problem/, model/, trainer/) ship inside the package,
so an installed pinn finds them wherever it runs. A user's folder may add configs of its own:

    reaction.py                      the problem module (`target: reaction.Reaction`)
    conf/problem/reaction.yaml       its config

and `pinn problem=reaction` (or `python -m pinn ...`, or `compose_config`) run from that folder
finds it. pinn's configs come first in the search path, so a user's `conf/` adds names and never
replaces the library's: its `conf/problem/poisson.yaml` is not used (`shadowed_problems` names
such files so the CLI can say so).
"""

from __future__ import annotations

from pathlib import Path


def library_conf_dir() -> Path:
    """pinn's own configs: pinn/conf/ in an installed pinn (the wheel ships conf/ there), conf/
    beside pinn/ in a checkout (where an editable install imports from)."""
    package = Path(__file__).resolve().parents[1]
    installed = package / "conf"
    return installed if installed.is_dir() else package.parent / "conf"


CONF_DIR = library_conf_dir()


def user_conf_dir(start: str | Path = ".", library: Path = CONF_DIR) -> Path | None:
    """`start/conf` when it is a folder other than pinn's own configs, else None."""
    folder = (Path(start) / "conf").resolve()
    if not folder.is_dir() or folder == library.resolve():
        return None
    return folder


def user_conf_overrides(
    overrides: list[str], start: str | Path = ".", library: Path = CONF_DIR
) -> list[str]:
    """The Hydra override that searches `start/conf` after pinn's configs, or [] when there is
    no such folder or `overrides` set `hydra.searchpath` themselves (theirs is then the list)."""
    folder = user_conf_dir(start, library)
    if folder is None or any(item.startswith("hydra.searchpath=") for item in overrides):
        return []
    quoted = str(folder).replace("\\", "\\\\").replace("'", "\\'")
    return [f"hydra.searchpath=['file://{quoted}']"]


def shadowed_problems(start: str | Path = ".", library: Path = CONF_DIR) -> list[str]:
    """The names in `start/conf/problem/` that are also pinn problems (the library's are used)."""
    folder = user_conf_dir(start, library)
    if folder is None:
        return []
    own = {path.stem for path in (library / "problem").glob("*.yaml")}
    return sorted(path.stem for path in (folder / "problem").glob("*.yaml") if path.stem in own)
