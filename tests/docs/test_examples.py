"""Every example of the documentation runs: each ```python block of README.md and docs/**/*.md
is executed, each command line of a ```bash block that runs pinn composes its config and
passes the schema, and each ```yaml block parses.

How a page is run
-----------------
A page's blocks run in order, in one namespace and in a fresh working directory of their own,
so a block may use the names and files of the blocks above it on the same page (as a reader
who types them in order would). Each block is one test, `docs/how-to/conditions.md:123`; a
block run alone first runs the blocks above it.

- ```python: executed. `make_run(path, *overrides)` is there too (hidden setup may call it): it
  writes a finished run of a few steps into `path`, as `python -m pinn <overrides>` would.
- ```bash, ```sh: every command that starts pinn (`pinn ...`, `python -m pinn ...`,
  `torchrun ... -m pinn ...`) has its overrides composed (`compose_and_check`: Hydra, then the
  schema) in the page's folder, its `problem.params` bound to the problem class's constructor.
  A sweep (`-m a=1,2 b=x,y`) composes each value once. `python benchmarks/<script>.py` must name a
  script that exists. Other commands are not run.
- ```yaml: parsed.
- Inline commands (`python -m pinn ...` or `pinn problem=...` in backticks, in a sentence or a
  table) are composed as the blocks' are, in the page's folder after its blocks ran, unless they
  hold a placeholder (`<...>`, `...`).

Directives
----------
An HTML comment just above a block (invisible on the page) changes what the test does with it.
Its body is YAML:

    <!-- docs-test
    replace:
      "AdamSettings(steps=1000)": "AdamSettings(steps=20)"
    before: |
      make_run("outputs/poisson/run", "problem=poisson")
    after: |
      assert metrics["rel_l2"] < 1
    -->

- `replace`: substitutions applied to the block, in order; each `old` must occur in it (so a
  change to the page is noticed here).
- `before`: hidden code run first, compiled in one unit with the block: a `before` may open a
  class whose body the block is (a fragment of a problem module).
- `after`: hidden code run after the block: checks.
- `file: reaction.py`: write the block into this file of the page's folder instead of running
  it (a python file is compiled, a yaml file parsed).

`<!-- docs-test: skip <reason> -->` skips a block (the test reports the reason). Use
`replace` to shrink step and point counts, and to fill in placeholders such as `<run dir>`:
a command line with an unfilled `<...>` fails.

Also checked: every `pinn.<name>` the pages use is public (`PUBLIC`), and the README's links
into the repository lead to files that exist.
"""

from __future__ import annotations

import importlib
import inspect
import os
import re
import shlex
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

import matplotlib
import pytest
import yaml

matplotlib.use("Agg")

import pinn  # noqa: E402


def compose_and_check(overrides: list[str]):
    """The config `python -m pinn <overrides>` would run in the working directory, checked
    against the schema."""
    from pinn.config import check_config, compose_config

    config = compose_config(overrides)
    check_config(config)
    return config


ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
# The step and point counts of `make_run`: a finished run in a few seconds.
TINY_RUN = [
    "problem.n_interior=100",
    "problem.n_boundary=20",
    "trainer.adam.steps=10",
    "trainer.lbfgs.steps=3",
    "trainer.gauss_newton.steps=2",
    "trainer.bfgs.steps=3",
    "trainer.progress=false",
    "trainer.log_every=5",
]

# --- reading the pages -------------------------------------------------------------------------

FENCE = re.compile(r"^(?P<indent> *)```(?P<lang>[\w+-]*)[^\n`]*$")
DIRECTIVE = re.compile(r"<!--\s*docs-test(?P<body>.*?)-->\s*$", re.S)


