"""Draws are seeded: the same generator state repeats them bit for bit (what resuming a run
relies on), another state changes them, and the global random state is never touched."""

from __future__ import annotations

import pytest
import torch
from shape_cases import METHODS, case

from pinn.geometry import Disk, PointSampler, Polygon

F64 = torch.float64
# Shapes drawn by exact maps (disk, ball), by rejection (polygon, constructive geometry), and
# space-time over each kind.
SEEDED = ["disk", "ball3", "l_polygon", "square_with_hole", "union_of_boxes", "spacetime_disk"]


def draw(domain, generator, method):
    interior = domain.sample_interior(50, generator, method=method, dtype=F64)
    boundary = domain.sample_boundary(50, generator, method=method, dtype=F64)
    return interior, boundary


def assert_same(first, second):
    (interior, boundary), (interior_again, boundary_again) = first, second
    assert torch.equal(interior, interior_again)
    assert torch.equal(boundary.points, boundary_again.points)
    assert torch.equal(boundary.normals, boundary_again.normals)
    assert torch.equal(boundary.part, boundary_again.part)


def assert_different(first, second):
    (interior, boundary), (interior_other, boundary_other) = first, second
    assert not torch.equal(interior, interior_other)
    assert not torch.equal(boundary.points, boundary_other.points)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("case_id", SEEDED)
def test_same_seed_same_points_other_seed_or_next_draw_other_points(case_id, method):
    domain = case(case_id).domain
    first = draw(domain, torch.Generator().manual_seed(11), method)
    assert_same(first, draw(domain, torch.Generator().manual_seed(11), method))
    assert_different(first, draw(domain, torch.Generator().manual_seed(12), method))
    generator = torch.Generator().manual_seed(11)
    draw(domain, generator, method)
    assert_different(first, draw(domain, generator, method))


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("case_id", SEEDED)
def test_restoring_the_generator_state_repeats_the_draw(case_id, method, generator):
    domain = case(case_id).domain
    draw(domain, generator, method)  # somewhere in the middle of a run
    state = generator.get_state()
    first = draw(domain, generator, method)
    after = generator.get_state()
    generator.set_state(state)
    assert_same(first, draw(domain, generator, method))
    # ... and leaves the generator where the first draw left it.
    assert torch.equal(generator.get_state(), after)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("case_id", SEEDED)
def test_sampling_does_not_touch_the_global_random_state(case_id, method, generator):
    state = torch.random.get_rng_state()
    draw(case(case_id).domain, generator, method)
    assert torch.equal(torch.random.get_rng_state(), state)


@pytest.mark.parametrize(
    "domain",
    [
        Disk([0.0, 0.0], 1.0) - Disk([0.2, 0.0], 0.5, name="hole"),
        Polygon([(0, 0), (2, 0), (2, 1), (1, 1), (1, 2), (0, 2)]),
    ],
    ids=["disk_minus_disk", "polygon"],
)
def test_point_sampler_state_round_trip(domain):
    def sampler(seed: int) -> PointSampler:
        generator = torch.Generator().manual_seed(seed)
        return PointSampler(domain, 64, 32, "sobol", generator, torch.float64)

    points = sampler(5)
    points.draw()
    batch = points.draw()
    state = points.state_dict()
    following = points.draw()

    # A fresh sampler, seeded otherwise, takes up the saved batch and then the same next draw.
    resumed = sampler(99)
    restored = resumed.load_state_dict(state)
    assert torch.equal(restored.interior, batch.interior)
    assert torch.equal(restored.boundary.points, batch.boundary.points)
    assert torch.equal(restored.boundary.normals, batch.boundary.normals)
    assert torch.equal(restored.boundary.part, batch.boundary.part)
    next_batch = resumed.draw()
    assert torch.equal(next_batch.interior, following.interior)
    assert torch.equal(next_batch.boundary.points, following.boundary.points)
    assert not torch.equal(next_batch.interior, batch.interior)
