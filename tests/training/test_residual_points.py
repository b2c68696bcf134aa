"""Residual-based points and weights in every phase: refinement at each phase's `refine_every`
(beside its uniform `resample_every`, through `Phase.redraw_if_due` for the phases that hold
their points within a chunk), point weights (`trainer.point_weights`) updated at their cadence in
every phase, and the refusals of settings that do not fit together."""

import logging

import pytest
import torch

import pinn.problem.point_weights
from pinn import (
    MLP,
    Box,
    ConfigError,
    Dirichlet,
    PointSampler,
    Problem,
    Refinement,
    TrainSettings,
    fit,
)
from pinn.nn import InputOptions

CORNER = 0.75  # the corner [0.75, 1]² holds 1/16 of uniform points


class CornerSource(Problem):
    """-0.01 Δu = f on [0, 1]², u = 0 on the boundary, f a bump of height 100 at the corner
    (1, 1): the residual of a network a few iterations old is large there, near 0 elsewhere
    (about 64 % of its mass in the corner [0.75, 1]²)."""

    domain = Box([0.0, 0.0], [1.0, 1.0])
    conditions = [Dirichlet(on="boundary", value=0.0)]

    def residual(self, x, u):
        bump = 100 * torch.exp(-((x[:, 0] - 1) ** 2 + (x[:, 1] - 1) ** 2) / 0.02)
        return 0.01 * u.laplacian() + bump


def corner_share(points: torch.Tensor) -> float:
    """The fraction of the (N, 2) points in [0.75, 1]²."""
    inside = (points[:, 0] >= CORNER) & (points[:, 1] >= CORNER)
    return inside.double().mean().item()


def corner_fit(settings, method="rad", n_interior=200, **refinement):
    """Fit `CornerSource` with `settings`; returns (the sampler, every batch `refine` made)."""
    problem = CornerSource()
    model = MLP(
        2,
        1,
        width=8,
        depth=2,
        inputs=InputOptions(lower=[0.0, 0.0], upper=[1.0, 1.0]),
        generator=torch.Generator().manual_seed(0),
    ).double()
    points = PointSampler(
        problem.domain,
        n_interior,
        40,
        "sobol",
        torch.Generator().manual_seed(1),
        torch.float64,
        refinement=Refinement(method, candidates=2000, **refinement),
    )
    refined = []
    refine = points.refine

    def recorded(residual):
        batch = refine(residual)
        refined.append(batch)
        return batch

    points.refine = recorded
    fit(problem, model, settings, points)
    return points, refined


def second_order(phase, **block):
    return TrainSettings(
        phases=["adam", phase],
        adam={"steps": 2},
        **{phase: {"stall_window": 0, **block}},
        log_every=3,
        progress=False,
    )


@pytest.mark.parametrize("phase", ["lbfgs", "bfgs", "gauss_newton"])
def test_rad_in_a_second_order_phase_draws_the_points_where_the_residual_is_large(phase):
    settings = second_order(phase, steps=5, refine_every=2)
    points, refined = corner_fit(settings, "rad")
    assert len(refined) == 2  # before iterations 2 and 4 of the phase, none at its start
    # RAD's density |r| / mean|r| + 1 puts about (0.64 + 1/16) / 2 of them in 1/16 of the
    # square (measured: 0.31 to 0.37), uniform points 1/16
    for batch in refined:
        assert corner_share(batch.interior) > 0.25 == 4 / 16
    uniform = points.domain.sample_interior(200, torch.Generator().manual_seed(2), "sobol")
    assert corner_share(uniform) < 0.1


@pytest.mark.parametrize("phase", ["lbfgs", "bfgs", "gauss_newton"])
def test_rar_in_a_second_order_phase_adds_the_points_of_largest_residual(phase):
    settings = second_order(phase, steps=4, refine_every=3)
    _, refined = corner_fit(settings, "rar", add=20)
    (batch,) = refined
    added = batch.interior[-20:]
    assert len(batch.interior) == 200 + 20
    assert corner_share(added) == 1.0  # every one of the 20 in the corner's 1/16
    assert ((added - 1).square().sum(dim=1) < 0.1).all()  # within 0.32 of (1, 1)


def test_a_phase_redraws_and_refines_at_its_own_intervals_cutting_its_chunks():
    """L-BFGS, 7 iterations: redrawn before iterations 3 and 6, refined before 2, 4 and 6
    (after the redraw), its chunks cut there; a history row per iteration all the same."""
    calls = []
    draw = PointSampler.draw

    def counted(self):
        calls.append("draw")
        return draw(self)

    settings = second_order("lbfgs", steps=7, resample_every=3, refine_every=2)
    PointSampler.draw = counted
    try:
        points, refined = corner_fit(settings, "rad")
    finally:
        PointSampler.draw = draw
    assert calls == ["draw"] * 3 and len(refined) == 3  # the first draw, then 3 and 6
    last = refined[-1].interior  # refined after the redraw at 6: it is the batch trained on
    assert corner_share(last) > 0.25
    assert torch.equal(points.state_dict()["refined"]["interior"], last)


def test_refinement_at_adam_refine_every():
    settings = TrainSettings(phases=["adam"], adam={"steps": 9, "refine_every": 4}, progress=False)
    _, refined = corner_fit(settings, "rad")
    assert len(refined) == 2  # at steps 4 and 8


# ---- point weights in every phase ---------------------------------------------------------------


