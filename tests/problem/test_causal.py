"""Causal weighting in time (`pinn.problem.causal`): the weights and the scaled residual's mean
square against values worked out by hand (unequal and empty chunks included), no gradient
through the weights, off by default, refused settings, and a short training run through every
phase (Gauss-Newton's rows and Jacobian included) that resumes bit for bit."""

import io
import math

import pytest
import torch

import pinn.training.checkpoints
from pinn import MLP, Box, ConfigError, PointSampler, Problem, SpaceTime, TrainSettings, fit
from pinn.derivatives.engines import Engine
from pinn.geometry import Batch
from pinn.nn import InputOptions
from pinn.problem.causal import (
    MEAN_WEIGHT,
    MIN_WEIGHT,
    CausalSettings,
    CausalWeighting,
    causal_weights,
)
from pinn.problem.loss import loss_terms, residuals
from pinn.problems.heat import Heat
from pinn.training.rows.residual_rows import ResidualRows, parameters
from pinn.training.settings import shaping

# ---- the formula, by hand ----------------------------------------------------------------------

# Five points on t in [0, 1], M = 4 chunks of width 1/4: t = 0.1, 0.2 in chunk 0, 0.3 in chunk 1,
# none in chunk 2, 0.9 and 1.0 (the upper end) in chunk 3.
TIMES = torch.tensor([0.1, 0.2, 0.3, 0.9, 1.0], dtype=torch.float64)
RESIDUAL = torch.tensor([1.0, 3.0, 2.0, 1.0, 3.0], dtype=torch.float64)
EPS = 0.1
# L_0 = (1 + 9) / 2 = 5, L_1 = 4, L_2 = 0 (empty), L_3 = (1 + 9) / 2 = 5
HAND_WEIGHTS = [1.0, math.exp(-0.5), math.exp(-0.9), math.exp(-0.9)]
# M' = 3 occupied chunks: (1/3) (1 * 5 + e^-0.5 * 4 + e^-0.9 * 5)
HAND_LOSS = (5 + math.exp(-0.5) * 4 + math.exp(-0.9) * 5) / 3


def weigh(terms, times=TIMES, chunks=4, tolerance=EPS, lower=0.0, upper=1.0):
    """`terms` ({name: (N,)}) through a CausalWeighting at (N, 2) points (x = 0, t = times)."""
    causal = CausalWeighting(CausalSettings(chunks=chunks, tolerance=tolerance))
    points = torch.stack([torch.zeros_like(times), times], dim=1)
    return causal(terms, points, ("x", "t"), (0.0, lower), (1.0, upper)), causal


def test_weights_are_exp_of_minus_eps_times_the_earlier_chunks_losses():
    weights = causal_weights(torch.tensor([5.0, 4.0, 0.0, 5.0], dtype=torch.float64), EPS)
    assert weights.tolist() == pytest.approx(HAND_WEIGHTS, rel=1e-15)
    assert weights[0].item() == 1.0  # the first chunk waits for nothing
    _, causal = weigh({"pde": RESIDUAL})
    assert causal.weights.tolist() == pytest.approx(HAND_WEIGHTS, rel=1e-15)
    assert causal.occupied.tolist() == [True, True, False, True]
    # the row reports the occupied chunks only: the smallest is the last one's
    row = causal.row()
    assert row[MIN_WEIGHT] == pytest.approx(math.exp(-0.9), rel=1e-15)
    assert row[MEAN_WEIGHT] == pytest.approx((1 + math.exp(-0.5) + math.exp(-0.9)) / 3)


def test_the_scaled_mean_square_is_the_causal_loss_with_unequal_and_empty_chunks():
    scaled, _ = weigh({"pde": RESIDUAL, "dirichlet": RESIDUAL})
    assert scaled["pde"].square().mean().item() == pytest.approx(HAND_LOSS, rel=1e-14)
    assert torch.equal(scaled["dirichlet"], RESIDUAL)  # conditions are not weighted in time
    # the same points on a time range [2, 6]: the chunks follow the domain's range
    scaled, _ = weigh({"pde": RESIDUAL}, times=2 + 4 * TIMES, lower=2.0, upper=6.0)
    assert scaled["pde"].square().mean().item() == pytest.approx(HAND_LOSS, rel=1e-14)


