"""Adam's learning-rate schedules, and L-BFGS: against torch's, a history row per iteration,
its stop rules, float32."""

import math

import pytest
import torch
from test_trainer import small_run

from pinn import ConfigError, TrainSettings
from pinn.derivatives.engines import Engine
from pinn.geometry import PointSampler
from pinn.nn import InputOptions
from pinn.nn.mlp import MLP
from pinn.problem import loss_terms, weighted_sum
from pinn.problems.poisson import Poisson
from pinn.training.optim.lbfgs import LBFGS, STALLED, TOLERANCE, plateau_reason
from pinn.training.phases import LBFGSSettings
from pinn.training.recording import Recorder


def adam_rates(**adam):
    _, result = small_run(adam=adam, lbfgs={"steps": 0}, log_every=1)
    return [(row["step"], row["lr"]) for row in result.history if row["phase"] == "adam"]


def test_cosine_schedule_follows_its_formula():
    rates = adam_rates(steps=20, lr=1e-2, lr_decay=0.05, schedule="cosine")
    assert len(rates) == 20
    for step, lr in rates:
        expected = 1e-2 * (0.05 + 0.95 * (1 + math.cos(math.pi * step / 20)) / 2)
        assert lr == pytest.approx(expected, rel=1e-12), step
    assert rates[0][1] == 1e-2 and rates[10][1] == pytest.approx(1e-2 * 0.525, rel=1e-12)


def test_linear_schedule_falls_in_a_straight_line():
    rates = adam_rates(steps=20, lr=1e-2, lr_decay=1e-6, schedule="linear")
    assert len(rates) == 20
    for step, lr in rates:
        assert lr == pytest.approx(1e-2 * (1e-6 + (1 - 1e-6) * (1 - step / 20)), rel=1e-12), step
    assert rates[10][1] == pytest.approx(1e-2 * (0.5 + 0.5e-6), rel=1e-12)


def test_constant_schedule_stays_constant_and_exponential_is_the_default():
    assert {lr for _, lr in adam_rates(steps=10, lr=3e-3, schedule="constant")} == {3e-3}
    for step, lr in adam_rates(steps=10, lr=3e-3, lr_decay=0.1):
        assert lr == pytest.approx(3e-3 * 0.1 ** (step / 10), rel=1e-12)
    assert TrainSettings().adam.schedule == "exponential"


def test_bad_schedule_and_tolerance_are_refused():
    allowed = "choose one of exponential, cosine, linear, constant"
    with pytest.raises(ConfigError, match=f"trainer.adam.schedule='step' is unknown; {allowed}"):
        TrainSettings(adam={"schedule": "step"})
    for tolerance in (-1e-3, 1.0, math.nan, "small"):
        with pytest.raises(ConfigError, match="trainer.lbfgs.tolerance"):
            TrainSettings(lbfgs={"tolerance": tolerance})
        with pytest.raises(ConfigError, match="trainer.lbfgs.stall_decrease"):
            TrainSettings(lbfgs={"stall_decrease": tolerance})
    with pytest.raises(ConfigError, match="trainer.lbfgs.stall_window"):
        TrainSettings(lbfgs={"stall_window": -1})


@pytest.fixture
def lbfgs_points(monkeypatch):
    """Records (row, parameters, run state) for every L-BFGS history row, as it is logged."""
    seen = []
    row = Recorder.row

    def spy(self, step, phase, terms, loss, *args, **options):
        if phase == "lbfgs":
            seen.append((step, [p.detach().clone() for p in self.state.model.parameters()], self))
        row(self, step, phase, terms, loss, *args, **options)

    monkeypatch.setattr(Recorder, "row", spy)
    return seen


def check_rows(model, result, seen, weights=None):
    """Each L-BFGS row's loss and terms are those of the parameters it was logged at."""
    rows = [row for row in result.history if row["phase"] == "lbfgs"]
    assert [row["step"] for row in rows] == [step for step, _, _ in seen]
    for row, (_, params, recorder) in zip(rows, seen, strict=True):
        with torch.no_grad():
            for p, saved in zip(model.parameters(), params, strict=True):
                p.copy_(saved)
        state = recorder.state
        terms = loss_terms(Poisson(hard_boundary=False), model, state.batch, state.engine)
        assert row["loss"] == weighted_sum(terms, weights or {}).item(), row["step"]
        assert all(row[name] == value.item() for name, value in terms.items())
    losses = [row["loss"] for row in rows]
    assert all(b <= a for a, b in zip(losses, losses[1:])), "strong Wolfe never goes up"
    return rows