@dataclass
class Block:
    page: Path
    line: int  # the 1-based line of the block's first line of code in the page
    lang: str
    code: str
    directive: dict = field(default_factory=dict)

    @property
    def id(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def blocks_of(page: Path) -> list[Block]:
    lines = page.read_text().splitlines()
    blocks, i = [], 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if opening is None:
            i += 1
            continue
        indent = opening["indent"]
        end = i + 1
        while end < len(lines) and lines[end].strip() != "```":
            end += 1
        body = [
            line[len(indent) :] if line.startswith(indent) else line for line in lines[i + 1 : end]
        ]
        directive = directive_above(lines, i, page)
        blocks.append(
            Block(page, i + 2, opening["lang"].lower(), "\n".join(body) + "\n", directive)
        )
        i = end + 1
    return blocks


def directive_above(lines: list[str], fence: int, page: Path) -> dict:
    """The docs-test comment that ends on the last non-blank line above the fence, parsed."""
    k = fence - 1
    while k >= 0 and not lines[k].strip():
        k -= 1
    if k < 0 or not lines[k].rstrip().endswith("-->"):
        return {}
    start = k
    while start >= 0 and "<!--" not in lines[start]:
        start -= 1
    match = DIRECTIVE.search("\n".join(lines[start : k + 1]))
    if match is None:
        return {}
    body = match["body"]
    if body.lstrip().startswith(":"):  # <!-- docs-test: skip <reason> -->
        word, _, reason = body.lstrip()[1:].strip().partition(" ")
        assert word == "skip", f"{page}:{k + 1}: unknown docs-test directive {word!r}"
        return {"skip": reason.strip() or "skipped"}
    parsed = yaml.safe_load(body) or {}
    unknown = set(parsed) - {"replace", "before", "after", "file", "skip"}
    assert not unknown, f"{page}:{k + 1}: unknown docs-test keys {sorted(unknown)}"
    return parsed


BLOCKS = {page: blocks_of(page) for page in PAGES}
RUNNABLE = {"python", "py", "bash", "sh", "shell", "yaml", "yml"}
ALL = [block for blocks in BLOCKS.values() for block in blocks if block.lang in RUNNABLE]


# --- running a page ----------------------------------------------------------------------------


@dataclass
class PageRun:
    folder: Path
    namespace: dict
    done: int = 0  # blocks run so far
    failed: str | None = None


@pytest.fixture(scope="session")
def page_runs(tmp_path_factory) -> dict[Path, PageRun]:
    return {}


@pytest.fixture(scope="session")
def make_run(tmp_path_factory):
    """make_run(path, *overrides): a finished run of a few steps in `path` (under the working
    directory), trained once per set of overrides and copied."""
    trained: dict[tuple[str, ...], Path] = {}

    def make(path: str | Path, *overrides: str) -> Path:
        key = tuple(overrides)
        if key not in trained:
            run_dir = tmp_path_factory.mktemp("run")
            pinn.train(compose_and_check([*overrides, *TINY_RUN]), run_dir)
            trained[key] = run_dir
        shutil.copytree(trained[key], path, dirs_exist_ok=True)
        return Path(path)

    return make


def run_page_until(block: Block, page_runs, make_run, tmp_path_factory, monkeypatch) -> None:
    """Run the blocks of `block`'s page up to and including it (those not run yet)."""
    blocks = [b for b in BLOCKS[block.page] if b.lang in RUNNABLE]
    state = page_runs.get(block.page)
    if state is None:
        folder = tmp_path_factory.mktemp(re.sub(r"\W", "_", block.page.stem))
        state = page_runs[block.page] = PageRun(folder, {"make_run": make_run, "__name__": "docs"})
    index = blocks.index(block)
    if state.failed is not None and state.done <= index:
        pytest.fail(f"an earlier block of this page failed ({state.failed})")
    monkeypatch.chdir(state.folder)
    monkeypatch.syspath_prepend(str(state.folder))
    monkeypatch.setenv("PWD", str(state.folder))
    try:
        while state.done <= index:
            current = blocks[state.done]
            try:
                run_block(current, state)
            except BaseException:
                state.failed = current.id
                raise
            finally:
                state.done += 1
                forget_modules_in(state.folder)
    finally:
        forget_modules_in(state.folder)


def forget_modules_in(folder: Path) -> None:
    """Drop the modules a page imported from its folder (another page may reuse the names)."""
    prefix = str(folder) + os.sep
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None)
        if file and file.startswith(prefix):
            del sys.modules[name]


