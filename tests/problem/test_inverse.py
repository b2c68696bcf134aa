"""Inverse problems: unknown coefficients learned from observations of u.

Declaration and accessor errors, the `Observations` condition, unknowns reaching both
optimisers, the checkpoint and resume, history.csv and metrics.json, and the recovery of the
known coefficient of problems/inverse_poisson.py (kappa_true = 0.5) to within 1%.
"""

import csv
import io
import json
from math import pi

import pytest
import torch
from torch import nn

import pinn.training.checkpoints
from pinn import (
    MLP,
    Box,
    CheckpointError,
    ConfigError,
    Observations,
    PointSampler,
    Problem,
    TrainSettings,
    compose_config,
    fit,
    load_checkpoint,
    save_checkpoint,
    train,
)
from pinn.derivatives.engines import Engine
from pinn.derivatives.field import Field
from pinn.geometry import Batch
from pinn.nn import InputOptions
from pinn.problem import loss_terms
from pinn.problems.inverse_poisson import InversePoisson

KAPPA_TRUE = InversePoisson.kappa_true
RECOVERY_TOLERANCE = 0.01  # the issue's: kappa within 1% of the true value
SMALL = [
    "problem=inverse_poisson",
    "trainer.progress=false",
    "problem.n_interior=64",
    "problem.n_boundary=32",
    "problem.params.n_observations=32",
    "model.width=8",
    "model.depth=2",
]


def relative_error(kappa: float) -> float:
    return abs(kappa - KAPPA_TRUE) / KAPPA_TRUE


# ---- declaring and reading unknowns ------------------------------------------------------


class Declared(Problem):
    """-kappa u'' + shift = pi² sin(pi x) on [0, 1], with two unknowns."""

    domain = Box([0.0], [1.0])
    unknowns = {"kappa": 1.0, "shift": 0.0}

    def residual(self, x, u):
        source = pi**2 * torch.sin(pi * x[:, 0])
        return -self.unknown("kappa") * u.d2("x") + self.unknown("shift") - source


def test_unknowns_are_0d_trainable_parameters_after_attaching():
    problem = Declared()
    with pytest.raises(ConfigError, match=r"before its unknowns exist.*attach_unknowns"):
        problem.unknown("kappa")
    unknowns = problem.attach_unknowns(torch.float32, "cpu", initial={"kappa": 2.0})
    kappa = problem.unknown("kappa")
    assert isinstance(kappa, nn.Parameter) and kappa.requires_grad
    assert kappa.shape == () and kappa.dtype == torch.float32 and kappa.item() == 2.0
    assert unknowns.values() == {"kappa": 2.0, "shift": 0.0}
    assert problem.attached_unknowns is unknowns and unknowns.names == ("kappa", "shift")


def test_any_identifier_names_an_unknown():
    problem = Declared()
    problem.unknowns = {"values": 2.0, "keys": 3.0}  # names torch's ParameterDict refuses
    problem.attach_unknowns()
    assert problem.unknown("keys").item() == 3.0
    assert problem.attached_unknowns.values() == {"values": 2.0, "keys": 3.0}


def test_asking_an_undeclared_unknown_names_the_declared_ones():
    problem = Declared()
    for attached in (False, True):
        if attached:
            problem.attach_unknowns()
        with pytest.raises(ConfigError, match=r"no unknown named 'kapa'.*\['kappa', 'shift'\]"):
            problem.unknown("kapa")
    with pytest.raises(ConfigError, match="no unknown named 'kappa'.*unknowns = "):
        Problem().unknown("kappa")


@pytest.mark.parametrize(
    ("declared", "complaint"),
    [
        ({"step": 1.0}, "Python identifier other than step"),
        ({"2x": 1.0}, "Python identifier"),
        ({"kappa": "big"}, "'kappa' must be a finite number, got 'big'"),
        ({"kappa": float("nan")}, "finite number"),
        ({"kappa": True}, "finite number"),
        ([("kappa", 1.0)], "must map names to initial guesses"),
    ],
)
def test_bad_declarations_are_refused(declared, complaint):
    problem = Declared()
    problem.unknowns = declared
    with pytest.raises(ConfigError, match=complaint):
        problem.attach_unknowns()


