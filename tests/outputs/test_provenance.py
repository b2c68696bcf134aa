"""metrics.json records how the run was made: problem, seed, device, dtype, versions, times."""

import json
import platform
import textwrap
from datetime import datetime, timedelta, timezone

import pytest
import torch
from cli_helpers import run_pinn

import pinn
from pinn import compose_config, train

SMALL = [
    "trainer.adam.steps=5",
    "trainer.lbfgs.steps=0",
    "trainer.gauss_newton.steps=0",
    "trainer.progress=false",
    "problem.n_interior=64",
    "problem.n_boundary=32",
    "model.width=8",
    "model.depth=2",
]


def as_time(text: str) -> datetime:
    moment = datetime.fromisoformat(text)
    assert moment.utcoffset() == timedelta(0), f"{text} is not UTC"
    return moment


def test_metrics_record_the_problem_settings_versions_and_times(tmp_path):
    before = datetime.now(timezone.utc).replace(microsecond=0)
    metrics = train(compose_config([*SMALL, "problem=heat", "seed=3", "dtype=float32"]), tmp_path)
    after = datetime.now(timezone.utc)

    assert json.loads((tmp_path / "metrics.json").read_text()) == metrics
    assert metrics["problem"]["name"] == "heat"
    assert metrics["problem"]["target"].endswith("heat.Heat")
    assert (metrics["seed"], metrics["device"], metrics["dtype"]) == (3, "cpu", "float32")
    assert metrics["versions"] == {
        "pinn": pinn.__version__,
        "torch": torch.__version__,
        "python": platform.python_version(),
    }
    started, ended = as_time(metrics["started"]), as_time(metrics["ended"])
    assert before <= started <= ended <= after


MODULE = '''
from pinn import Box, Dirichlet, Problem


class Square(Problem):
    """-Δu = 1 on [0, 1]², u = 0 on the boundary."""

    domain = Box([0.0, 0.0], [1.0, 1.0])
    conditions = [Dirichlet(on="boundary", value=0.0)]

    def residual(self, x, u):
        return u.laplacian() + 1.0
'''
YAML = """
# @package _global_
problem:
  target: square_module.Square
  params: {}
  n_interior: 64
  n_boundary: 32
  sampler: sobol
  weights: {}
"""


@pytest.mark.slow  # whole CLI runs; the library-level tests above are fast
def test_the_cli_records_the_config_name_the_user_chose(tmp_path):
    (tmp_path / "square_module.py").write_text(textwrap.dedent(MODULE))
    (tmp_path / "conf" / "problem").mkdir(parents=True)
    (tmp_path / "conf" / "problem" / "my_square.yaml").write_text(textwrap.dedent(YAML))
    run_dir = tmp_path / "run"
    result = run_pinn(
        "problem=my_square",
        f"hydra.searchpath=[file://{tmp_path / 'conf'}]",
        *SMALL[:3],
        "threads=1",
        f"hydra.run.dir={run_dir}",
        extra_path=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert metrics["problem"] == {
        "name": "my_square",
        "target": "square_module.Square",
        "file": str((tmp_path / "square_module.py").resolve()),  # where load_run looks
    }
    assert metrics["rel_l2"] is None  # no exact solution: the record does not depend on one
