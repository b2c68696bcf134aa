"""train(cfg): configs compose, bad values are refused before work, the run directory is full."""

import csv
import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch

from pinn import MLP, ConfigError, Problem, compose_config, load_checkpoint, train
from pinn.config import CONF_DIR
from pinn.problems.poisson import Poisson

TINY = [
    "trainer.adam.steps=20",
    "trainer.lbfgs.steps=5",
    "trainer.gauss_newton.steps=5",
    "trainer.bfgs.steps=5",
    "trainer.log_every=5",
    "trainer.progress=false",
    "problem.n_interior=64",
    "problem.n_boundary=32",
    "model.width=8",
    "model.depth=2",
]
PROBLEMS = sorted(p.stem for p in (CONF_DIR / "problem").glob("*.yaml"))


@pytest.mark.parametrize("name", PROBLEMS)
def test_every_problem_config_composes_and_loads(name):
    from pinn import boundary_counts, load_problem

    cfg = compose_config([f"problem={name}"])
    problem = load_problem(cfg.problem.target, dict(cfg.problem.params))
    assert problem.domain.dim >= 1
    assert cfg.problem.n_interior > 0
    aimed = dict(cfg.problem.get("boundary_points") or {})
    assert sum(boundary_counts(problem, cfg.problem.n_boundary, aimed).values()) >= 0


@pytest.mark.parametrize(
    ("override", "key", "allowed"),
    [
        ("trainer.adam.steps=-5", "trainer.adam.steps", ">= 0"),
        ("trainer.lbfgs.steps=-1", "trainer.lbfgs.steps", ">= 0"),
        ("trainer.adam.lr=-0.1", "trainer.adam.lr", "> 0"),
        ("trainer.adam.resample_every=-2", "trainer.adam.resample_every", ">= 0"),
        ("problem.n_interior=0", "problem.n_interior", ">= 1"),
        ("problem.n_boundary=-1", "problem.n_boundary", ">= 0"),
        ("problem.sampler=grid", "problem.sampler", "uniform, sobol, lhs"),
        ("model.width=0", "model.width", ">= 1"),
        ("model.depth=0", "model.depth", ">= 1"),
        ("model.fourier_features=-2", "model.fourier_features", ">= 0"),
        ("model.input_scaling=unit", "model.input_scaling", "auto, box, none"),
        ("model.activation=relu", "model.activation", "tanh, sigmoid, softplus, silu, gelu, sin"),
        ("dtype=float16", "dtype", "float32, float64"),
        ("seed=-1", "seed", ">= 0"),
        ("device=tpu", "device='tpu'", "cpu, cuda or cuda:N"),
        ("device=cuda:999", "device='cuda:999'", "cuda"),  # no GPU here, or fewer than 1000
        ("engine=jax", "engine", "auto, taylor, autograd, functorch"),
        ("problem.target=pinn.problems.nope.Nope", "problem.target", "no pinn/problems/nope.py"),
        ("+problem.weights.bc=1", "problem.weights", "the terms are ['pde']"),
        ("trainer.weighting=softadapt", "trainer.weighting", "fixed"),
        ("trainer.weighting_alpha=0", "trainer.weighting_alpha", "(0, 1]"),
        ("refinement.method=grid", "refinement.method", "rar"),
        ("trainer.lbfgs.refine_every=-1", "trainer.lbfgs.refine_every", ">= 0"),
        ("trainer.point_weights.gamma=1", "trainer.point_weights.gamma", "[0, 1)"),
        ("trainer.point_weights.method=sa", "trainer.point_weights.method", "rba"),
        ("problem.params.hard_boundary=maybe", "hard_boundary", "true or false"),
    ],
)
def test_nonsense_is_refused_before_training(tmp_path, override, key, allowed):
    cfg = compose_config([*TINY, override])
    with pytest.raises(ConfigError) as error:
        train(cfg, tmp_path)
    assert key in str(error.value) and allowed in str(error.value)
    assert not (tmp_path / "checkpoint.pt").exists()
    assert not (tmp_path / "history.csv").exists()


