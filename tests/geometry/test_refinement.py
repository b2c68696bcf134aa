"""Residual-based adaptive sampling (RAR-G, RAD): where the points go, settings, resume."""

from __future__ import annotations

import io
import math

import pytest
import torch

from pinn.derivatives.field import Field
from pinn.errors import ConfigError, TrainingDiverged
from pinn.geometry import Box, PointSampler
from pinn.geometry.refinement import Refinement, rad_density, residual_magnitude
from pinn.nn.mlp import MLP
from pinn.problems.poisson import Poisson

UNIT_SQUARE = Box([0.0, 0.0], [1.0, 1.0])
CENTRE = torch.tensor([0.7, 0.3], dtype=torch.float64)
RADIUS = 0.15
UNIFORM_FRACTION = math.pi * RADIUS**2  # of the unit square within RADIUS of CENTRE: 0.0707


def bump(x: torch.Tensor) -> torch.Tensor:
    """(N,) a residual that lives near CENTRE: exp(-200 |x - CENTRE|^2)."""
    return torch.exp(-200 * (x - CENTRE).square().sum(dim=1))


def distance(x: torch.Tensor) -> torch.Tensor:
    return (x - CENTRE).norm(dim=1)


def sampler(refinement=None, n_interior=500, method="uniform", seed=7) -> PointSampler:
    generator = torch.Generator().manual_seed(seed)
    return PointSampler(
        UNIT_SQUARE, n_interior, 40, method, generator, torch.float64, refinement=refinement
    )


# ---- where the points go -----------------------------------------------------------------------


def test_rar_adds_the_points_of_largest_residual():
    points = sampler(Refinement("rar", candidates=10000, add=50))
    drawn = points.draw().interior
    added = points.refine(bump).interior[500:]
    uniform = UNIT_SQUARE.sample_interior(
        10000, torch.Generator().manual_seed(1), "uniform", torch.float64
    )
    top_percent = torch.quantile(bump(uniform), 0.99)
    # The top 50 of 10000 candidates lie in the top 1% of |r|: the disc of area 1% around
    # CENTRE, radius sqrt(0.01 / pi) = 0.056. About 1% of the drawn points do.
    assert len(added) == 50
    assert (bump(added) > top_percent).all()
    assert (distance(added) < 0.06).all()
    assert (bump(drawn) > top_percent).double().mean() < 0.03


def fraction_near_centre(refinement: Refinement) -> float:
    points = sampler(refinement, n_interior=2000)
    points.draw()
    interior = points.refine(bump).interior
    assert interior.shape == (2000, 2)
    return (distance(interior) < RADIUS).double().mean().item()


def test_rad_draws_the_interior_where_the_residual_is():
    # p ∝ r / mean(r) + 1 with mean(r) ≈ pi / 200: half the mass lies within RADIUS of CENTRE;
    # 2000 of 20000 candidates drawn without replacement put about 0.36 of the points there.
    assert fraction_near_centre(Refinement("rad", candidates=20000)) > 3 * UNIFORM_FRACTION


@pytest.mark.parametrize("settings", [dict(c=1e4), dict(k=0.0)])
def test_rad_tends_to_uniform_sampling_for_large_c_or_k_zero(settings):
    refinement = Refinement("rad", candidates=20000, **settings)
    # 2000 points: the uniform fraction's standard deviation is 0.006.
    assert abs(fraction_near_centre(refinement) - UNIFORM_FRACTION) < 0.02


def test_rad_density():
    magnitude = torch.tensor([0.0, 1.0, 3.0], dtype=torch.float64)
    expected = torch.tensor([1.0, 1.75, 3.25], dtype=torch.float64)  # r / mean(r) + 1
    assert torch.allclose(rad_density(magnitude, 1.0, 1.0), expected)
    assert torch.allclose(rad_density(magnitude, 2.0, 0.0), torch.tensor([0, 0.3, 2.7]).double())
    assert torch.equal(rad_density(torch.zeros(4), 1.0, 0.0), torch.ones(4))
    huge = torch.tensor([1e300, 2e300], dtype=torch.float64)  # |r|^k would overflow
    assert torch.allclose(rad_density(huge, 2.0, 0.0), torch.tensor([0.4, 1.6]).double())