def test_a_systems_equations_share_one_set_of_weights_from_their_summed_chunk_losses():
    other = torch.tensor([0.0, 2.0, 1.0, 1.0, 1.0], dtype=torch.float64)
    scaled, causal = weigh({"pde_u": RESIDUAL, "pde_v": other})
    # chunk losses of v: (0 + 4) / 2 = 2, 1, -, 1; summed with u's: 7, 5, 0, 6
    weights = [1.0, math.exp(-0.7), math.exp(-1.2), math.exp(-1.2)]
    assert causal.weights.tolist() == pytest.approx(weights, rel=1e-15)
    for name, losses in (("pde_u", [5, 4, 5]), ("pde_v", [2, 1, 1])):
        expected = (losses[0] + weights[1] * losses[1] + weights[3] * losses[2]) / 3
        assert scaled[name].square().mean().item() == pytest.approx(expected, rel=1e-14)


def test_one_chunk_is_the_plain_mean_square_exactly():
    scaled, causal = weigh({"pde": RESIDUAL}, chunks=1)
    assert torch.equal(scaled["pde"], RESIDUAL)
    assert causal.weights.tolist() == [1.0]


def test_no_gradient_flows_through_the_weights():
    theta = torch.tensor(0.7, dtype=torch.float64, requires_grad=True)
    scaled, causal = weigh({"pde": theta * RESIDUAL})
    (gradient,) = torch.autograd.grad(scaled["pde"].square().mean(), theta)
    # The chunk losses are theta^2 L_i(a), a = RESIDUAL (5, 4, -, 5), so the weights at theta are
    # w_1 = exp(-0.1 * 0.49 * 5), w_3 = exp(-0.1 * 0.49 * 9). Held fixed, the loss
    # (1/3) theta^2 (5 + w_1 4 + w_3 5) has the derivative 2 theta (1/3) (5 + w_1 4 + w_3 5);
    # a gradient through the weights would add theta^2-terms of dw/dtheta < 0.
    w_1, w_3 = math.exp(-0.1 * 0.49 * 5), math.exp(-0.1 * 0.49 * 9)
    assert causal.weights[[1, 3]].tolist() == pytest.approx([w_1, w_3], rel=1e-14)
    expected = 2 * 0.7 * (5 + w_1 * 4 + w_3 * 5) / 3
    assert gradient.item() == pytest.approx(expected, rel=1e-14)


# ---- settings ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("block", "message"),
    [
        ({"chunks": -1}, "trainer.causal.chunks must be a whole number >= 0, got -1"),
        ({"chunks": 2.5}, "trainer.causal.chunks must be a whole number >= 0, got 2.5"),
        ({"tolerance": 0.0}, "trainer.causal.tolerance must be a number > 0, got 0.0"),
        ({"tolerance": math.inf}, "trainer.causal.tolerance must be a number > 0, got inf"),
        ({"time": ""}, "trainer.causal.time must be the name of the time coordinate"),
        ({"chunk": 4}, "trainer.causal has no key chunk; its keys are chunks, tolerance, time"),
    ],
)
def test_wrong_settings_are_refused_naming_the_key(block, message):
    with pytest.raises(ConfigError) as refused:
        TrainSettings(causal=block)
    assert message in str(refused.value)


def test_a_time_name_that_is_not_an_input_is_refused_naming_the_inputs():
    problem, model, points = heat_parts()
    settings = TrainSettings(phases=["adam"], adam={"steps": 1}, progress=False)
    with pytest.raises(ConfigError, match=r"trainer.causal.time='tau' .* inputs \['x', 't'\]"):
        fit(problem, model, with_causal(settings, chunks=4, time="tau"), points)


def test_off_by_default_and_then_absent_from_rows_and_checkpoint_settings():
    settings = TrainSettings()
    assert settings.causal == CausalSettings(chunks=0, tolerance=1.0, time="t")
    assert "causal" not in shaping(settings)  # old checkpoints still resume
    assert shaping(with_causal(settings, chunks=4))["causal"]["chunks"] == 4
    with pytest.raises(ValueError, match="chunks > 0"):
        CausalWeighting(settings.causal)
    problem, model, points = heat_parts()
    short = TrainSettings(phases=["adam"], adam={"steps": 2}, log_every=1, progress=False)
    history = fit(problem, model, short, points).history
    assert not any(key.startswith("causal") for row in history for key in row)


# ---- training -----------------------------------------------------------------------------------


def heat_parts(n_interior=64):
    """Heat (x, t in [-1, 1] x [0, 1], hard conditions), a tiny float64 MLP, a seeded sampler."""
    problem = Heat()
    model = MLP(
        2,
        1,
        width=8,
        depth=2,
        inputs=InputOptions(lower=problem.domain.lower, upper=problem.domain.upper),
        generator=torch.Generator().manual_seed(0),
    ).double()
    generator = torch.Generator().manual_seed(1)
    points = PointSampler(problem.domain, n_interior, 8, "sobol", generator, dtype=torch.float64)
    return problem, model, points


