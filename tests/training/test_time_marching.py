"""Time-marching (`windows.count`): a time-dependent problem trained window by window, each
window's initial value the previous window's solution."""

import csv
import os
import signal
from types import SimpleNamespace

import pytest
import torch
from tensorboard_helpers import events
from torch.func import jacrev, vmap

from pinn import (
    MLP,
    Box,
    ConfigError,
    Dirichlet,
    Initial,
    Observations,
    Periodic,
    Problem,
    SpaceTime,
    TrainingInterrupted,
    compose_config,
    load_run,
    train,
)
from pinn.derivatives.field import Field
from pinn.derivatives.taylor import taylor_forward
from pinn.nn import TimeWindows
from pinn.problem.time_windows import START_TERM, WindowStart, window_problem
from pinn.training.callbacks import Callback
from pinn.training.checkpoints import load_checkpoint
from pinn.training.state import FitResult
from pinn.training.strategies import time_marching

SPACE_TIME = SpaceTime(Box([0.0], [1.0]), 0.0, 1.0)


def test_a_window_has_only_the_time_faces_of_the_whole_interval():
    names = [[p.name for p in SPACE_TIME.window(a, b).pieces] for a, b in [(0, 0.5), (0.25, 0.5)]]
    assert names == [["x_min", "x_max", "t_min"], ["x_min", "x_max"]]
    assert [p.name for p in SPACE_TIME.window(0.5, 1.0).pieces][-1] == "t_max"
    with pytest.raises(ConfigError, match=r"within \[0.0, 1.0\]"):
        SPACE_TIME.window(0.5, 1.5)


def test_time_windows_are_each_window_network_with_its_derivatives():
    """Values, gradients and second derivatives of the piecewise model are those of the
    window's own network at every point (float64, against torch.func); pinn's Taylor engine
    carries it like any pointwise network."""
    torch.manual_seed(0)
    nets = [MLP(2, 1, width=8, depth=2).double() for _ in range(3)]
    model = TimeWindows(nets, [0.0, 0.3, 0.6, 1.0], axis=1)
    x = torch.rand(200, 2, dtype=torch.float64)
    x = x[((x[:, 1] - 0.3).abs() > 1e-3) & ((x[:, 1] - 0.6).abs() > 1e-3)]
    window = torch.bucketize(
        x[:, 1].contiguous(), torch.tensor([0.3, 0.6], dtype=torch.float64), right=True
    )

    def one(net):
        return lambda p: net(p[None])[0, 0]

    for k, net in enumerate(nets):
        mine = window == k
        assert mine.sum() > 20
        ours = x[mine]
        assert torch.equal(model(ours), net(ours))
        gradient = vmap(jacrev(one(net)))(ours)
        hessian = vmap(jacrev(jacrev(one(net))))(ours)
        jet = taylor_forward(model, ours, torch.eye(2, dtype=torch.float64))
        assert torch.allclose(jet.value[:, 0], net(ours)[:, 0], atol=1e-14, rtol=0)
        assert torch.allclose(jet.first[:, 0], gradient, atol=1e-12, rtol=0)
        assert torch.allclose(jet.second[:, 0], hessian.diagonal(dim1=1, dim2=2), atol=1e-12)
    with pytest.raises(ConfigError, match="4 increasing edges"):
        TimeWindows(nets, [0.0, 0.5, 1.0], axis=1)


class Soft(Problem):
    """u_t = u_xx on [0, 1]², every condition a loss term, and observations at t = 0.9."""

    domain = SPACE_TIME
    conditions = [
        Initial(value=lambda x: torch.sin(torch.pi * x[:, 0])),
        Dirichlet(on=["x_min", "x_max"], value=0.0),
        Dirichlet(on="t_max", value=0.0, name="final"),
        Periodic(on=("x_min", "x_max")),
        Observations(torch.tensor([[0.5, 0.9]]), torch.tensor([0.0]), name="data"),
    ]

    def residual(self, x, u):
        return u.d("t") - u.d2("x")


