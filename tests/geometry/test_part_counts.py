"""Boundary points counted per part: `Domain.sample_boundary({part: count})`, `share_boundary`,
and `PointSampler` with counts, its checkpoint included."""

from __future__ import annotations

import pytest
import torch
from shape_cases import METHODS, case

from pinn.errors import ConfigError
from pinn.geometry import Box, Disk, PointSampler

F64 = torch.float64
SHAPES = [
    "disk",
    "l_polygon",
    "square_with_hole",
    "union_of_boxes",
    "union_with_shared_faces",
    "spacetime_disk",
]


def outer_with_hole():
    return Box([0, 0], [1, 1]) - Disk([0.5, 0.5], 0.2, name="hole")


@pytest.mark.parametrize("n", [0, 1, 7, 50, 333])
@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("case_id", SHAPES)
def test_every_part_by_measure_draws_what_a_plain_count_draws_bit_for_bit(case_id, method, n):
    domain = case(case_id).domain
    before, after = torch.Generator().manual_seed(5), torch.Generator().manual_seed(5)
    plain = domain.sample_boundary(n, before, method=method, dtype=F64)
    counted = domain.sample_boundary(domain.share_boundary(n), after, method=method, dtype=F64)
    for field in ("points", "normals", "part"):
        assert torch.equal(getattr(plain, field), getattr(counted, field)), field
    assert torch.equal(before.get_state(), after.get_state())


def test_counts_per_part_are_drawn_exactly_and_other_parts_get_none():
    domain = outer_with_hole()
    drawn = domain.sample_boundary({"hole": 37}, torch.Generator().manual_seed(0), dtype=F64)
    assert drawn.points.shape == (37, 2)
    assert drawn.on("hole").all()
    assert torch.allclose((drawn.points - 0.5).norm(dim=1), torch.tensor(0.2, dtype=F64))
    both = domain.sample_boundary({"x_min": 5, "hole": 11}, torch.Generator().manual_seed(0))
    assert (int(both.on("x_min").sum()), int(both.on("hole").sum())) == (5, 11)


def test_a_part_of_several_pieces_shares_its_count_by_measure():
    domain = Box([0, 0], [1, 1]) | Box([2, 0], [3, 2])  # x_min: pieces of length 1 and 2
    drawn = domain.sample_boundary({"x_min": 30}, torch.Generator().manual_seed(0), dtype=F64)
    assert drawn.points.shape == (30, 2)
    assert ((drawn.points[:, 0] == 0).sum(), (drawn.points[:, 0] == 2).sum()) == (10, 20)


def test_share_boundary_shares_by_measure_over_the_named_parts():
    domain = outer_with_hole()
    assert domain.share_boundary(100, ["hole"]) == {"hole": 100}
    whole = domain.share_boundary(100)
    assert sum(whole.values()) == 100 and whole["hole"] > whole["x_min"] > 0
    assert domain.share_boundary(0, ["hole"]) == {"hole": 0}


@pytest.mark.parametrize(
    "counts, words",
    [
        ({"rim": 4}, ["unknown boundary part", "'y_max', 'hole'"]),
        ({"hole": -1}, ["'hole'", "whole number >= 0"]),
        ({"hole": 2.5}, ["'hole'", "whole number >= 0"]),
    ],
)
def test_bad_counts_are_refused_naming_the_part(counts, words):
    with pytest.raises(ConfigError) as error:
        outer_with_hole().sample_boundary(counts, torch.Generator())
    assert all(word in str(error.value) for word in words)


def test_a_sampler_with_counts_resumes_its_batch_exactly():
    domain = outer_with_hole()

    def sampler():
        return PointSampler(domain, 20, {"hole": 9}, "sobol", torch.Generator().manual_seed(2))

    points = sampler()
    points.draw()
    state = points.state_dict()
    following = points.draw()
    assert state["boundary_counts"] == {"hole": 9}
    again = sampler()
    assert torch.equal(again.load_state_dict(state).boundary.points, state["boundary"])
    assert torch.equal(again.draw().boundary.points, following.boundary.points)


def test_a_state_without_counts_goes_on_sharing_by_measure_over_every_part():
    """A checkpoint written before counts per part: its run continues as it began."""
    domain = outer_with_hole()
    before = PointSampler(domain, 20, 12, "sobol", torch.Generator().manual_seed(2))
    before.draw()
    state = before.state_dict()
    assert "boundary_counts" not in state
    following = before.draw()
    now = PointSampler(domain, 20, {"hole": 9}, "sobol", torch.Generator().manual_seed(2))
    now.load_state_dict(state)
    assert torch.equal(now.draw().boundary.points, following.boundary.points)
