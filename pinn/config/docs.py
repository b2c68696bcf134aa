"""The one-line explanation of every config key, read from the comments of conf/'s yaml files
(their one home), and `python -m pinn --help` made from them.

    key_docs(conf_dir)        # {"seed": "seeds the network's initialisation ...", ...}
    register_help(conf_dir)   # Hydra's help template `hydra/help=pinn`, listing every key
"""

from __future__ import annotations

import re
from pathlib import Path

from hydra.core.config_store import ConfigStore

# The yaml files whose keys are documented, and the block their keys belong to.
DOCUMENTED = {"config.yaml": "", "model/mlp.yaml": "model.", "trainer/default.yaml": "trainer."}
# A yaml line `key: value  # explanation` (value and explanation optional).
_LINE = re.compile(r"^(?P<indent> *)(?P<key>[A-Za-z_]\w*):(?P<value>[^#]*)(?:#\s?(?P<doc>.*))?$")
_NOT_KEYS = ("defaults", "hydra")  # Hydra's own blocks

# The problem block differs by problem: its keys are explained here, once.
PROBLEM_DOCS = {
    "problem.target": "the Problem class as an importable path: pinn.problems.poisson.Poisson",
    "problem.params": "keyword arguments for its constructor (checked against its signature)",
    "problem.n_interior": "interior points per draw",
    "problem.n_boundary": "boundary points per draw, over all faces",
    "problem.sampler": "uniform, sobol or lhs",
    "problem.weights": "loss weight per term, e.g. {dirichlet: 100}; a term not named counts once",
    "problem.unknowns": "initial guesses of an inverse problem's unknowns, e.g. {kappa: 1.0}",
}


def key_docs(conf_dir: str | Path) -> dict[str, str]:
    """{dotted key: its explanation} for every key of the documented yaml files (those that
    exist) and the problem block, in file order; a key without a comment gets ""."""
    docs: dict[str, str] = {}
    for name, prefix in DOCUMENTED.items():
        path = Path(conf_dir, name)
        if path.is_file():  # a config folder of one's own may lack some
            docs.update(_docs_of(path.read_text(), prefix))
    return {**docs, **PROBLEM_DOCS}


def _docs_of(text: str, prefix: str) -> dict[str, str]:
    docs: dict[str, str] = {}
    parents: list[tuple[int, str]] = []  # (indent, key) of the blocks the line is inside
    for line in text.splitlines():
        match = _LINE.match(line)
        if match is None:
            continue
        indent, key = len(match["indent"]), match["key"]
        parents = [(i, k) for i, k in parents if i < indent]
        if not parents and key in _NOT_KEYS:
            parents.append((indent, "#"))  # skip its children too
            continue
        if any(k == "#" for _, k in parents):
            continue
        dotted = prefix + ".".join([*(k for _, k in parents), key])
        docs[dotted] = (match["doc"] or "").strip()
        if not match["value"].strip():
            parents.append((indent, key))
    return docs


def help_text(conf_dir: str | Path, user_dir: str | Path | None = None) -> str:
    """What `python -m pinn --help` prints (a Hydra help template: `$` is written `$$`): the
    groups' choices, those of `user_dir` (the conf/ where pinn runs) after pinn's own."""
    docs = key_docs(conf_dir)
    width = max(len(key) for key in docs) + 2
    keys = "\n".join(f"  {key:<{width}}{doc}".rstrip() for key, doc in docs.items())
    text = (
        "pinn: physics-informed neural networks for PDEs.\n\n"
        "Usage: python -m pinn problem=<name> [key=value ...]\n"
        "       python -m pinn -m problem=poisson,heat seed=0,1,2   (a sweep)\n\n"
        f"Groups (choose one of each):\n{group_choices(conf_dir, user_dir)}\n\n"
        "Config keys (set any on the command line, e.g. model.width=64):\n"
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