def test_a_window_keeps_the_conditions_that_hold_in_it_and_takes_the_previous_start():
    problem = Soft()
    first = window_problem(problem, 0.0, 0.5)
    assert [c.name for c in first.conditions] == ["initial", "dirichlet", "periodic"]
    points = torch.tensor([[0.2, 0.5], [0.7, 0.5]], dtype=torch.float64)
    start = (points, torch.ones(2, 1, dtype=torch.float64), None)
    last = window_problem(problem, 0.5, 1.0, start)
    names = [c.name for c in last.conditions]
    assert names == ["dirichlet", "final", "periodic", "data", START_TERM]
    assert last.conditions[-1].points is points
    assert last.domain.start == 0.5 and last.domain.end == 1.0
    with pytest.raises(ConfigError, match="not a SpaceTime"):
        window_problem(type("Flat", (Problem,), {"domain": Box([0.0], [1.0])})(), 0.0, 0.5)
    inverse = type("Inverse", (Soft,), {"unknowns": {"kappa": 1.0}})()
    with pytest.raises(ConfigError, match=r"unknowns \(kappa\)"):
        window_problem(inverse, 0.0, 0.5)


def test_the_window_start_term_matches_values_and_the_time_derivative():
    """With rates, the residual is u - values then du/dt - rates (torch.func's du/dt)."""
    torch.manual_seed(1)
    net = MLP(2, 1, width=8, depth=2).double()
    points = torch.rand(5, 2, dtype=torch.float64)
    values, rates = torch.zeros(5, 1, dtype=torch.float64), torch.zeros(5, 1, dtype=torch.float64)
    condition = WindowStart(points, values, rates, axis=1)
    u = Field(net, points, input_names=("x", "t"))
    got = condition.residual(u, None)
    du_dt = vmap(jacrev(lambda p: net(p[None])[0, 0]))(points)[:, 1]
    assert torch.allclose(got, torch.cat([net(points)[:, 0], du_dt]), atol=1e-12)


HEAT = [
    "problem=heat",
    "problem.n_interior=300",
    "trainer.adam.steps=150",
    "trainer.gauss_newton.steps=15",
    "trainer.progress=false",
    "trainer.log_every=50",
    "model.width=12",
    "windows.count=3",
]