def run_block(block: Block, state: PageRun) -> None:
    if "skip" in block.directive:
        return
    code = substituted(block)
    if "file" in block.directive:
        path = state.folder / block.directive["file"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(code)
        if block.lang in ("python", "py"):
            compile(code, block.id, "exec")
        if block.lang in ("yaml", "yml"):
            yaml.safe_load(code)
        return
    if block.lang in ("python", "py"):
        run_python(block, code, state.namespace)
    elif block.lang in ("bash", "sh", "shell"):
        for overrides in pinn_commands(code, block):
            for combination in sweep(overrides):
                check_command(combination)
    else:
        yaml.safe_load(code)


def substituted(block: Block) -> str:
    code = block.code
    for old, new in (block.directive.get("replace") or {}).items():
        assert old in code, f"{block.id}: docs-test replaces {old!r}, which the block no longer has"
        code = code.replace(old, new)
    return code


def run_python(block: Block, code: str, namespace: dict) -> None:
    """The block, after its hidden `before` (one unit with it: a `before` may open a class whose
    body the block is), then its hidden `after`; tracebacks name the page's lines."""
    before = block.directive.get("before", "")
    if before and not before.endswith("\n"):
        before += "\n"
    padding = max(block.line - 1 - before.count("\n"), 0)
    exec(compile("\n" * padding + before + code, str(block.page), "exec"), namespace)
    if block.directive.get("after"):
        exec(compile(block.directive["after"], f"{block.id} (docs-test after)", "exec"), namespace)
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is not None:
        plt.close("all")


# --- command lines -----------------------------------------------------------------------------

SEPARATORS = {"&&", "||", ";", "|", "&"}
ENVIRONMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
NO_COMPOSE = {"--help", "-h", "--hydra-help", "--info", "--cfg"}


def pinn_commands(script: str, block: Block) -> list[list[str]]:
    """The overrides of every pinn command in a shell script (flags kept: `-m` is a sweep)."""
    commands = []
    script = re.sub(r"\\\n", " ", script)
    for line in script.splitlines():
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        lexer.commenters = "#"
        tokens, command = list(lexer), []
        for token in [*tokens, ";"]:
            if token not in SEPARATORS:
                command.append(token)
                continue
            arguments = pinn_arguments(command, block)
            if arguments is not None:
                commands.append(arguments)
            command = []
    return commands


def pinn_arguments(command: list[str], block: Block) -> list[str] | None:
    while command and ENVIRONMENT.match(command[0]):
        command = command[1:]
    if not command:
        return None
    if command[0] in ("python", "python3") and len(command) > 1 and command[1].endswith(".py"):
        script = command[1]
        if script.startswith("benchmarks/"):
            assert (ROOT / script).is_file(), f"{block.id}: {script} does not exist"
        return None
    if Path(command[0]).name == "pinn":
        arguments = command[1:]
    elif "pinn" in command and command[command.index("pinn") - 1] == "-m":
        arguments = command[command.index("pinn") + 1 :]
    else:
        return None
    arguments = [expand(argument) for argument in arguments]
    for argument in arguments:
        assert not re.search(r"<[^>]*>", argument), (
            f"{block.id}: {argument!r} holds a placeholder; give it a value with a docs-test "
            "`replace:` above the block"
        )
    return arguments


def expand(argument: str) -> str:
    argument = argument.replace("${PWD}", os.getcwd()).replace("$PWD", os.getcwd())
    return os.path.expanduser(os.path.expandvars(argument))


def sweep(arguments: list[str]) -> list[list[str]]:
    """The override lists to check for a command: its own, or for a sweep (`-m a=1,2 b=x,y`)
    the first combination and then each other value of each key with the others' first (every
    value is composed once; the full product would add nothing)."""
    if any(argument in NO_COMPOSE for argument in arguments):
        return []
    multirun = "-m" in arguments or "--multirun" in arguments
    overrides = [a for a in arguments if a not in ("-m", "--multirun")]
    flags = [a for a in overrides if a.startswith("-")]
    assert not flags, f"flags the test does not know: {flags}"
    if not multirun:
        return [overrides]
    choices = []
    for override in overrides:
        key, _, value = override.partition("=")
        values = top_level_split(value) if "=" in override else [None]
        choices.append([override if v is None else f"{key}={v}" for v in values])
    first = [options[0] for options in choices]
    combinations = [first]
    for k, options in enumerate(choices):
        combinations += [[*first[:k], option, *first[k + 1 :]] for option in options[1:]]
    return combinations


def top_level_split(value: str) -> list[str]:
    """`a,b` -> [a, b]; commas inside brackets and braces stay."""
    parts, depth, current = [], 0, ""
    for char in value:
        depth += char in "[{("
        depth -= char in "]})"
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    return [*parts, current]


CHECKED: set[tuple] = set()  # (overrides, the folder's conf/ or None): composed already


def check_command(overrides: list[str]) -> None:
    """Compose and check a command's overrides in the working directory (once per set of
    overrides and user conf/ folder: many pages repeat `python -m pinn problem=poisson`)."""
    conf = Path("conf").resolve() if Path("conf").is_dir() else None
    key = (tuple(overrides), conf)
    if key not in CHECKED:
        check_problem_params(compose_and_check(overrides))
        CHECKED.add(key)


def check_problem_params(config) -> None:
    """`problem.params` fit the problem class's constructor (as the run checks them)."""
    from omegaconf import OmegaConf

    module, _, name = str(config.problem.target).rpartition(".")
    cls = getattr(importlib.import_module(module), name)
    params = OmegaConf.to_container(config.problem.params) or {}
    inspect.signature(cls).bind(**params)


# --- the tests ---------------------------------------------------------------------------------


@pytest.mark.parametrize("block", ALL, ids=[block.id for block in ALL])
def test_example(block, page_runs, make_run, tmp_path_factory, monkeypatch):
    if "skip" in block.directive:
        pytest.skip(block.directive["skip"])
    run_page_until(block, page_runs, make_run, tmp_path_factory, monkeypatch)


INLINE = re.compile(r"(?<!`)`((?:python -m pinn|pinn) [^`]+)`(?!`)")


def inline_commands(page: Path) -> list[str]:
    """The inline commands of a page, outside its code blocks, without placeholders."""
    text = page.read_text()
    text = re.sub(r"^( *)```.*?^\1```", "", text, flags=re.S | re.M)  # drop the fenced blocks
    commands = [" ".join(m.group(1).replace("\\|", "|").split()) for m in INLINE.finditer(text)]
    return [c for c in commands if not re.search(r"<[^>]*>|\.\.\.|\bN\b", c)]


PAGES_WITH_INLINE = [page for page in PAGES if inline_commands(page)]


@pytest.mark.parametrize(
    "page", PAGES_WITH_INLINE, ids=[str(p.relative_to(ROOT)) for p in PAGES_WITH_INLINE]
)
def test_inline_commands(page, page_runs, make_run, tmp_path_factory, monkeypatch):
    blocks = [b for b in BLOCKS[page] if b.lang in RUNNABLE]
    if blocks:  # the page's files (a problem's yaml) first
        run_page_until(blocks[-1], page_runs, make_run, tmp_path_factory, monkeypatch)
        monkeypatch.chdir(page_runs[page].folder)
        monkeypatch.syspath_prepend(str(page_runs[page].folder))
    else:
        monkeypatch.chdir(tmp_path_factory.mktemp("inline"))
    block = Block(page, 0, "bash", "")
    for command in inline_commands(page):
        for arguments in pinn_commands(command, block):
            for combination in sweep(arguments):
                check_command(combination)


# What the pages may call `pinn.<name>`: the public surface, and the problem library.
PUBLIC = set(pinn.__all__) | {"problems"}


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_pages_use_only_public_names(page):
    if page.name == "contributing.md":  # it describes the build, internals included
        return
    used = set(re.findall(r"(?<![\w./])pinn\.([A-Za-z_]\w*)", page.read_text()))
    assert not used - PUBLIC, f"{page.name} uses pinn.{sorted(used - PUBLIC)}, not public"


def test_the_readmes_links_lead_to_files():
    text = (ROOT / "README.md").read_text()
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
    local = [link for link in links if "://" not in link and not link.startswith("mailto:")]
    assert local, "the README links into docs/"
    missing = [link for link in local if not (ROOT / link).exists()]
    assert not missing, f"README.md links to files that do not exist: {missing}"
