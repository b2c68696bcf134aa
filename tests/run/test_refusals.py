"""Every mistake refused in one line, `pinn: error: ...` and exit 1, before any work: unknown
config keys (with or without +) with their block's keys and the closest one, values of the
wrong type, resume= a yaml, a refused checkpoint, wrong problem modules; under torchrun said
once; and `--help` lists every key with its explanation."""

import pickle
import socket
import subprocess
import sys
from dataclasses import fields, is_dataclass

import pytest
import torch
from cli_helpers import REPO, cli_environment, run_pinn
from test_cli import FAST, REACTION_MODULE, write_problem
from test_experiment import PROBLEMS

from pinn import CheckpointError, ConfigError, compose_config, load_problem, train
from pinn.config.docs import key_docs, key_reference
from pinn.config.schema import RunConfig, check_config, unknown_key
from pinn.training.checkpoints import load_checkpoint


def refused(result) -> str:
    """The one line a refused command printed (asserting that it is one, and exit 1)."""
    assert result.returncode == 1, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("pinn: error: "), result.stderr
    assert "Traceback" not in result.stderr and "HYDRA_FULL_ERROR" not in result.stderr
    return lines[0]


WIDTH_TYPO = "unknown config key 'model.widht': the keys of model are name, params, width, depth"


# Three cases here; the others, each a whole CLI run, with the slow tests (the same checks run
# in process in test_a_right_config_from_a_notebook_passes_and_a_wrong_one_is_refused).
SLOW = pytest.mark.slow


@pytest.mark.parametrize(
    ("override", "messages"),
    [
        ("+model.widht=3", [WIDTH_TYPO, "did you mean model.width?"]),
        ("model.widht=3", [WIDTH_TYPO, "did you mean model.width?"]),
        pytest.param(
            "+trainer.foo=1",
            ["unknown config key 'trainer.foo': the keys of trainer are phases, adam, lbfgs"],
            marks=SLOW,
        ),
        pytest.param(
            "+sed=1",
            ["unknown config key 'sed': the top-level keys are seed", "did you mean seed?"],
            marks=SLOW,
        ),
        pytest.param(
            "+problem.params.hard_boundry=false",
            [
                "'problem.params.hard_boundry': Poisson() takes the params hard_boundary",
                "did you mean problem.params.hard_boundary?",
            ],
            marks=SLOW,
        ),
        pytest.param(
            "threads=-1",
            ["threads must be a whole number >= 1 (or null: torch's default), got -1"],
            marks=SLOW,
        ),
        pytest.param(
            "threads=two", ["threads must be null or a whole number: Value 'two'"], marks=SLOW
        ),
        pytest.param("seed=x", ["seed must be a whole number: Value 'x'"], marks=SLOW),
        pytest.param(
            "problem.weights=5",
            ["problem.weights must be a mapping of names to numbers"],
            marks=SLOW,
        ),
        (
            "problem=nope",
            [
                "Could not find 'problem/nope'",
                "annulus, beltrami, burgers, ",
                "heat, ",
                "Your own problem yamls are read from conf/problem/ in the folder pinn runs from (",
            ],
        ),
        # read only once the run has started: no "Error executing job" line from Hydra first
        ("~problem.target", ["problem.target has no value", "give it in the problem's yaml"]),
    ],
)
def test_a_config_mistake_is_refused_in_one_line(tmp_path, override, messages):
    line = refused(run_pinn(*FAST, override, f"hydra.run.dir={tmp_path}"))
    for message in messages:
        assert message in line
    assert not (tmp_path / "config.yaml").exists()  # before any work


def test_resume_given_a_config_yaml_asks_for_the_run_directory(tmp_path):
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "config.yaml").write_text("seed: 0\n")
    line = refused(
        run_pinn(*FAST, f"resume={tmp_path}/old/config.yaml", f"hydra.run.dir={tmp_path}/new")
    )
    assert f"is a config file; give the run directory it lies in (resume={tmp_path}/old)" in line


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Foreign:
    """A class torch.load(weights_only=True) will not rebuild."""


