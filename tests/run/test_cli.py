"""`python -m pinn`: the command a user types, run as a subprocess with one thread."""

import json
import logging
import re
import textwrap
from pathlib import Path

import pytest
from cli_helpers import REACTION_MODULE, REPO, run_pinn

from pinn import ConfigError, compose_config, train
from pinn.run.reporting import report

FAST = [
    "trainer.adam.steps=30",
    "trainer.lbfgs.steps=5",
    "trainer.gauss_newton.steps=5",
    "trainer.bfgs.steps=5",
    "trainer.progress=false",
    "problem.n_interior=64",
    "problem.n_boundary=32",
    "model.width=8",
    "threads=1",
]

REACTION_YAML = """
# @package _global_
problem:
  target: reaction.ReactionDiffusion
  params: {}
  n_interior: 128
  n_boundary: 2
  sampler: sobol
  weights:
    dirichlet: 10.0
model:            # the problem's own settings, over the defaults
  width: 16
  depth: 2
trainer:
  adam:
    steps: 300
  lbfgs:
    steps: 50
"""


# The CLI's one-line report of such refusals: tests/run/test_refusals.py (problem=nope among them).
@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("model.activation=relu", "model.activation='relu' is unknown; choose one of tanh"),
        ("device=tpu", "device='tpu' is not a device torch knows"),
    ],
)
def test_a_bad_value_is_refused_before_any_work(tmp_path, override, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        train(compose_config([override]), tmp_path)
    assert not (tmp_path / "checkpoint.pt").exists()


def test_overrides_run_and_console_summary(tmp_path):
    result = run_pinn(
        *FAST,
        "model.depth=2",
        "model.activation=gelu",
        "trainer.adam.lr=0.01",
        "trainer.adam.resample_every=10",
        "seed=4",
        "dtype=float32",
        f"hydra.run.dir={tmp_path}",
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("residual engine: taylor (auto:") == 1  # said once, at start
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    assert f"rel_l2         {metrics['rel_l2']:.3e}" in result.stdout
    assert f"outputs in     {tmp_path}" in result.stdout
    listed = result.stdout.split(f"outputs in     {tmp_path}")[1]  # the files written, each
    written = [p.name for p in tmp_path.iterdir() if not p.name.startswith((".", "__main__"))]
    assert "solution.png" in written and all(name in listed for name in written)
    resolved = (tmp_path / "config.yaml").read_text()
    for line in (
        "activation: gelu",
        "lr: 0.01",
        "resample_every: 10",
        "seed: 4",
        "dtype: float32",
        "depth: 2",
    ):
        assert line in resolved


@pytest.mark.slow  # a four-job sweep; test_sweep's runs fast
def test_multirun_sweeps_every_combination(tmp_path):
    result = run_pinn(
        "-m",
        *FAST,
        "trainer.adam.steps=5",
        "trainer.lbfgs.steps=0",
        "trainer.gauss_newton.steps=0",
        "seed=0,1",
        "model.width=4,6",
        f"hydra.sweep.dir={tmp_path}",
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "0 of 4 jobs failed"
    runs = sorted(tmp_path.glob("*/metrics.json"))
    assert len(runs) == 4
    widths = sorted(
        int(line.split()[-1])
        for run in runs
        for line in (run.parent / "config.yaml").read_text().splitlines()
        if line.strip().startswith("width:")
    )
    assert widths == [4, 4, 6, 6]


def write_problem(folder: Path, name: str, module_name: str, module: str, yaml: str) -> Path:
    """Lay out a problem outside the repository the README's way: module + conf/problem yaml."""
    (folder / f"{module_name}.py").write_text(textwrap.dedent(module))
    (folder / "conf" / "problem").mkdir(parents=True, exist_ok=True)
    (folder / "conf" / "problem" / f"{name}.yaml").write_text(textwrap.dedent(yaml))
    return folder / "conf"


def test_a_new_problem_module_trains_to_stated_accuracy(tmp_path):
    # The README's way: reaction.py and conf/problem/reaction.yaml in the folder pinn runs from.
    write_problem(tmp_path, "reaction", "reaction", REACTION_MODULE, REACTION_YAML)
    run_dir = tmp_path / "run"
    result = run_pinn(
        "problem=reaction",
        "trainer.lbfgs.steps=200",  # the command line overrides the problem's settings
        "trainer.gauss_newton.steps=200",
        "trainer.progress=false",
        "threads=1",
        f"hydra.run.dir={run_dir}",
        extra_path=REPO,  # this checkout's pinn, from outside it
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert metrics["rel_l2"] <= 1e-3  # stated accuracy for this 1-D problem
    config = (run_dir / "config.yaml").read_text()
    assert "width: 16" in config and "depth: 2" in config and "steps: 300" in config
    assert "lbfgs:\n    steps: 200" in config and metrics["steps"] == 500


@pytest.mark.slow  # the long way; the README's way runs fast
def test_a_problem_folder_on_the_search_path_still_works(tmp_path):
    # The long way, for problems kept elsewhere: PYTHONPATH and hydra.searchpath.
    conf = write_problem(tmp_path, "reaction", "reaction", REACTION_MODULE, REACTION_YAML)
    run_dir = tmp_path / "run"
    result = run_pinn(
        "problem=reaction",
        f"hydra.searchpath=[file://{conf}]",
        *FAST,
        f"hydra.run.dir={run_dir}",
        extra_path=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert "target: reaction.ReactionDiffusion" in (run_dir / "config.yaml").read_text()


@pytest.mark.slow  # a whole CLI run; fit's divergence checks run fast
def test_nan_stops_the_cli_with_a_clear_message(tmp_path):
    module = """
    from pinn.problems.poisson import Poisson


    class NaNPoisson(Poisson):
        calls = 0

        def residual(self, x, u):
            type(self).calls += 1
            return super().residual(x, u) * (float("nan") if self.calls > 12 else 1.0)
    """
    yaml = (
        "target: nanpoisson.NaNPoisson\nparams: {}\nn_interior: 32\nn_boundary: 16\n"
        "sampler: sobol\nweights: {}\n"
    )
    conf = write_problem(tmp_path, "nanpoisson", "nanpoisson", module, yaml)
    run_dir = tmp_path / "run"
    result = run_pinn(
        "problem=nanpoisson",
        f"hydra.searchpath=[file://{conf}]",
        *FAST,
        "trainer.checkpoint_every=5",
        f"hydra.run.dir={run_dir}",
        extra_path=tmp_path,
    )
    assert result.returncode == 1
    assert "loss became nan at step 12" in result.stderr
    assert "last good checkpoint was written at step 10" in result.stderr
    assert "Traceback" not in result.stderr
    assert (run_dir / "checkpoint.pt").exists()
    assert "pinn: error: the loss became nan at step 12" in (run_dir / "__main__.log").read_text()


def test_an_error_goes_to_the_run_log_as_well_as_the_console(tmp_path, capsys):
    log_file = tmp_path / "__main__.log"
    handler = logging.FileHandler(log_file)
    logging.getLogger().addHandler(handler)
    try:
        with pytest.raises(SystemExit) as stopped:
            report("model.width must be a whole number >= 1, got 0")
    finally:
        logging.getLogger().removeHandler(handler)
        handler.close()
    assert stopped.value.code == 1
    said = "pinn: error: model.width must be a whole number >= 1, got 0"
    assert capsys.readouterr().err == said + "\n"  # once on the console: the log has no echo
    assert log_file.read_text() == said + "\n"


def test_summary_shows_learned_unknowns():
    from pinn.__main__ import summary

    metrics = {"rel_l2": 1e-3, "max_abs_error": 2e-4, "final_loss": 1e-6, "steps": 10}
    metrics["fresh_loss"] = 2e-6
    plain = summary({**metrics, "wall_time_s": 1.0}, "out")
    unknowns = {"kappa": 0.50001, "k": 1.99999999408}  # ten digits: a learned 2 is seen as such
    learned = summary({**metrics, "wall_time_s": 1.0, "unknowns": unknowns}, "out")
    assert "kappa" not in plain
    assert "kappa          0.50001 (learned)" in learned.splitlines()
    assert "k              1.999999994 (learned)" in learned.splitlines()
