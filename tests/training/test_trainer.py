"""The training loop: reproducible, resamples when asked, stops cleanly on a NaN loss."""

import csv
import io
import math

import pytest
import torch

from pinn import (
    MLP,
    Box,
    ConfigError,
    Dirichlet,
    HistoryFile,
    PointSampler,
    Problem,
    SpaceTime,
    TrainingDiverged,
    TrainSettings,
    fit,
    load_checkpoint,
)
from pinn.nn import InputOptions
from pinn.plots.loss import loss_columns
from pinn.problems.poisson import Poisson


def small_run(
    problem=None, seed=0, dtype=torch.float64, weights=None, fit_options=None, **settings
):
    """A tiny Poisson fit (with a soft Dirichlet term), or of `problem` (2 inputs): returns the
    model and the FitResult; `fit_options` go to `fit` (checkpoint_path, resume_from, ...)."""
    problem = problem or Poisson(hard_boundary=False)
    model = MLP(
        2,
        len(problem.outputs),
        width=8,
        depth=2,
        inputs=InputOptions(lower=problem.domain.lower, upper=problem.domain.upper),
        generator=torch.Generator().manual_seed(seed),
    ).to(dtype)
    points = PointSampler(
        problem.domain, 64, 32, "sobol", torch.Generator().manual_seed(seed + 1), dtype=dtype
    )
    options = dict(adam={"steps": 20}, lbfgs={"steps": 10}, log_every=5, progress=False)
    settings = TrainSettings(**(options | settings))
    result = fit(problem, model, settings, points, weights=weights, **(fit_options or {}))
    return model, result


def flat(model):
    return torch.cat([p.detach().flatten() for p in model.parameters()])


def untimed(history):
    return repr([{k: v for k, v in row.items() if k != "time_s"} for row in history])


def resume_from_each(written, settings, model, result) -> list[dict]:
    """Resume `small_run(**settings)` from each checkpoint in `written` (serialised, the
    `written_checkpoints` fixture's) and require the uninterrupted run's parameters, final loss
    and history (but its times) bit for bit; returns the checkpoints' states."""
    states = []
    for data in written:
        state = torch.load(io.BytesIO(data), weights_only=True)
        states.append(state)
        options = {"checkpoint_path": "unused.pt", "resume_from": state}
        resumed_model, resumed = small_run(**settings, fit_options=options)
        where = f"resumed at step {state['step']} ({state['training']['phase']})"
        assert torch.equal(flat(resumed_model), flat(model)), where
        assert resumed.final_loss == result.final_loss, where
        assert untimed(resumed.history) == untimed(result.history), where
    return states


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_same_seed_same_result_other_seed_differs(dtype):
    first, first_result = small_run(seed=0, dtype=dtype)
    again, again_result = small_run(seed=0, dtype=dtype)
    other, _ = small_run(seed=1, dtype=dtype)
    assert torch.equal(flat(first), flat(again))
    assert first_result.history == [
        {**row, "time_s": first_result.history[i]["time_s"]}
        for i, row in enumerate(again_result.history)
    ]
    assert not torch.allclose(flat(first), flat(other))


def test_training_lowers_the_loss():
    _, result = small_run(adam={"steps": 100}, lbfgs={"steps": 50})
    assert result.final_loss < 0.05 * result.history[0]["loss"]
    assert result.steps == 150
    assert [row["phase"] for row in result.history][-1] == "final"


@pytest.fixture
def drawn(monkeypatch):
    """The interior points of every `PointSampler.draw` of the test, in order."""
    interiors = []
    original = PointSampler.draw

    def spy(self):
        batch = original(self)
        interiors.append(batch.interior.clone())
        return batch

    monkeypatch.setattr(PointSampler, "draw", spy)
    return interiors


def test_resampling_redraws_the_points_every_n_steps(drawn):
    small_run(adam={"steps": 7, "resample_every": 3}, lbfgs={"steps": 0})
    assert len(drawn) == 3  # at steps 0, 3 and 6
    assert not torch.allclose(drawn[0], drawn[1])
    assert not torch.allclose(drawn[1], drawn[2])

    drawn.clear()
    small_run(adam={"steps": 7, "resample_every": 0}, lbfgs={"steps": 0})
    assert len(drawn) == 1


def test_gauss_newton_redraws_the_points_every_n_iterations(drawn):
    """Its iterations 2 and 4 of 5 start on new points (0: never), all five taken."""
    gauss_newton = {"steps": 5, "resample_every": 2, "stall_window": 0}
    _, result = small_run(
        phases=["adam", "gauss_newton"], adam={"steps": 3}, gauss_newton=gauss_newton
    )
    assert len(drawn) == 3  # Adam's, then before Gauss-Newton's iterations 2 and 4
    assert not torch.allclose(drawn[1], drawn[2])
    rows = [row for row in result.history if row["phase"] == "gauss_newton"]
    assert len(rows) == 5
    drawn.clear()
    small_run(phases=["adam", "gauss_newton"], adam={"steps": 3}, gauss_newton={"steps": 5})
    assert len(drawn) == 1


def test_gauss_newton_rows_record_the_length_and_damping_of_each_step():
    """gn_length: one of the line search's lengths; gn_damping: in the units of the setting,
    so the first step's is the damping asked for; neither is a loss term."""
    gauss_newton = {"steps": 4, "damping": 1e-3, "stall_window": 0}
    _, result = small_run(
        phases=["adam", "gauss_newton"], adam={"steps": 3}, gauss_newton=gauss_newton
    )
    rows = [row for row in result.history if row["phase"] == "gauss_newton"]
    lengths = {2.0**-k for k in range(12)}
    assert len(rows) == 4 and all(row["gn_length"] in lengths for row in rows)
    assert rows[0]["gn_damping"] == pytest.approx(1e-3, rel=1e-12)
    assert all(row["gn_damping"] > 0 for row in rows)
    assert not any(name.startswith("gn_") for name in loss_columns(rows[0]))
    assert all("gn_length" not in row for row in result.history if row["phase"] == "adam")