def test_bad_initial_guesses_from_the_config_are_refused():
    with pytest.raises(ConfigError, match=r"problem.unknowns names \['kapa'\].*\['kappa', 'shift'"):
        Declared().attach_unknowns(initial={"kapa": 2.0})
    with pytest.raises(ConfigError, match="problem.unknowns.kappa must be a finite number"):
        Declared().attach_unknowns(initial={"kappa": "two"})


# ---- observations ------------------------------------------------------------------------


class Known(nn.Module):
    """A pointwise 'network' computing a known function of the (N, d) points: (N, m)."""

    def __init__(self, function):
        super().__init__()
        self.function = function

    def forward(self, x):
        return self.function(x)


def test_observations_are_u_minus_values_at_their_points_in_the_models_dtype(generator):
    points = torch.rand(7, 2, generator=generator)  # float32 data, a float64 model
    model = Known(lambda x: torch.stack([x.sum(1), x.prod(1)], dim=1))
    u = Field(model, torch.rand(3, 2, dtype=torch.float64), ("x", "y"), ("u", "v"))
    values = torch.ones(7)
    residual = Observations(points, values, out="v").residual(u, None)
    assert residual.dtype == torch.float64
    torch.testing.assert_close(residual, points.double().prod(1) - 1)
    both = Observations(points, torch.zeros(7, 2)).residual(u, None)
    torch.testing.assert_close(both, model(points.double()).reshape(-1))


@pytest.mark.parametrize(
    ("points", "values", "out", "complaint"),
    [
        (torch.rand(5), torch.rand(5), None, r"got \(5,\); for one coordinate, points\[:, None\]"),
        (torch.rand(0, 2), torch.rand(0), None, "M >= 1"),
        (torch.rand(5, 2), torch.rand(4), None, r"\(5,\) or \(5, m\) tensor.*got \(4,\)"),
        (torch.rand(5, 2), ["a"] * 5, None, "got list"),
        (torch.rand(5, 2), torch.rand(5, 2), "u", r"picks one output, so values must be \(5,\)"),
        (torch.rand(5, 2), torch.full((5,), float("nan")), None, "must all be finite"),
    ],
)
def test_observations_of_the_wrong_shape_are_refused(points, values, out, complaint):
    with pytest.raises(ConfigError, match=complaint):
        Observations(points, values, out=out)


def test_observations_take_numpy_arrays_and_lists_of_numbers_as_tensors():
    import numpy as np

    points = np.array([[0.25, 0.5], [0.75, 0.5]])
    from_numpy = Observations(points, np.array([1.0, 2.0]))
    from_lists = Observations(points.tolist(), [1.0, 2.0])
    for observations in (from_numpy, from_lists):
        assert observations.points.dtype == torch.float64
        torch.testing.assert_close(observations.points, torch.tensor(points))
        torch.testing.assert_close(
            observations.values, torch.tensor([1.0, 2.0], dtype=torch.float64)
        )


def test_observations_outside_the_domain_are_warned_of_when_training_starts(pinn_messages):
    class Outside(InversePoisson):
        def __init__(self):
            super().__init__(n_observations=8)
            shifted = Observations(self.conditions[-1].points + 1.5, torch.zeros(8))
            self.conditions = [*self.conditions[:-1], shifted]

    problem = Outside()
    settings = TrainSettings(adam={"steps": 1}, lbfgs={"steps": 0}, progress=False)
    points = PointSampler(problem.domain, 16, 8, "sobol", torch.Generator().manual_seed(1))
    fit(problem, small_model(problem).float(), settings, points)
    warned = [m for m in pinn_messages() if "outside the domain" in m]
    assert len(warned) == 1 and "8 of the 8 points" in warned[0]
    tiny_fit(settings)  # inside: nothing more
    assert len([m for m in pinn_messages() if "outside the domain" in m]) == 1