@pytest.fixture(scope="module")
def marched(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("marched")
    return run_dir, train(compose_config([*HEAT, "outputs.loggers=[history,tensorboard]"]), run_dir)


def test_a_marched_run_solves_the_heat_equation_window_by_window(marched):
    """Three windows of 150 Adam + 15 Gauss-Newton steps: the whole solution within 5e-5
    of e^-t sin πx (rel_l2), continuous across the windows' ends to 2e-5; history.csv has every
    window's rows with steps counted on; load_run gives the same model back."""
    run_dir, metrics = marched
    assert metrics["rel_l2"] < 5e-5  # measured 7.8e-6 (one network, 165 steps: 6.4e-5)
    assert metrics["steps"] == 3 * 165
    with open(run_dir / "history.csv") as file:
        rows = list(csv.DictReader(file))
    assert [r["window"] for r in rows if r["phase"] == "final"] == ["0", "1", "2"]
    steps = [int(r["step"]) for r in rows]
    assert steps == sorted(steps) and steps[-1] == metrics["steps"]
    assert START_TERM in rows[-1] and rows[0][START_TERM] == ""
    logged = events(run_dir / "tensorboard")  # one run in TensorBoard too
    assert [step for step, _ in logged["loss"]] == steps  # no window starts again at 0
    assert [v for _, v in logged["loss"]] == pytest.approx([float(r["loss"]) for r in rows], 1e-6)
    assert logged[f"loss/{START_TERM}"][0][0] == 165  # window 1 starts at step 165

    run = load_run(run_dir)
    assert isinstance(run.model, TimeWindows)
    x = torch.linspace(-1, 1, 101, dtype=torch.float64)
    for k, edge in enumerate(run.model.edges[1:-1]):
        at = torch.stack([x, torch.full_like(x, edge)], 1)
        before, after = run.model.models[k](at), run.model.models[k + 1](at)
        assert (before - after).abs().max() < 2e-5  # measured 3.4e-6
    points = torch.rand(50, 2, dtype=torch.float64) * torch.tensor([2.0, 1.0]) - torch.tensor(
        [1.0, 0.0]
    )
    exact = torch.exp(-points[:, 1]) * torch.sin(torch.pi * points[:, 0])
    assert (torch.from_numpy(run.predict(points.numpy())["u"]) - exact).abs().max() < 1e-4


def test_a_marched_run_stopped_in_its_second_window_resumes_exactly(marched, tmp_path, monkeypatch):
    """SIGINT during window 1: the checkpoint says window 1, windows/0.pt is kept, and the
    resumed run ends with the uninterrupted run's metrics and history (times aside)."""
    reference_dir, reference = marched
    stop_row = time_marching.WindowHistory.on_row

    def stop_in_window_1(self, row, state):
        stop_row(self, row, state)
        if self.window == 1 and row["step"] == 50:
            os.kill(os.getpid(), signal.SIGINT)

    monkeypatch.setattr(time_marching.WindowHistory, "on_row", stop_in_window_1)
    run_dir = tmp_path / "run"
    with pytest.raises(TrainingInterrupted):
        train(compose_config(HEAT), run_dir)
    assert load_checkpoint(run_dir / "checkpoint.pt")["window"] == 1
    assert (run_dir / "windows" / "0.pt").is_file() and not (run_dir / "windows" / "1.pt").exists()
    monkeypatch.undo()

    resumed = train(compose_config([*HEAT, f"resume={run_dir}"]), run_dir)
    for key in ("rel_l2", "max_abs_error", "final_loss", "fresh_loss", "steps"):
        assert resumed[key] == reference[key], key
    # The training time counts on through the windows, the one finished before the stop too.
    with open(run_dir / "history.csv") as file:
        times = [float(row["time_s"]) for row in csv.DictReader(file)]
    first_window = load_checkpoint(run_dir / "windows" / "0.pt")["history"][-1]["time_s"]
    assert times == sorted(times) and first_window in times
    assert resumed["wall_time_s"] == pytest.approx(times[-1])

    def rows(directory):
        with open(directory / "history.csv") as file:
            return [{k: v for k, v in r.items() if k != "time_s"} for r in csv.DictReader(file)]

    assert rows(run_dir) == rows(reference_dir)


@pytest.mark.parametrize(
    "overrides, message",
    [
        (["problem=poisson", "windows.count=2"], "not a SpaceTime"),
        (["problem=heat", "windows.count=-1"], "windows.count must be an integer >= 0"),
        (["problem=heat", "windows.count=2", "windows.points=0"], "windows.points"),
    ],
)
def test_windows_that_cannot_work_are_refused_before_training(overrides, message, tmp_path):
    with pytest.raises(ConfigError, match=message):
        train(compose_config([*overrides, "trainer.progress=false"]), tmp_path / "run")
    assert not (tmp_path / "run" / "checkpoint.pt").exists()


def test_a_window_start_takes_the_previous_network_values_and_time_derivatives():
    """The start's values are the previous network's at points on t = 0.5, its rates each
    output's du/dt there (torch.func, float64); none carries a graph."""
    torch.manual_seed(2)
    net = MLP(2, 2, width=8, depth=2).double()
    points, values, rates = time_marching._start_values(
        SPACE_TIME, net, 0.5, 7, 0, "sobol", rate=True
    )
    assert torch.all(points[:, 1] == 0.5) and torch.equal(values, net(points).detach())
    jacobian = vmap(jacrev(lambda p: net(p[None])[0]))(points)  # (7, 2 outputs, 2 inputs)
    assert torch.allclose(rates, jacobian[:, :, 1], atol=1e-12, rtol=0)
    assert not (points.requires_grad or values.requires_grad or rates.requires_grad)


class Recorder(Callback):
    """Notes what a run's logger is shown: (event, step, state.step, rows in state.history)."""

    def __init__(self):
        self.seen = []

    def on_checkpoint(self, path, step, state):
        self.seen.append(("checkpoint", step, state.step, len(state.history)))

    def on_phase(self, old, new, state):
        self.seen.append((f"{old}->{new}", None, state.step, len(state.history)))

    def on_end(self, result, state):
        self.seen.append(("end", result.steps, state.step, len(state.history)))


def test_a_window_shows_the_loggers_checkpoints_and_phases_with_steps_counted_on():
    recorder = Recorder()
    history = time_marching.WindowHistory([recorder])
    first = FitResult(history=[{"step": 0, "loss": 1.0}, {"step": 40, "loss": 0.5}], steps=50)
    history.begin(1, [first])
    state = SimpleNamespace(history=[{"step": 0, "loss": 0.4}], step=20)
    history.on_phase("adam", "gauss_newton", state)
    history.on_checkpoint("checkpoint.pt", 20, state)
    history.on_end(FitResult(steps=30), state)
    assert recorder.seen == [("adam->gauss_newton", None, 70, 3), ("checkpoint", 70, 70, 3)]
    history.finish(FitResult(steps=80))  # the whole run's end: once, with every window's rows
    assert recorder.seen[-1] == ("end", 80, 70, 3)