class Decay(Problem):
    """u_t = -u on [0, 1] x [0, 1] (x, t), u = e^(-t) at x = 0 and 1: given `on`."""

    domain = SpaceTime(Box([0.0], [1.0]), 0.0, 1.0)

    def __init__(self, on):
        self.conditions = [Dirichlet(on=on, value=lambda p: torch.exp(-p[:, 1]))]

    def residual(self, x, u):
        return u.d("t") + u()


@pytest.mark.parametrize(("on", "warned"), [("boundary", True), (["x_min", "x_max"], False)])
def test_a_condition_on_the_whole_boundary_in_time_is_warned_of(on, warned, pinn_messages):
    small_run(Decay(on), adam={"steps": 1}, lbfgs={"steps": 0})
    warnings = [m for m in pinn_messages() if "holds on the whole boundary" in m]
    assert len(warnings) == warned
    assert not warned or ("t_min and t_max included" in warnings[0] and "on=[" in warnings[0])


def test_weights_scale_the_terms_and_unknown_names_are_refused():
    _, result = small_run(adam={"steps": 1}, lbfgs={"steps": 0}, weights={"dirichlet": 10.0})
    first = result.history[0]
    assert first["loss"] == pytest.approx(first["pde"] + 10.0 * first["dirichlet"])
    with pytest.raises(ConfigError, match=r"unknown loss term.*\['pde', 'dirichlet'\]"):
        small_run(adam={"steps": 1}, lbfgs={"steps": 0}, weights={"bc": 1.0})


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("adam.steps", -1),
        ("lbfgs.steps", -3),
        ("adam.lr", 0.0),
        ("adam.lr", math.nan),
        ("log_every", 0),
        ("adam.resample_every", 1.5),
        ("lbfgs.history_size", 0),
        ("lbfgs.resample_every", -1),
        ("gauss_newton.resample_every", -2),
    ],
)
def test_settings_refuse_nonsense(key, value):
    block, _, name = key.rpartition(".")
    given = {block: {name: value}} if block else {key: value}
    with pytest.raises(ConfigError, match=f"trainer.{key}"):
        TrainSettings(**given)


class BlowsUp(Poisson):
    """Poisson whose residual turns to NaN from its `after`-th evaluation on."""

    def __init__(self, after: int):
        self.after, self.calls = after, 0

    def residual(self, x, u):
        self.calls += 1
        residual = super().residual(x, u)
        return residual * math.nan if self.calls > self.after else residual


def test_nan_loss_stops_the_run_and_keeps_the_last_good_checkpoint(tmp_path):
    problem = BlowsUp(after=23)
    model = MLP(2, 1, width=8, depth=2, generator=torch.Generator().manual_seed(0)).double()
    points = PointSampler(
        problem.domain, 32, 16, "uniform", torch.Generator().manual_seed(1), dtype=torch.float64
    )
    settings = TrainSettings(
        adam={"steps": 50}, lbfgs={"steps": 0}, checkpoint_every=5, log_every=5, progress=False
    )
    path = tmp_path / "checkpoint.pt"
    with pytest.raises(TrainingDiverged, match=r"loss became nan at step 23.*written at step 20"):
        history = [HistoryFile(tmp_path / "h.csv")]
        fit(problem, model, settings, points, checkpoint_path=path, callbacks=history)
    state = load_checkpoint(path)
    assert state["step"] == 20
    assert math.isfinite(state["loss"])
    assert all(torch.isfinite(t).all() for t in state["model"].values())
    # history.csv was written as the run went: the rows logged before it stopped are there.
    with open(tmp_path / "h.csv") as file:
        rows = list(csv.DictReader(file))
    assert [int(row["step"]) for row in rows] == [0, 5, 10, 15, 20]
    assert all(math.isfinite(float(row["loss"])) for row in rows)


def test_boundary_conditions_on_named_faces():
    class Linear1D(Problem):
        """u'' = 0 on [0, 2], u(0) = 1, u(2) = 3: u = 1 + x."""

        domain = Box([0.0], [2.0])
        conditions = [
            Dirichlet(on="x_min", value=1.0, name="left"),
            Dirichlet(on=["x_max"], value=lambda x: 1.0 + x[:, 0], name="right"),
        ]

        def residual(self, x, u):
            return u.d2("x")

        def exact(self, x):
            return 1.0 + x[:, 0]

    problem = Linear1D()
    model = MLP(
        1,
        1,
        width=8,
        depth=2,
        inputs=InputOptions(lower=[0.0], upper=[2.0]),
        generator=torch.Generator().manual_seed(0),
    ).double()
    points = PointSampler(
        problem.domain, 32, 2, "sobol", torch.Generator().manual_seed(1), dtype=torch.float64
    )
    settings = TrainSettings(adam={"steps": 200, "lr": 1e-2}, lbfgs={"steps": 200}, progress=False)
    result = fit(problem, model, settings, points)
    assert set(result.history[0]) >= {"pde", "left", "right"}
    x = torch.linspace(0, 2, 11, dtype=torch.float64)[:, None]
    with torch.no_grad():
        assert torch.allclose(model(x)[:, 0], 1.0 + x[:, 0], atol=1e-3)