def weighted_fit(point_weights, phases=("adam", "lbfgs", "bfgs", "gauss_newton"), **settings):
    """Fit `CornerSource` (uniform points) with point weights; returns (the result, the number
    of updates made)."""
    problem = CornerSource()
    model = MLP(2, 1, width=8, depth=2, generator=torch.Generator().manual_seed(0)).double()
    points = PointSampler(
        problem.domain, 100, 40, "sobol", torch.Generator().manual_seed(1), torch.float64
    )
    updates = []
    update = pinn.problem.point_weights.PointWeights._update

    def counted(self, magnitude):
        updates.append(1)
        return update(self, magnitude)

    settings = TrainSettings(
        phases=list(phases),
        point_weights=point_weights,
        log_every=2,
        progress=False,
        **settings,
    )
    pinn.problem.point_weights.PointWeights._update = counted
    try:
        result = fit(problem, model, settings, points)
    finally:
        pinn.problem.point_weights.PointWeights._update = update
    return result, len(updates)


@pytest.mark.parametrize("method", ["rba", "vrba"])
def test_point_weights_move_at_their_cadence_in_every_phase(method):
    """every=2: Adam steps 0, 2, 4; L-BFGS iterations 0, 2, 4 and BFGS's 0, 2 (each a chunk's
    first evaluation, its line searches held); Gauss-Newton iterations 0, 2 (at the Jacobian)."""
    result, updates = weighted_fit(
        {"method": method, "every": 2, "gamma": 0.9, "eta": 0.5},
        adam={"steps": 6},
        lbfgs={"steps": 5, "stall_window": 0},
        bfgs={"steps": 4, "stall_window": 0},
        gauss_newton={"steps": 3, "stall_window": 0},
    )
    phases = [row["phase"] for row in result.history]
    counts = [phases.count(name) for name in ("lbfgs", "bfgs", "gauss_newton")]
    assert counts == [5, 4, 3]  # no early stop
    assert updates == 3 + 3 + 2 + 2
    means = [row["attention_mean_weight"] for row in result.history]
    largest = [row["attention_max_weight"] for row in result.history]
    assert all(0 < m <= top <= max(1.0, 0.5 / (1 - 0.9)) for m, top in zip(means, largest))
    assert means[-1] < 0.5 * largest[-1]  # the corner's points weigh more than the rest
    assert len(set(means)) > 4


def test_point_weights_make_the_loss_the_weighted_one():
    """From 0, one update leaves every weight at most eta = 0.01: the PDE term of the first
    step at most 1e-4 of the unweighted one, the boundary term as it is."""
    plain, _ = weighted_fit({"method": "none"}, phases=["adam"], adam={"steps": 1})
    weighted, _ = weighted_fit(
        {"method": "rba", "initial": 0.0, "gamma": 0.5, "eta": 0.01},
        phases=["adam"],
        adam={"steps": 1},
    )
    raw, first = plain.history[0], weighted.history[0]
    assert 0 < first["pde"] <= 1e-4 * raw["pde"]
    assert first["pde"] > 1e-4 * raw["pde"] / 16  # the corner's points weigh about 0.01
    assert first["dirichlet"] == raw["dirichlet"]
    assert first["loss"] == pytest.approx(first["pde"] + first["dirichlet"], rel=1e-15)


# ---- refusals -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "phases, blocks, method, message",
    [
        (
            ["adam", "lbfgs"],
            {"lbfgs": {"refine_every": 50}},
            "none",
            "trainer.lbfgs.refine_every=50 refines the points by their residual, but "
            "refinement.method=none: choose refinement.method=rad (or rar), or set "
            "trainer.lbfgs.refine_every=0",
        ),
    ],
)
def test_refinement_settings_that_do_not_fit_together_are_refused_in_one_line(
    phases, blocks, method, message
):
    with pytest.raises(ConfigError) as refused:
        problem, model, points = corner_parts(method)
        fit(problem, model, TrainSettings(phases=phases, progress=False, **blocks), points)
    assert message in str(refused.value) and "\n" not in str(refused.value)


def test_a_method_no_phase_refines_by_is_warned_of_and_the_points_only_drawn(caplog):
    settings = TrainSettings(phases=["adam", "gauss_newton"], adam={"steps": 2}, progress=False)
    settings.gauss_newton.steps = 1
    with caplog.at_level(logging.WARNING, logger="pinn"):
        problem, model, points = corner_parts("rad")
        result = fit(problem, model, settings, points)
    said = (
        "refinement.method=rad, but no phase of trainer.phases=[adam,gauss_newton] refines "
        "the points: give one a refine_every, e.g. trainer.adam.refine_every=100"
    )
    assert said in caplog.text and result.steps == 3


def corner_parts(method):
    """CornerSource, a tiny model and a sampler refining by `method`."""
    problem = CornerSource()
    model = MLP(2, 1, width=4, depth=1, generator=torch.Generator().manual_seed(0)).double()
    points = PointSampler(
        problem.domain,
        10,
        10,
        "sobol",
        torch.Generator().manual_seed(0),
        torch.float64,
        refinement=Refinement(method),
    )
    return problem, model, points


@pytest.mark.parametrize("phase", ["adam", "lbfgs", "gauss_newton"])
@pytest.mark.parametrize("value", [-1, 2.5])
def test_a_bad_refine_every_is_refused_naming_its_key(phase, value):
    with pytest.raises(ConfigError, match=f"trainer.{phase}.refine_every"):
        TrainSettings(**{phase: {"refine_every": value}})