def test_an_unknown_no_term_depends_on_is_warned_of_once(pinn_messages):
    class Forgetful(InversePoisson):
        unknowns = {"kappa": 1.0, "spare": 0.5}  # spare: never read by the residual

    problem = Forgetful(n_observations=8)
    settings = TrainSettings(adam={"steps": 3}, lbfgs={"steps": 2}, progress=False)
    points = PointSampler(problem.domain, 16, 8, "sobol", torch.Generator().manual_seed(1))
    result = fit(problem, small_model(problem).float(), settings, points)
    warned = [m for m in pinn_messages() if "no loss term depends on it" in m]
    assert len(warned) == 1 and warned[0].startswith("unknown 'spare'")
    assert result.history[-1]["spare"] == 0.5  # as told: it stays at its guess
    tiny_fit(settings)  # kappa is read: nothing more
    assert len([m for m in pinn_messages() if "no loss term depends on it" in m]) == 1


def test_observations_must_match_the_domain_and_the_outputs(generator):
    u = Field(Known(lambda x: x), torch.rand(3, 2, dtype=torch.float64), ("x", "y"), ("u", "v"))
    cases = [
        (Observations(torch.rand(4, 3), torch.rand(4, 2)), "points have 3 coordinates"),
        (Observations(torch.rand(4, 2), torch.rand(4, 3)), "values have 3 columns"),
        (Observations(torch.rand(4, 2), torch.rand(4)), r"2 outputs \(u, v\).*out="),
    ]
    for observations, complaint in cases:
        with pytest.raises(ConfigError, match=complaint):
            observations.residual(u, None)


def test_observations_agree_on_the_taylor_and_autograd_engines(generator):
    problem = InversePoisson(n_observations=16)
    problem.attach_unknowns()
    model = small_model(problem)
    box = problem.domain
    batch = Batch(
        box.sample_interior(20, generator, dtype=torch.float64),
        box.sample_boundary(12, generator, dtype=torch.float64),
    )
    reference = loss_terms(problem, model, batch, Engine("autograd", model, announce=False))
    taylor = Engine("taylor", model, announce=False)
    for _ in range(2):  # records, then runs the planned pass
        terms = loss_terms(problem, model, batch, taylor)
        torch.testing.assert_close(terms, reference, atol=1e-12, rtol=1e-12)
    assert reference["data"] > 0 and set(reference) == {"pde", "dirichlet", "data"}


# ---- training the unknowns ---------------------------------------------------------------


def small_model(problem, seed=0):
    box = problem.domain
    return MLP(
        box.dim,
        1,
        width=8,
        depth=2,
        inputs=InputOptions(lower=box.lower, upper=box.upper),
        generator=torch.Generator().manual_seed(seed),
    ).double()


def tiny_fit(settings, **options):
    """fit a tiny InversePoisson; returns (problem, model, FitResult)."""
    problem = InversePoisson(n_observations=32)
    model = small_model(problem)
    points = PointSampler(
        problem.domain, 64, 32, "sobol", torch.Generator().manual_seed(1), dtype=torch.float64
    )
    weights = {"dirichlet": 100.0, "data": 100.0}
    return problem, model, fit(problem, model, settings, points, weights=weights, **options)


@pytest.mark.parametrize(("steps", "lbfgs_steps"), [(3, 0), (0, 3)])
def test_both_optimisers_move_the_unknowns(steps, lbfgs_steps):
    settings = TrainSettings(
        adam={"steps": steps}, lbfgs={"steps": lbfgs_steps}, log_every=1, progress=False
    )
    problem, _, result = tiny_fit(settings)
    if steps:  # Adam logs the state before each step, so its first row has the guess
        assert result.history[0]["kappa"] == 1.0
    kappas = {1.0, *(row["kappa"] for row in result.history)}
    assert len(kappas) == 4  # the declared guess and a new value after each of the 3 steps
    assert problem.unknown("kappa").dtype == torch.float64
    assert result.history[-1]["kappa"] == problem.unknown("kappa").item()


def test_fit_refuses_unknowns_attached_in_another_dtype():
    problem = InversePoisson(n_observations=8)
    problem.attach_unknowns(torch.float32)
    generator = torch.Generator().manual_seed(0)
    points = PointSampler(problem.domain, 8, 8, "sobol", generator, dtype=torch.float64)
    with pytest.raises(ConfigError, match="unknowns are torch.float32.*the model torch.float64"):
        fit(
            problem,
            small_model(problem),
            TrainSettings(adam={"steps": 1}, lbfgs={"steps": 0}),
            points,
        )