def test_lbfgs_logs_every_iteration_with_the_loss_of_its_parameters(lbfgs_points):
    model, result = small_run(adam={"steps": 10}, lbfgs={"steps": 23}, log_every=5)
    final = result.history[-1]
    rows = check_rows(model, result, lbfgs_points)
    assert [row["step"] for row in rows] == list(range(11, 34))
    assert result.steps == 33 and final["phase"] == "final"
    assert final["loss"] == rows[-1]["loss"] == result.final_loss


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_lbfgs_tolerance_stops_early_and_says_so(lbfgs_points, capsys, dtype):
    settings = dict(adam={"steps": 10}, lbfgs={"steps": 300, "tolerance": 0.02}, log_every=20)
    model, result = small_run(dtype=dtype, **settings)
    rows = check_rows(model, result, lbfgs_points)
    assert 2 < len(rows) < 300 and result.steps == 10 + len(rows)
    assert f"L-BFGS stopped after {len(rows)} iterations: {TOLERANCE}." in capsys.readouterr().out
    losses = [row["loss"] for row in rows]
    decrease = [(a - b) / a for a, b in zip(losses, losses[1:])]
    assert decrease[-1] < 0.02 and min(decrease[:-1]) >= 0.02


def test_float32_lbfgs_runs_its_iterations(lbfgs_points, capsys):
    model, result = small_run(
        adam={"steps": 10}, lbfgs={"steps": 40}, log_every=15, dtype=torch.float32
    )
    rows = check_rows(model, result, lbfgs_points)
    said = capsys.readouterr().out
    assert len(rows) == 40 or f"stopped after {len(rows)} iterations: {STALLED}" in said
    assert rows[-1]["loss"] < 0.2 * result.history[0]["loss"]


def rosenbrock(dtype=torch.float64):
    """Rosenbrock's function from its classic start (-1.2, 1): (x, closure)."""
    x = torch.tensor([-1.2, 1.0], dtype=dtype, requires_grad=True)

    def closure():
        x.grad = None
        loss = 100 * (x[1] - x[0] ** 2) ** 2 + (1 - x[0]) ** 2
        loss.backward()
        return loss

    return x, closure


TORCH_OPTIONS = dict(lr=1.0, history_size=50, line_search_fn="strong_wolfe")
NO_TOLERANCES = dict(tolerance_grad=0.0, tolerance_change=0.0)


def run_torch(params, closure, iterations):
    """torch.optim.LBFGS for `iterations` iterations: its (iterations, evaluations) done."""
    optimizer = torch.optim.LBFGS(
        params, max_iter=iterations, max_eval=10 * iterations, **TORCH_OPTIONS, **NO_TOLERANCES
    )
    optimizer.step(closure)
    state = optimizer.state[params[0]]
    return state["n_iter"], state["func_evals"]


def lbfgs(params, **settings):
    """pinn's LBFGS over `params`, with `LBFGSSettings` of no plateau stop (and `settings`)."""
    return LBFGS(params, LBFGSSettings(**({"stall_window": 0, "stall_decrease": 0.0} | settings)))


def run_pinn(params, closure, iterations, **options):
    """pinn's LBFGS: (losses reported, why it stopped, the optimiser)."""
    optimizer = lbfgs(params, **options)
    losses = []
    done, why = optimizer.iterate(
        lambda: (closure(), None), iterations, lambda loss, info: losses.append(loss.item())
    )
    assert done == len(losses)
    return losses, why, optimizer


def test_rosenbrock_solved_like_torch():
    x, closure = rosenbrock()
    torch_iterations, torch_evaluations = run_torch([x], closure, 200)
    assert torch.allclose(x.detach(), torch.ones(2, dtype=torch.float64), atol=1e-10)

    x, closure = rosenbrock()
    losses, why, optimizer = run_pinn([x], closure, 200)
    assert torch.allclose(x.detach(), torch.ones(2, dtype=torch.float64), atol=1e-10)
    assert losses[-1] < 1e-20 and all(b <= a for a, b in zip(losses, losses[1:]))
    # At the exact minimum (zero gradient) or one rounding step from it, it stops by itself.
    assert why == STALLED and len(losses) < 200
    # The same algorithm: about as many iterations and evaluations as torch's.
    assert abs(len(losses) - torch_iterations) <= 0.25 * torch_iterations
    assert optimizer.evaluations <= 1.25 * torch_evaluations + 1


