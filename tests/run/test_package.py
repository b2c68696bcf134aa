"""The package: what the wheel holds, and the `pinn` console script run from a user's folder."""

import json
import os
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest
from cli_helpers import REPO, cli_environment, run_pinn

import pinn
from pinn import compose_config

TINY = [
    "trainer.adam.steps=5",
    "trainer.lbfgs.steps=0",
    "trainer.gauss_newton.steps=0",
    "trainer.bfgs.steps=0",
    "trainer.progress=false",
    "problem.n_interior=32",
    "problem.n_boundary=16",
    "model.width=4",
    "threads=1",
]
SCRIPT = Path(sysconfig.get_path("scripts")) / "pinn"


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[zipfile.ZipFile, str]:
    """The wheel `pip wheel .` builds from this checkout (no dependencies, no isolation), and
    the build's whole output (PYTHONDONTWRITEBYTECODE unset: with it, setuptools warns that it
    skips byte-compiling)."""
    folder = tmp_path_factory.mktemp("wheel")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    result = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-v"]
        + ["-w", str(folder), str(REPO)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    (wheel,) = folder.glob("pinn_torch-*.whl")
    return zipfile.ZipFile(wheel), result.stdout + result.stderr


@pytest.fixture(scope="module")
def wheel(built) -> zipfile.ZipFile:
    return built[0]


def test_the_wheel_builds_without_warnings(built):
    output = built[1]
    assert "Successfully built pinn-torch" in output
    assert [line for line in output.splitlines() if "warning" in line.lower()] == []


def test_the_wheel_installs_pinn_alone(wheel):
    names = wheel.namelist()
    info = f"pinn_torch-{pinn.__version__}.dist-info"
    assert {name.split("/")[0] for name in names} == {"pinn", info}
    assert wheel.read(f"{info}/top_level.txt").decode().split() == ["pinn"]


def test_the_wheel_holds_every_subpackage_problem_and_config(wheel):
    names = set(wheel.namelist())
    packages = {p.parent.relative_to(REPO).as_posix() for p in (REPO / "pinn").rglob("__init__.py")}
    assert {f"{package}/__init__.py" for package in packages} <= names
    assert {
        "pinn/geometry/box.py",
        "pinn/config/locations.py",
        "pinn/problem/importing.py",
    } <= names
    problems = {f"pinn/problems/{p.name}" for p in (REPO / "problems").glob("*.py")}
    problems |= {f"pinn/problems/{p.name}" for p in (REPO / "problems").glob("*.csv")}
    configs = {
        f"pinn/conf/{p.relative_to(REPO / 'conf').as_posix()}"
        for p in (REPO / "conf").rglob("*.yaml")
    }
    assert "pinn/problems/poisson.py" in problems and "pinn/conf/problem/heat.yaml" in configs
    assert "pinn/problems/cavity_centrelines_re1000.csv" in problems  # package data
    assert problems <= names and configs <= names
    assert not any(name.startswith(("problems/", "conf/")) for name in names)


def test_the_wheel_declares_the_console_script_version_and_license(wheel):
    info = f"pinn_torch-{pinn.__version__}.dist-info"
    entry_points = wheel.read(f"{info}/entry_points.txt").decode()
    assert "[console_scripts]\npinn = pinn.__main__:cli" in entry_points
    metadata = wheel.read(f"{info}/METADATA").decode().splitlines()
    assert f"Version: {pinn.__version__}" in metadata
    assert "Name: pinn-torch" in metadata  # the import name is pinn; "pinn" on PyPI is another
    assert "License-Expression: MIT" in metadata
    assert (
        "Copyright (c) 2026 the pinn developers" in wheel.read(f"{info}/licenses/LICENSE").decode()
    )


def test_every_library_target_is_under_pinn_problems():
    for path in (REPO / "conf" / "problem").glob("*.yaml"):
        # composed: a yaml may take another's problem (cavity_re1000 is cavity's at Re = 1000)
        target = compose_config([f"problem={path.stem}"]).problem.target
        module = target.rpartition(".")[0]
        assert module.startswith("pinn.problems."), path.name
        assert (REPO / "problems" / f"{module.split('.')[-1]}.py").exists(), target


def shadowing_folder(folder: Path) -> Path:
    """A user's folder holding its own problems/poisson.py and conf/problem/poisson.yaml, both
    broken: a run that used either would fail."""
    (folder / "problems").mkdir(parents=True)
    (folder / "problems" / "__init__.py").write_text("")
    (folder / "problems" / "poisson.py").write_text("raise RuntimeError('the user file ran')\n")
    (folder / "conf" / "problem").mkdir(parents=True)
    (folder / "conf" / "problem" / "poisson.yaml").write_text(
        "# @package _global_\nproblem:\n  target: problems.poisson.Poisson\n"
    )
    return folder


def test_python_m_pinn_from_a_users_folder_uses_the_librarys_poisson(tmp_path):
    run_dir = tmp_path / "run"
    result = run_pinn(
        "problem=poisson",
        *TINY,
        f"hydra.run.dir={run_dir}",
        extra_path=REPO,
        cwd=shadowing_folder(tmp_path),
    )
    assert result.returncode == 0, result.stderr
    assert "target: pinn.problems.poisson.Poisson" in (run_dir / "config.yaml").read_text()
    assert json.loads((run_dir / "metrics.json").read_text())["steps"] == 5
    assert "pinn: conf/problem/poisson.yaml here is not used: poisson is a pinn problem" in (
        result.stderr
    )


def run_script(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """The installed `pinn` console script (sys.path: the script's folder, not `cwd`)."""
    if not SCRIPT.exists():
        pytest.skip(f"no console script at {SCRIPT}: pip install -e . first")
    env = {k: v for k, v in cli_environment().items() if k != "PYTHONPATH"}
    return subprocess.run(
        [str(SCRIPT), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


def test_the_console_script_runs_a_library_problem_from_a_users_folder(tmp_path):
    run_dir = tmp_path / "run"
    result = run_script(
        "problem=heat", *TINY, f"hydra.run.dir={run_dir}", cwd=shadowing_folder(tmp_path)
    )
    assert result.returncode == 0, result.stderr
    assert "target: pinn.problems.heat.Heat" in (run_dir / "config.yaml").read_text()
    assert json.loads((run_dir / "metrics.json").read_text())["steps"] == 5


def test_the_console_script_finds_a_users_module_and_yaml_in_its_folder(tmp_path):
    (tmp_path / "conf" / "problem").mkdir(parents=True)
    (tmp_path / "conf" / "problem" / "reaction.yaml").write_text(
        "# @package _global_\nproblem:\n  target: reaction.Reaction\n  params: {}\n"
        "  n_interior: 32\n  n_boundary: 2\n  sampler: sobol\n  weights: {}\n"
    )
    (tmp_path / "reaction.py").write_text("import math\nimport notinstalledpkg_xyz\n")
    result = run_script("problem=reaction", f"hydra.run.dir={tmp_path / 'run'}", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1] == (
        "pinn: error: problem.target='reaction.Reaction': reaction.py line 2 imports "
        "notinstalledpkg_xyz, which is not installed: pip install notinstalledpkg_xyz"
    )


def test_a_users_conf_adds_names_but_replaces_none(tmp_path, monkeypatch):
    folder = shadowing_folder(tmp_path / "it's mine")  # a quote in the path, too
    (folder / "conf" / "problem" / "reaction.yaml").write_text(
        "# @package _global_\nproblem:\n  target: reaction.Reaction\n"
    )
    monkeypatch.chdir(folder)
    assert compose_config(["problem=reaction"]).problem.target == "reaction.Reaction"
    assert compose_config(["problem=poisson"]).problem.target == "pinn.problems.poisson.Poisson"
    with pytest.raises(Exception, match="reaction"):  # an explicit search path replaces ./conf
        compose_config(["problem=reaction", f"hydra.searchpath=[file://{tmp_path}]"])