def test_rad_draws_without_replacement_when_it_can():
    points = sampler(Refinement("rad", candidates=600), n_interior=500)
    points.draw()
    assert len(torch.unique(points.refine(bump).interior, dim=0)) == 500
    few = sampler(Refinement("rad", candidates=100), n_interior=500)
    few.draw()
    interior = few.refine(bump).interior
    assert interior.shape == (500, 2) and len(torch.unique(interior, dim=0)) <= 100


# ---- what the batch holds ---------------------------------------------------------------------


def test_rar_points_are_kept_through_redraws():
    points = sampler(Refinement("rar", candidates=1000, add=30))
    first = points.draw()
    assert first.interior.shape == (500, 2)
    sizes, added = [], []
    for _ in range(3):
        batch = points.refine(bump)
        sizes.append(len(batch.interior))
        added.append(batch.interior[-30:])
        assert torch.equal(batch.interior[:500], first.interior)  # the draw's points stay
        assert batch.boundary is first.boundary
    assert sizes == [530, 560, 590]
    redrawn = points.draw()
    assert redrawn.interior.shape == (590, 2)
    assert not torch.equal(redrawn.interior[:500], first.interior)  # fresh points ...
    assert torch.equal(redrawn.interior[500:], torch.cat(added))  # ... and every added one


def test_rad_replaces_the_interior_until_the_next_draw():
    points = sampler(Refinement("rad", candidates=5000))
    drawn = points.draw()
    refined = points.refine(bump)
    assert refined.interior.shape == (500, 2)
    assert refined.boundary is drawn.boundary
    assert (distance(refined.interior) < RADIUS).double().mean() > 3 * UNIFORM_FRACTION
    redrawn = points.draw()
    assert redrawn.interior.shape == (500, 2)
    assert (distance(redrawn.interior) < RADIUS).double().mean() < 2 * UNIFORM_FRACTION


@pytest.mark.parametrize("refinement", [None, Refinement(), Refinement("rar"), Refinement("rad")])
@pytest.mark.parametrize("method", ["uniform", "sobol", "lhs"])
def test_draws_are_unchanged_until_a_refinement(refinement, method):
    points = sampler(refinement, method=method)
    old_way = torch.Generator().manual_seed(7)  # what PointSampler drew before refinement
    options = dict(method=method, dtype=torch.float64)
    for _ in range(3):
        batch = points.draw()
        interior = UNIT_SQUARE.sample_interior(500, old_way, **options)
        boundary = UNIT_SQUARE.sample_boundary(40, old_way, **options)
        assert torch.equal(batch.interior, interior)
        assert torch.equal(batch.boundary.points, boundary.points)
        assert torch.equal(batch.boundary.normals, boundary.normals)
    assert torch.equal(points.generator.get_state(), old_way.get_state())
    if refinement is None or refinement.method == "none":
        assert set(points.state_dict()) == {"generator", "interior", "boundary"}


def test_refine_is_seeded_chunked_and_leaves_the_global_generator_alone():
    sizes = []

    def recording(x):
        sizes.append(len(x))
        return bump(x)

    global_rng = torch.get_rng_state()
    batches = []
    for residual in (recording, bump):
        points = sampler(Refinement("rad", candidates=1234), n_interior=500)
        points.draw()
        batches.append(points.refine(residual).interior)
    assert torch.equal(batches[0], batches[1])
    assert sizes == [500, 500, 234]  # n_interior candidates at a time
    assert torch.equal(torch.get_rng_state(), global_rng)


def test_refine_with_a_network_residual():
    problem = Poisson(hard_boundary=False)
    model = MLP(2, 1, width=8, depth=2, generator=torch.Generator().manual_seed(0)).double()

    def residual(x):
        field = Field(model, x, problem.inputs, problem.outputs)
        return residual_magnitude(problem.residual(field.x, field))

    points = sampler(Refinement("rar", candidates=300, add=20), n_interior=64)
    points.draw()
    batch = points.refine(residual)
    assert batch.interior.shape == (84, 2) and not batch.interior.requires_grad
    assert all(p.grad is None for p in model.parameters())