def test_an_unknown_named_like_a_loss_term_is_refused():
    class Clash(InversePoisson):
        unknowns = {"kappa": 1.0, "data": 0.0}

    problem = Clash(n_observations=8)
    generator = torch.Generator().manual_seed(0)
    points = PointSampler(problem.domain, 8, 8, "sobol", generator, dtype=torch.float64)
    settings = TrainSettings(adam={"steps": 1}, lbfgs={"steps": 0}, progress=False)
    with pytest.raises(ConfigError, match=r"\['data'\] share their name with a loss term"):
        fit(problem, small_model(problem), settings, points)


def keep_checkpoints(monkeypatch, write: bool) -> list[dict]:
    """Every state the trainer checkpoints, copied as it is written (then maybe written)."""
    written, save = [], pinn.training.checkpoints.save_checkpoint

    def keep(path, state):
        buffer = io.BytesIO()
        torch.save(state, buffer)  # the live state changes on: copy it through the file format
        written.append(torch.load(io.BytesIO(buffer.getvalue()), weights_only=True))
        if write:
            save(path, state)

    monkeypatch.setattr(pinn.training.checkpoints, "save_checkpoint", keep)
    return written


def same_rows(rows):
    """History rows without their times, as text (so NaN learning rates compare equal)."""
    return repr([{k: v for k, v in row.items() if k != "time_s"} for row in rows])


SETTINGS = TrainSettings(
    adam={"steps": 12, "resample_every": 5},
    lbfgs={"steps": 10},
    log_every=3,
    checkpoint_every=4,
    progress=False,
)


def test_resuming_from_any_checkpoint_restores_the_unknowns_exactly(monkeypatch):
    written = keep_checkpoints(monkeypatch, write=False)
    problem, model, result = tiny_fit(SETTINGS, checkpoint_path="unused.pt")
    final_kappa = problem.unknown("kappa").item()
    assert written[-1]["unknowns"]["kappa"].item() == final_kappa != 1.0
    kappas = [state["unknowns"]["kappa"].item() for state in written]
    assert len(set(kappas)) == len(kappas)  # each checkpoint holds the kappa of its step
    for state in written:
        resumed_problem, resumed_model, resumed = tiny_fit(SETTINGS, resume_from=state)
        where = f"resumed at step {state['step']} ({state['training']['phase']})"
        assert resumed_problem.unknown("kappa").item() == final_kappa, where
        assert same_rows(resumed.history) == same_rows(result.history), where
        assert all(map(torch.equal, model.parameters(), resumed_model.parameters())), where
    assert {state["training"]["phase"] for state in written} == {"adam", "lbfgs", "done"}


def test_a_checkpoint_with_other_unknowns_is_refused(monkeypatch, tmp_path):
    path = tmp_path / "checkpoint.pt"
    tiny_fit(
        TrainSettings(adam={"steps": 2}, lbfgs={"steps": 0}, progress=False), checkpoint_path=path
    )
    state = load_checkpoint(path)
    state["unknowns"] = {"kappa": torch.tensor(1.0), "gamma": torch.tensor(0.0)}
    save_checkpoint(path, state)
    with pytest.raises(CheckpointError, match=r"unknowns \['gamma', 'kappa'\] are not"):
        tiny_fit(
            TrainSettings(adam={"steps": 2}, lbfgs={"steps": 0}, progress=False), resume_from=path
        )


# ---- train(cfg): config, history.csv, metrics.json, resume -------------------------------


def history(run_dir):
    with open(run_dir / "history.csv") as file:
        return list(csv.DictReader(file))


def test_the_run_directory_records_the_unknowns(tmp_path):
    cfg = compose_config(
        [
            *SMALL,
            "trainer.adam.steps=10",
            "trainer.lbfgs.steps=4",
            "trainer.gauss_newton.steps=4",
            "trainer.log_every=5",
            "problem.unknowns.kappa=2.0",
        ]
    )
    metrics = train(cfg, tmp_path)
    rows = history(tmp_path)
    assert "kappa" in rows[0] and float(rows[0]["kappa"]) == 2.0  # the config's guess
    assert float(rows[-1]["kappa"]) == metrics["unknowns"]["kappa"] != 2.0
    assert json.loads((tmp_path / "metrics.json").read_text())["unknowns"] == metrics["unknowns"]
    assert (
        load_checkpoint(tmp_path / "checkpoint.pt")["unknowns"]["kappa"].item()
        == (metrics["unknowns"]["kappa"])
    )