@pytest.mark.parametrize(
    ("content", "why"),
    [
        (Foreign(), "it holds Python objects besides tensors"),
        (b"", "it is empty or truncated"),
        (b"seed: 0\n", "it is not a file torch.save wrote"),
    ],
)
def test_a_refused_checkpoint_says_why_without_torchs_advice(tmp_path, content, why):
    path = tmp_path / "checkpoint.pt"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        torch.save({"format": "pinn-checkpoint-1", "x": content}, path, pickle_module=pickle)
    with pytest.raises(CheckpointError) as error:
        load_checkpoint(path)
    assert why in str(error.value) and "\n" not in str(error.value)
    assert "weights_only" not in str(error.value)


BROADCASTING = """
from pinn.problems.poisson import Poisson


class Broadcasting(Poisson):
    def residual(self, x, u):
        return u.laplacian() + x[:, :1]
"""


def test_a_wrong_problem_module_is_refused_before_training(tmp_path):
    yaml = (
        "# @package _global_\nproblem:\n  target: broadcasting.Broadcasting\n  params: {}\n"
        "  n_interior: 64\n  n_boundary: 32\n  sampler: sobol\n  weights: {}\n"
    )
    conf = write_problem(tmp_path, "broadcasting", "broadcasting", BROADCASTING, yaml)
    run_dir = tmp_path / "run"
    result = run_pinn(
        "problem=broadcasting",
        f"hydra.searchpath=[file://{conf}]",
        *FAST,
        f"hydra.run.dir={run_dir}",
        extra_path=tmp_path,
    )
    line = refused(result)
    assert "Broadcasting.residual: the term 'pde' has shape (64, 64), expected (64,)" in line
    assert not (run_dir / "checkpoint.pt").exists() and not (run_dir / "history.csv").exists()


def test_under_torchrun_a_config_error_is_printed_once(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master-port",
         str(free_port()), "-m", "pinn", *FAST, "+model.widht=3", f"hydra.run.dir={tmp_path}"],
        cwd=REPO, env=cli_environment(), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode != 0
    assert result.stderr.count("pinn: error: unknown config key 'model.widht'") == 1


def test_help_lists_every_key_with_its_explanation():
    result = run_pinn("--help")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    for key, default, doc in key_reference():  # a block has no default of its own
        assert any(line.split() == [key, *default.split(), *doc.split()] for line in lines), key
    assert any(line.startswith("problem: ") and "poisson" in line for line in lines)


def test_help_lists_the_problems_of_the_folder_it_runs_in(tmp_path):
    """Hydra's own listing leaves out conf/ there (a search path pinn adds); a name that
    shadows one of pinn's is not offered, as it is not used."""
    (tmp_path / "conf" / "problem").mkdir(parents=True)
    for name in ("mine", "poisson"):
        (tmp_path / "conf" / "problem" / f"{name}.yaml").write_text("target: mine.Mine\n")
    result = run_pinn("--help", cwd=tmp_path, extra_path=REPO)
    assert result.returncode == 0, result.stderr
    problems = [line for line in result.stdout.splitlines() if line.startswith("problem: ")]
    assert len(problems) == 1 and problems[0].endswith("; in ./conf: mine")


def leaf_keys(schema: type, prefix: str = "") -> set[str]:
    """The dotted keys of a schema's fields that are not blocks themselves."""
    keys: set[str] = set()
    for f in fields(schema):
        nested = f.default_factory() if callable(f.default_factory) else None
        if is_dataclass(nested):
            keys |= leaf_keys(type(nested), f"{prefix}{f.name}.")
        else:
            keys.add(prefix + f.name)
    return keys


def test_every_key_of_the_schema_is_explained_once_and_no_other():
    docs = key_docs()
    leaves = {key for key in docs if not any(other.startswith(f"{key}.") for other in docs)}
    assert leaf_keys(RunConfig) == leaves
    assert [key for key, doc in docs.items() if not doc] == []