def test_run_directory_holds_every_output(tmp_path):
    cfg = compose_config([*TINY, "dtype=float32", "seed=3", "model.activation=sin"])
    metrics = train(cfg, tmp_path)

    assert set(metrics) >= {"rel_l2", "max_abs_error", "wall_time_s", "steps", "final_loss"}
    assert 0 < metrics["fresh_loss"] < math.inf  # the loss at fresh points (test_fresh_loss.py)
    assert metrics["steps"] == 25
    assert json.loads((tmp_path / "metrics.json").read_text()) == metrics
    assert 0 < metrics["rel_l2"] < 10 and metrics["max_abs_error"] > 0

    config_text = (tmp_path / "config.yaml").read_text()
    assert "activation: sin" in config_text and "seed: 3" in config_text

    with open(tmp_path / "history.csv") as file:
        rows = list(csv.DictReader(file))
    assert {"step", "phase", "loss", "pde", "rel_l2"} <= set(rows[0])
    assert [int(r["step"]) for r in rows] == sorted(int(r["step"]) for r in rows)
    assert {r["phase"] for r in rows} == {"adam", "bfgs", "final"}  # poisson.yaml's phases
    assert float(rows[-1]["loss"]) == pytest.approx(metrics["final_loss"])

    for picture in ("solution.png", "loss.png"):
        assert (tmp_path / picture).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    # prediction.npz: the evaluation set, the prediction and the exact solution there.
    with np.load(tmp_path / "prediction.npz") as saved:
        assert set(saved.files) == {"points", "predicted", "reference"}
        points, predicted, reference = saved["points"], saved["predicted"], saved["reference"]
    assert points.shape == (10_000, 2) and predicted.shape == reference.shape == (10_000, 1)
    exact = np.sin(np.pi * points[:, 0]) * np.sin(np.pi * points[:, 1]) / (2 * np.pi**2)
    assert np.allclose(reference[:, 0], exact, rtol=0, atol=1e-7)  # computed in float32
    error = np.linalg.norm(predicted - reference) / np.linalg.norm(reference)
    assert error == pytest.approx(metrics["rel_l2"], rel=1e-5)  # float32 run, float64 file

    state = load_checkpoint(tmp_path / "checkpoint.pt")
    assert state["step"] == 25
    assert state["config"]["model"]["width"] == 8
    weights = [t for t in state["model"].values() if t.ndim == 2]
    assert weights[0].shape == (8, 2) and weights[0].dtype == torch.float32


def test_overrides_reach_the_objects(tmp_path):
    cfg = compose_config([*TINY, "model.width=5", "model.depth=3", "dtype=float64"])
    train(cfg, tmp_path)
    state = load_checkpoint(tmp_path / "checkpoint.pt")
    weights = [t for t in state["model"].values() if t.ndim == 2]
    assert [tuple(w.shape) for w in weights] == [(5, 2), (5, 5), (5, 5), (1, 5)]
    assert weights[0].dtype == torch.float64

    cfg = compose_config([*TINY, "model.fourier_features=3", "model.fourier_scale=2.0"])
    train(cfg, tmp_path / "fourier")  # a directory of its own: tmp_path holds the first run
    state = load_checkpoint(tmp_path / "fourier" / "checkpoint.pt")
    # Inside the hard constraint: the network's layers, the embedding after the rescaling.
    assert tuple(state["model"]["network.1.frequencies"].shape) == (2, 3)
    assert tuple(state["model"]["network.2.weight"].shape) == (8, 2 * 3 + 2)


def test_conf_dir_is_the_repository_conf():
    assert (CONF_DIR / "config.yaml").is_file()
    assert Path(CONF_DIR).name == "conf"


def test_adaptive_weights_and_refinement_reach_the_run(tmp_path):
    """trainer.weighting=lra logs each weight; refinement=rar adds its points every
    `trainer.adam.refine_every`."""
    cfg = compose_config(
        [
            *TINY,
            "problem.params.hard_boundary=false",
            "+problem.weights.dirichlet=1.0",
            "trainer.weighting=lra",
            "trainer.weighting_every=5",
            "refinement.method=rar",
            "trainer.adam.refine_every=8",
            "refinement.candidates=300",
            "refinement.add=7",
        ]
    )
    train(cfg, tmp_path)
    with open(tmp_path / "history.csv") as file:
        rows = list(csv.DictReader(file))
    weights = [float(row["weight_dirichlet"]) for row in rows]
    assert weights[0] != 1.0 and len(set(weights)) > 2  # updated at step 0 and later
    assert len({float(row["weight_pde"]) for row in rows}) == 1  # the reference stays put
    sampler = load_checkpoint(tmp_path / "checkpoint.pt")["training"]["sampler"]
    assert sampler["added"].shape == (2 * 7, 2)  # refined at steps 8 and 16 of 20


def test_the_loss_plot_draws_loss_terms_only():
    """Weights and unknowns share the history with the terms, but are not losses."""
    from pinn.plots.solution import loss_columns

    row = {"step": 0, "phase": "adam", "loss": 2.0, "lr": 1e-3, "pde": 1.0, "data": 0.5}
    row |= {"kappa": 0.7, "weight_pde": 1.0, "weight_data": 2.0, "rel_l2": 0.1, "time_s": 1.0}
    row |= {"attention_mean_weight": 0.4, "attention_max_weight": 0.9}  # point weights
    assert loss_columns(row, skip={"kappa"}) == ["loss", "pde", "data"]


def test_a_problem_without_a_solution_still_leaves_its_prediction(tmp_path):
    from pinn.evaluation.validation import evaluation_points
    from pinn.outputs.prediction import write_prediction

    class Unsolved(Poisson):
        exact = Problem.exact  # no exact solution

    problem = Unsolved()
    model = MLP(2, 1, width=4, depth=1, generator=torch.Generator().manual_seed(0)).double()
    write_prediction(tmp_path / "prediction.npz", problem, model)
    with np.load(tmp_path / "prediction.npz") as saved:
        assert set(saved.files) == {"points", "predicted"}
        points = torch.from_numpy(saved["points"])
        assert torch.equal(points, evaluation_points(problem, dtype=torch.float64))
        with torch.no_grad():
            assert np.array_equal(saved["predicted"], model(points).numpy())
