"""Adam's learning-rate schedules, and L-BFGS: a history row per iteration, tolerance, float32."""

import math

import pytest
import torch
from test_trainer import small_run

import pinn.trainer
from pinn import ConfigError, TrainSettings, loss_terms, weighted_sum
from pinn.lbfgs import STALLED, TOLERANCE, IterationLBFGS


def adam_rates(**settings):
    _, result = small_run(lbfgs_steps=0, log_every=1, **settings)
    return [(row["step"], row["lr"]) for row in result.history if row["phase"] == "adam"]


def test_cosine_schedule_follows_its_formula():
    rates = adam_rates(steps=20, lr=1e-2, lr_decay=0.05, schedule="cosine")
    assert len(rates) == 20
    for step, lr in rates:
        expected = 1e-2 * (0.05 + 0.95 * (1 + math.cos(math.pi * step / 20)) / 2)
        assert lr == pytest.approx(expected, rel=1e-12), step
    assert rates[0][1] == 1e-2 and rates[10][1] == pytest.approx(1e-2 * 0.525, rel=1e-12)


def test_constant_schedule_stays_constant_and_exponential_is_the_default():
    assert {lr for _, lr in adam_rates(steps=10, lr=3e-3, schedule="constant")} == {3e-3}
    for step, lr in adam_rates(steps=10, lr=3e-3, lr_decay=0.1):
        assert lr == pytest.approx(3e-3 * 0.1 ** (step / 10), rel=1e-12)
    assert TrainSettings().schedule == "exponential"


def test_bad_schedule_and_tolerance_are_refused():
    allowed = "choose one of exponential, cosine, constant"
    with pytest.raises(ConfigError, match=f"trainer.schedule='linear' is unknown; {allowed}"):
        TrainSettings(schedule="linear")
    for tolerance in (-1e-3, 1.0, math.nan, "small"):
        with pytest.raises(ConfigError, match="trainer.lbfgs_tolerance"):
            TrainSettings(lbfgs_tolerance=tolerance)


@pytest.fixture
def lbfgs_points(monkeypatch):
    """Records (row, parameters, batch) for every L-BFGS history row, as it is logged."""
    seen = []
    log = pinn.trainer._Run._log

    def spy(self, step, phase, terms, loss, **options):
        if phase == "lbfgs":
            seen.append((step, [p.detach().clone() for p in self.model.parameters()], self))
        log(self, step, phase, terms, loss, **options)

    monkeypatch.setattr(pinn.trainer._Run, "_log", spy)
    return seen


def check_rows(model, result, seen, weights=None):
    """Each L-BFGS row's loss and terms are those of the parameters it was logged at."""
    rows = [row for row in result.history if row["phase"] == "lbfgs"]
    assert [row["step"] for row in rows] == [step for step, _, _ in seen]
    for row, (_, params, run) in zip(rows, seen, strict=True):
        with torch.no_grad():
            for p, saved in zip(model.parameters(), params, strict=True):
                p.copy_(saved)
        terms = loss_terms(run.problem, model, run.batch, run.engine)
        assert row["loss"] == weighted_sum(terms, weights or {}).item(), row["step"]
        assert all(row[name] == value.item() for name, value in terms.items())
    losses = [row["loss"] for row in rows]
    assert all(b <= a for a, b in zip(losses, losses[1:])), "strong Wolfe never goes up"
    return rows


def test_lbfgs_logs_every_iteration_with_the_loss_of_its_parameters(lbfgs_points):
    model, result = small_run(steps=10, lbfgs_steps=23, log_every=5)
    final = result.history[-1]
    rows = check_rows(model, result, lbfgs_points)
    assert [row["step"] for row in rows] == list(range(11, 34))
    assert result.steps == 33 and final["phase"] == "final"
    assert final["loss"] == rows[-1]["loss"] == result.final_loss


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_lbfgs_tolerance_stops_early_and_says_so(lbfgs_points, capsys, dtype):
    settings = dict(steps=10, lbfgs_steps=300, log_every=20, lbfgs_tolerance=0.02)
    model, result = small_run(dtype=dtype, **settings)
    rows = check_rows(model, result, lbfgs_points)
    assert 2 < len(rows) < 300 and result.steps == 10 + len(rows)
    assert f"L-BFGS stopped after {len(rows)} iterations: {TOLERANCE}." in capsys.readouterr().out
    losses = [row["loss"] for row in rows]
    decrease = [(a - b) / a for a, b in zip(losses, losses[1:])]
    assert decrease[-1] < 0.02 and min(decrease[:-1]) >= 0.02