@pytest.mark.parametrize(
    ("override", "complaint"),
    [
        ("+problem.unknowns.gamma=1.0", r"problem.unknowns names \['gamma'\]"),
        ("problem.unknowns.kappa=big", "problem.unknowns.kappa must be a finite number"),
        ("problem.unknowns=3", "problem.unknowns must map unknown names to initial guesses"),
    ],
)
def test_bad_unknowns_in_the_config_are_refused_before_training(tmp_path, override, complaint):
    with pytest.raises(ConfigError, match=complaint):
        train(compose_config([*SMALL, override]), tmp_path)
    assert not (tmp_path / "history.csv").exists()


def test_a_resumed_run_continues_with_its_unknowns(tmp_path, monkeypatch):
    run = [
        *SMALL,
        "trainer.adam.steps=10",
        "trainer.lbfgs.steps=6",
        "trainer.gauss_newton.steps=6",
        "trainer.log_every=2",
        "trainer.checkpoint_every=4",
    ]
    written = keep_checkpoints(monkeypatch, write=True)
    reference = train(compose_config(run), tmp_path / "whole")
    monkeypatch.undo()
    middle = next(state for state in written if state["training"]["phase"] == "gauss_newton")
    killed = tmp_path / "killed"
    save_checkpoint(killed / "checkpoint.pt", middle)  # as if the run had been killed there
    with pytest.raises(ConfigError, match=r"problem.unknowns.kappa=2.0 \(saved: 1.0\)"):
        train(compose_config([*run, "problem.unknowns.kappa=2.0", f"resume={killed}"]), tmp_path)
    resumed = train(compose_config([*run, f"resume={killed}"]), tmp_path / "resumed")
    assert resumed["unknowns"] == reference["unknowns"]
    kappas = [[row["kappa"] for row in history(tmp_path / d)] for d in ("resumed", "whole")]
    assert kappas[0] == kappas[1] and len(set(kappas[0])) > 10


# ---- recovering the known coefficient ----------------------------------------------------


def test_a_short_run_recovers_kappa_to_within_1_percent(tmp_path):
    # Measured (Adam + 30 Gauss-Newton): relative error 4.9e-7 (seed 0), 3.5e-8 (1), 1.1e-6 (2),
    # 1 to 3 s each.
    cfg = compose_config(
        [
            *SMALL,
            "problem.n_interior=128",
            "problem.n_boundary=64",
            "problem.params.n_observations=64",
            "model.width=16",
            "trainer.adam.steps=200",
            "trainer.gauss_newton.steps=30",
            "trainer.log_every=100",
        ]
    )
    metrics = train(cfg, tmp_path)
    assert relative_error(metrics["unknowns"]["kappa"]) <= RECOVERY_TOLERANCE
    assert metrics["rel_l2"] <= 1e-2


@pytest.mark.slow
def test_a_reduced_default_run_recovers_kappa_to_within_2e_7(tmp_path):
    # The default command with 500 of its 1000 Adam steps and 30 of its 100 Gauss-Newton
    # iterations: kappa 0.500000032 (relative error 6.3e-8), rel_l2 1.53e-5, in 14 s on one thread
    # (the bounds about 3x these). The whole default (README): kappa 0.50000008 (error 1.5e-7),
    # rel_l2 3.13e-6, in 33 s; issue 18's bound there is 1e-6 (Adam + L-BFGS reached 1.4e-5).
    overrides = ["trainer.adam.steps=500", "trainer.gauss_newton.steps=30"]
    cfg = compose_config(["problem=inverse_poisson", *overrides, "trainer.progress=false"])
    metrics = train(cfg, tmp_path)
    assert relative_error(metrics["unknowns"]["kappa"]) <= 2e-7
    assert metrics["rel_l2"] <= 5e-5