def with_causal(settings, **causal):
    return TrainSettings(**{**vars(settings), "causal": CausalSettings(**causal)})


CAUSAL = TrainSettings(
    phases=["adam", "lbfgs", "gauss_newton", "bfgs"],
    adam={"steps": 12, "resample_every": 5},
    lbfgs={"steps": 4},
    gauss_newton={"steps": 4},
    bfgs={"steps": 4},
    log_every=3,
    checkpoint_every=3,
    progress=False,
    causal={"chunks": 4, "tolerance": 0.05},
)


@pytest.fixture(scope="module")
def causal_run():
    """The CAUSAL heat run and every checkpoint it wrote (as bytes)."""
    written = []

    def keep(path, state):
        buffer = io.BytesIO()
        torch.save(state, buffer)
        written.append(buffer.getvalue())

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(pinn.training.checkpoints, "save_checkpoint", keep)
        problem, model, points = heat_parts()
        result = fit(problem, model, CAUSAL, points, checkpoint_path="unused.pt")
    return model, result, written


def test_a_short_run_logs_the_causal_weights_in_every_phase(causal_run):
    _, result, _ = causal_run
    history = result.history
    assert {row["phase"] for row in history} == {"adam", "lbfgs", "gauss_newton", "bfgs", "final"}
    for row in history:
        assert 0 < row[MIN_WEIGHT] <= row[MEAN_WEIGHT] <= 1, row
    assert len({row[MIN_WEIGHT] for row in history}) > 3  # they move as the loss does
    # Gauss-Newton's rows show the weights its step was measured with (those of the iterate it
    # started from: `freeze`); the final row's are computed afresh at the final parameters.
    steps = [row for row in history if row["phase"] == "gauss_newton"]
    assert len(steps) == CAUSAL.gauss_newton.steps  # every iteration found a step
    assert history[-1]["phase"] == "final"


def test_frozen_weights_measure_other_residuals_with_the_last_evaluations_factors():
    causal = CausalWeighting(CausalSettings(chunks=4, tolerance=EPS))
    points = torch.stack([torch.zeros_like(TIMES), TIMES], dim=1)
    weigh_now = lambda residual: causal({"pde": residual}, points, ("x", "t"), (0, 0), (1, 1))  # noqa: E731
    weigh_now(RESIDUAL)
    causal.freeze()
    other = 2 * RESIDUAL  # fresh weights would be exp(-0.4 * ...), smaller
    frozen = weigh_now(other)["pde"]
    assert frozen.square().mean().item() == pytest.approx(4 * HAND_LOSS, rel=1e-12)
    assert causal.weights.tolist() == pytest.approx(HAND_WEIGHTS, rel=1e-12)
    causal.thaw()
    fresh = weigh_now(other)["pde"]
    assert fresh.square().mean().item() < frozen.square().mean().item()
    assert causal.weights[1].item() == pytest.approx(math.exp(-EPS * 20), rel=1e-12)


def test_gauss_newton_with_causal_weights_keeps_lowering_its_loss():
    # Every iteration finds a step, measured with its iterate's weights (on KdV, before the
    # weights were frozen for the line search, it stopped after one: a step that fits the
    # early times raises the later chunks' weights, so every step looked worse).
    problem, model, points = heat_parts()
    settings = TrainSettings(
        phases=["adam", "gauss_newton"],
        adam={"steps": 30},
        gauss_newton={"steps": 8},
        log_every=1,
        progress=False,
        causal={"chunks": 8, "tolerance": 10.0},
    )
    history = fit(problem, model, settings, points).history
    losses = [row["loss"] for row in history if row["phase"] == "gauss_newton"]
    assert len(losses) == 8
    assert losses[-1] < 0.5 * losses[0]