@pytest.mark.parametrize("name", PROBLEMS)
def test_every_library_problem_passes_the_checks(name):
    cfg = compose_config([f"problem={name}"])
    check_config(cfg)
    assert load_problem(cfg.problem.target, dict(cfg.problem.params)).domain.dim >= 1


def test_a_right_config_from_a_notebook_passes_and_a_wrong_one_is_refused():
    check_config(compose_config(["model.width=64", "trainer.compile=true", "threads=2"]))
    cfg = compose_config(["+trainer.adam.stesp=5"])
    with pytest.raises(ConfigError, match="did you mean trainer.adam.steps"):
        check_config(cfg)


@pytest.mark.parametrize(
    ("override", "message"),
    [
        (
            "+trainer.foo=1",
            "unknown config key 'trainer.foo': the keys of trainer are phases, adam",
        ),
        ("+trainer.steps=1", "did you mean trainer.adam.steps?"),  # phases-rename: keep
        ("+trainer.lbfgs_steps=1", "did you mean trainer.lbfgs.steps?"),  # phases-rename: keep
        ("+trainer.lr=1", "did you mean trainer.adam.lr?"),  # phases-rename: keep
        ("+sed=1", "did you mean seed?"),
        ("threads=two", "threads must be null or a whole number: Value 'two'"),
        ("seed=x", "seed must be a whole number: Value 'x'"),
        ("problem.weights=5", "problem.weights must be a mapping of names to numbers"),
        (
            "trainer.phases=adam",
            "trainer.phases must be a list of strings in brackets, e.g. "
            "trainer.phases=[adam,gauss_newton]",
        ),
        ("outputs.plot_formats=png", "e.g. outputs.plot_formats=[png,pdf]"),
    ],
)
def test_the_cli_cases_are_refused_in_process_too(override, message):
    with pytest.raises(ConfigError) as error:
        check_config(compose_config([override]))
    assert message in str(error.value) and "\n" not in str(error.value)


def test_a_new_key_of_a_free_block_without_plus_is_told_to_check_it_or_use_plus():
    message = unknown_key("problem.weights.nuemann")
    assert message.startswith("problem.weights.nuemann is not in the config yet; check its spell")
    assert message.endswith("with a +: +problem.weights.nuemann=<value>")


@pytest.mark.parametrize("key", ["problem.problem", "problem.model.width", "problem.trainer"])
def test_a_problem_yaml_without_its_package_line_is_told_to_add_it(key):
    block = key.split(".")[1]
    assert unknown_key(key) == (
        f"unknown config key {key!r}: a yaml in conf/problem/ that gives '{block}:' must begin "
        "with the line '# @package _global_'; add it"
    )


@pytest.mark.parametrize(
    "yaml",
    [
        "# @package _global_\nproblem:\n  target: reaction.ReactionDiffusion\n",
        "target: reaction.ReactionDiffusion\n",  # without the header: the problem block itself
    ],
)
def test_a_problem_yaml_giving_only_its_target_trains_with_the_defaults(
    tmp_path, monkeypatch, yaml
):
    write_problem(tmp_path, "reaction", "reaction", REACTION_MODULE, yaml)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    short = ["trainer.adam.steps=100", "trainer.lbfgs.steps=100", "trainer.progress=false"]
    cfg = compose_config(["problem=reaction", *short, "model.width=8", "threads=1"])
    assert (cfg.problem.n_interior, cfg.problem.sampler, dict(cfg.problem.params)) == (
        2000,
        "sobol",
        {},
    )
    check_config(cfg)
    if yaml.startswith("#"):  # one of the two trains (they compose alike)
        assert train(cfg, tmp_path / "run")["rel_l2"] < 1e-2


def test_a_problem_yaml_without_its_target_is_refused_naming_the_key(tmp_path, monkeypatch):
    write_problem(tmp_path, "notarget", "reaction", REACTION_MODULE, "n_interior: 64\n")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError) as error:
        check_config(compose_config(["problem=notarget"]), key_docs())
    message = str(error.value)
    assert message.startswith("problem.target has no value (problem.target: the Problem class")
    assert message.endswith("on the command line, problem.target=<value>")