def pinn_loss(scale):
    """A small Poisson PINN loss times `scale` (float64): (parameters, closure)."""
    problem = Poisson(hard_boundary=False)
    generator = torch.Generator().manual_seed(0)
    box = InputOptions(lower=problem.domain.lower, upper=problem.domain.upper)
    model = MLP(2, 1, width=12, depth=2, inputs=box, generator=generator).double()
    points = PointSampler(problem.domain, 128, 64, "sobol", generator, dtype=torch.float64)
    batch = points.draw()
    engine = Engine("autograd", model, announce=False)
    params = list(model.parameters())

    def closure():
        for p in params:
            p.grad = None
        loss = scale * weighted_sum(loss_terms(problem, model, batch, engine), {})
        loss.backward()
        return loss

    return params, closure


def test_pinn_loss_like_torch_and_scale_free_unlike_torch():
    # On a PINN loss of ordinary size both get as far in 150 iterations.
    params, closure = pinn_loss(1.0)
    start = closure().item()
    run_torch(params, closure, 150)
    torch_loss = closure().item()
    params, closure = pinn_loss(1.0)
    losses, _, _ = run_pinn(params, closure, 150)
    assert losses[-1] < 1e-3 * start and torch_loss < 1e-3 * start
    assert 0.2 < losses[-1] / torch_loss < 5

    # The same loss times 1e-9: the steps are the same, the curvature pairs (s, y) a billion
    # times smaller. pinn's memory judges a pair against its own scale and gets as far as
    # before; torch's asks y·s > 1e-10, keeps no pair and crawls along the gradient.
    params, closure = pinn_loss(1e-9)
    scaled, _, _ = run_pinn(params, closure, 150)
    assert scaled[-1] / (1e-9 * start) < 1e-3
    params, closure = pinn_loss(1e-9)
    run_torch(params, closure, 150)
    assert closure().item() / (1e-9 * start) > 10 * scaled[-1] / (1e-9 * start)


def test_plateau_rule_stops_once_a_window_of_iterations_gains_too_little(lbfgs_points, capsys):
    rule = {"stall_window": 20, "stall_decrease": 0.2}
    model, result = small_run(adam={"steps": 10}, lbfgs={"steps": 400, **rule}, log_every=50)
    rows = check_rows(model, result, lbfgs_points)
    losses = [row["loss"] for row in rows]
    assert 20 < len(losses) < 400
    said = capsys.readouterr().out
    assert f"L-BFGS stopped after {len(losses)} iterations: {plateau_reason(20, 0.2)}." in said
    # It stopped at the first iteration whose window of 20 gained less than 20 %.
    gains = [(losses[i - 20] - losses[i]) / losses[i - 20] for i in range(20, len(losses))]
    assert gains[-1] < 0.2 and min(gains[:-1]) >= 0.2


def quadratic(lying=False):
    """(x - 1)^2 from x = 0; `lying`: its closure reports the gradient with the wrong sign."""
    x = torch.zeros(1, dtype=torch.float64, requires_grad=True)

    def closure():
        x.grad = None
        loss = ((x - 1) ** 2).sum()
        loss.backward()
        if lying:
            x.grad.neg_()
        return loss, None

    return x, closure, lbfgs([x])


def test_a_zero_gradient_or_a_failed_line_search_stops_with_a_reason():
    x, closure, optimizer = quadratic()
    losses = []
    done, why = optimizer.iterate(closure, 50, lambda loss, info: losses.append(loss.item()))
    assert (done, why) == (1, STALLED)  # x = 1 exactly after one step: the gradient is zero
    assert x.item() == 1.0 and losses == [0.0]

    x, closure, optimizer = quadratic(lying=True)  # every step it tries goes uphill
    assert optimizer.iterate(closure, 50, lambda loss, info: None) == (0, STALLED)
    assert x.item() == 0.0 and optimizer.iterations == 0  # not counted, not moved


def test_chunks_continue_exactly_through_the_state_dict():
    # One run of 30 iterations against chunks of 10, each a fresh optimiser given the state.
    params, closure = pinn_loss(1.0)
    whole, _, _ = run_pinn(params, closure, 30)
    params, closure = pinn_loss(1.0)
    chunked, state = [], None
    for _ in range(3):
        optimizer = lbfgs(params)
        if state is not None:
            optimizer.load_state_dict(state)
        optimizer.iterate(lambda: (closure(), None), 10, lambda x, _: chunked.append(x.item()))
        state = optimizer.state_dict()
    assert chunked == whole and state["iterations"] == 30