def test_lbfgs_holds_the_causal_weights_over_a_chunk_and_keeps_lowering_its_loss():
    # With weights recomputed at every trial of its line search, L-BFGS stopped after one
    # iteration on KdV (eps 10): "the line search found no lower loss". Held over each chunk
    # of log_every iterations, its loss falls within a chunk and the weights move between.
    problem, model, points = heat_parts()
    settings = TrainSettings(
        phases=["adam", "lbfgs"],
        adam={"steps": 30},
        lbfgs={"steps": 40, "stall_window": 0},
        log_every=10,
        progress=False,
        causal={"chunks": 8, "tolerance": 10.0},
    )
    history = fit(problem, model, settings, points).history
    rows = [row for row in history if row["phase"] == "lbfgs"]
    assert len(rows) == 40
    for chunk in range(4):  # one weighted loss per chunk: it only falls
        losses = [row["loss"] for row in rows[10 * chunk : 10 * chunk + 10]]
        assert all(b < a for a, b in zip(losses, losses[1:])), chunk
        assert len({row[MEAN_WEIGHT] for row in rows[10 * chunk : 10 * chunk + 10]}) == 1
    assert len({row[MEAN_WEIGHT] for row in rows}) == 4  # recomputed at each chunk


def test_the_run_resumes_bit_for_bit_from_its_checkpoints(causal_run):
    model, result, written = causal_run
    states = [torch.load(io.BytesIO(data), weights_only=True) for data in written]
    # the last checkpoint of each phase: mid-Adam, between L-BFGS and Gauss-Newton chunks
    last_of = {state["training"]["phase"]: state for state in states}
    assert {"adam", "lbfgs", "gauss_newton"} <= set(last_of)
    for phase in ("adam", "lbfgs", "gauss_newton"):
        state = last_of[phase]
        problem, resumed_model, points = heat_parts()
        resumed = fit(problem, resumed_model, CAUSAL, points, resume_from=state)
        where = f"resumed at step {state['step']} ({phase})"
        assert torch.equal(flat(resumed_model), flat(model)), where
        assert resumed.final_loss == result.final_loss, where
        assert same_rows(resumed.history) == same_rows(result.history), where


def flat(model):
    return torch.cat([p.detach().flatten() for p in model.parameters()])


def same_rows(history):
    return repr([{k: v for k, v in row.items() if k != "time_s"} for row in history])


# ---- Gauss-Newton's rows ------------------------------------------------------------------------


class TwoHeat(Problem):
    """Two heat equations coupled through their source, t in [0, 2] (a system: two PDE terms)."""

    domain = SpaceTime(Box([0.0], [1.0]), 0.0, 2.0)
    outputs = ("u", "v")

    def residual(self, x, u):
        return {"u": u.d("t", "u") - u.d2("x", out="u") - u("v"), "v": u.d("t", "v") - u("u")}


@pytest.mark.parametrize("engine", ["taylor", "autograd"])
@pytest.mark.parametrize("make_problem", [Heat, TwoHeat])
def test_gauss_newton_rows_are_the_scaled_residuals_and_their_jacobian_is_exact(
    make_problem, engine
):
    problem = make_problem()
    generator = torch.Generator().manual_seed(2)
    model = MLP(2, len(problem.outputs), width=6, depth=2, generator=generator).double()
    points = PointSampler(problem.domain, 30, 4, "uniform", generator, dtype=torch.float64)
    batch: Batch = points.draw()
    run_engine = Engine(engine, model, probe=batch.interior[:2], announce=False)
    causal = CausalWeighting(CausalSettings(chunks=5, tolerance=0.5))
    rows_of = ResidualRows(problem, model, run_engine, causal=causal)
    rows_of(batch)  # the first call records what the residual asks (the Taylor plans)
    rows = rows_of(batch, jacobian=True)
    # the rows' square sum is the causal loss the other phases minimise
    terms = loss_terms(problem, model, batch, run_engine, CausalWeighting(causal.settings))
    assert rows.loss.item() == pytest.approx(sum(t.item() for t in terms.values()), rel=1e-12)
    # the Jacobian: a reverse pass of every scaled row, the weights held fixed
    vectors = residuals(problem, model, batch, run_engine, CausalWeighting(causal.settings))
    scaled = torch.cat([v / v.numel() ** 0.5 for v in vectors.values()])
    assert torch.allclose(rows.values, scaled.detach(), rtol=0, atol=1e-12)
    params = parameters(model, problem)
    eye = torch.eye(scaled.numel(), dtype=scaled.dtype)
    grads = torch.autograd.grad(
        scaled, params, grad_outputs=eye, is_grads_batched=True, allow_unused=True
    )
    n_rows = scaled.numel()  # the last bias is unused: Heat's residual has no u, only derivatives
    expected = torch.cat(
        [
            torch.zeros(n_rows, p.numel(), dtype=p.dtype) if g is None else g.reshape(n_rows, -1)
            for g, p in zip(grads, params)
        ],
        dim=1,
    )
    assert (rows.jacobian - expected).abs().max().item() <= 1e-10
    assert causal.weights.min().item() < 0.999  # weights that matter