def test_float32_lbfgs_runs_its_iterations(lbfgs_points, capsys):
    model, result = small_run(steps=10, lbfgs_steps=40, log_every=15, dtype=torch.float32)
    rows = check_rows(model, result, lbfgs_points)
    said = capsys.readouterr().out
    assert len(rows) == 40 or f"stopped after {len(rows)} iterations: {STALLED}" in said
    assert rows[-1]["loss"] < 0.2 * result.history[0]["loss"]


def regression():
    """A tiny float64 least-squares fit, and a closure counting its evaluations."""
    generator = torch.Generator().manual_seed(0)
    x = torch.rand(32, 1, generator=generator, dtype=torch.float64)
    model = torch.nn.Sequential(torch.nn.Linear(1, 6), torch.nn.Tanh(), torch.nn.Linear(6, 1))
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=generator))
    model = model.double()
    calls = [0]

    def closure():
        calls[0] += 1
        model.zero_grad(set_to_none=True)
        loss = ((model(x)[:, 0] - torch.sin(3 * x[:, 0])) ** 2).mean()
        loss.backward()
        return loss

    return model, closure, calls


OPTIONS = dict(lr=1.0, max_eval=300, history_size=50, line_search_fn="strong_wolfe")
TOLERANCES = dict(tolerance_grad=0.0, tolerance_change=0.0)


def test_iterations_match_torch_stepped_one_at_a_time_with_one_evaluation_less_each():
    # Reference: torch's L-BFGS stepped one iteration per call, which re-evaluates the start.
    model, closure, reference_calls = regression()
    optimizer = torch.optim.LBFGS(model.parameters(), max_iter=1, **OPTIONS, **TOLERANCES)
    reference = []
    for _ in range(15):
        optimizer.step(closure)
        with torch.enable_grad():
            reference.append(
                (closure().item(), torch.cat([p.flatten() for p in model.parameters()]))
            )
    reference_calls[0] -= 15  # the recomputations just above

    model, closure, calls = regression()
    optimizer = IterationLBFGS(model.parameters(), **OPTIONS, **TOLERANCES)
    seen = []

    def record(loss, info):
        seen.append((loss.item(), torch.cat([p.detach().flatten() for p in model.parameters()])))

    for _ in range(3):  # chunks of 5
        assert optimizer.iterate(lambda: (closure(), None), 5, record) == (5, None)
    assert len(seen) == 15
    for i, ((loss, params), (ref_loss, ref_params)) in enumerate(zip(seen, reference)):
        assert torch.equal(params, ref_params), i
        assert loss == ref_loss, i
    assert calls[0] == reference_calls[0] - 15 + 3  # one start evaluation per chunk
    assert optimizer.state[optimizer._params[0]]["n_iter"] == 15


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

    return x, closure, IterationLBFGS([x], **OPTIONS, **TOLERANCES)


def test_a_zero_gradient_or_a_failed_line_search_stops_with_a_reason():
    x, closure, optimizer = quadratic()
    losses = []
    assert optimizer.iterate(closure, 50, lambda loss, info: losses.append(loss.item())) == (
        1,
        None,
    )
    assert x.item() == 1.0 and losses == [0.0]  # torch stops a chunk at a zero gradient
    assert optimizer.iterate(closure, 50, lambda loss, info: None) == (0, STALLED)

    x, closure, optimizer = quadratic(lying=True)  # every step it tries goes uphill
    assert optimizer.iterate(closure, 50, lambda loss, info: None) == (0, STALLED)
    assert x.item() == 0.0 and optimizer.state[x]["n_iter"] == 0  # not counted