def test_residual_magnitude():
    a = torch.tensor([3.0, -1.0, 0.0])
    b = torch.tensor([4.0, 0.0, -2.0])
    assert torch.equal(residual_magnitude(a), torch.tensor([3.0, 1.0, 0.0]))
    assert torch.equal(residual_magnitude({"a": a, "b": b}), torch.tensor([5.0, 1.0, 2.0]))
    assert torch.equal(residual_magnitude(torch.stack([a, b], dim=1)), torch.tensor([5.0, 1, 2]))


# ---- settings and misuse -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "settings, key",
    [
        (dict(method="RAR"), "refinement.method"),
        (dict(candidates=2.5), "refinement.candidates"),
        (dict(candidates=0), "refinement.candidates"),
        (dict(add=0), "refinement.add"),
        (dict(method="rar", candidates=10, add=11), "refinement.add"),
        (dict(k=-1.0), "refinement.k"),
        (dict(k=float("nan")), "refinement.k"),
        (dict(c=-0.5), "refinement.c"),
        (dict(c=True), "refinement.c"),
        (dict(method="rad", candidates=2**24 + 1), "refinement.candidates"),
    ],
)
def test_bad_settings_are_refused_by_key(settings, key):
    with pytest.raises(ConfigError, match=key):
        Refinement(**settings)


def test_refine_refuses_misuse():
    with pytest.raises(RuntimeError, match="before any draw"):
        sampler(Refinement("rad")).refine(bump)
    plain = sampler()
    plain.draw()
    with pytest.raises(RuntimeError, match="'none'"):
        plain.refine(bump)
    points = sampler(Refinement("rar", candidates=100, add=5))
    points.draw()
    with pytest.raises(ValueError, match=r"must map \(100, d\) points to \(100,\)"):
        points.refine(lambda x: bump(x)[:, None])
    with pytest.raises(TrainingDiverged, match="NaN or infinite at 100 of 100"):
        points.refine(lambda x: bump(x) / 0 * 0)


# ---- resume ------------------------------------------------------------------------------------


def through_a_file(state: dict) -> dict:
    buffer = io.BytesIO()
    torch.save(state, buffer)
    buffer.seek(0)
    return torch.load(buffer, weights_only=True)


def step(points: PointSampler, operation: str):
    return points.draw() if operation == "draw" else points.refine(bump)


def assert_same_batch(a, b, where: str) -> None:
    assert torch.equal(a.interior, b.interior), where
    assert torch.equal(a.boundary.points, b.boundary.points), where
    assert torch.equal(a.boundary.normals, b.boundary.normals), where
    assert torch.equal(a.boundary.part, b.boundary.part), where


OPERATIONS = ["draw", "refine", "refine", "draw", "refine", "draw", "draw", "refine"]


@pytest.mark.parametrize("method", ["none", "rar", "rad"])
def test_a_restored_sampler_goes_on_exactly_like_the_original(method):
    refinement = Refinement(method, candidates=700, add=25)
    operations = [op for op in OPERATIONS if method != "none" or op == "draw"]
    for saved_after in range(1, len(operations)):
        original = sampler(refinement, method="sobol")
        for operation in operations[:saved_after]:
            current = step(original, operation)
        restored = sampler(refinement, method="sobol", seed=99)
        where = f"{method}, saved after {operations[:saved_after]}"
        assert_same_batch(
            restored.load_state_dict(through_a_file(original.state_dict())), current, where
        )
        assert torch.equal(restored.generator.get_state(), original.generator.get_state()), where
        for operation in operations[saved_after:]:
            assert_same_batch(step(restored, operation), step(original, operation), where)


def test_a_state_of_other_refinement_settings_is_refused():
    points = sampler(Refinement("rar", candidates=100, add=5))
    points.draw()
    points.refine(bump)
    state = through_a_file(points.state_dict())
    for other in (None, Refinement("rar", candidates=100, add=6), Refinement("rad")):
        with pytest.raises(ConfigError, match="refined with"):
            sampler(other).load_state_dict(state)
    plain = sampler()
    plain.draw()
    with pytest.raises(ConfigError, match="refined with None"):
        sampler(Refinement("rad")).load_state_dict(plain.state_dict())
