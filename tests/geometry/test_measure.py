"""Measures: volumes (areas) and boundary measures against exact values, and boundary points
shared out between the parts in proportion to their measure."""

from __future__ import annotations

import math

import pytest
import torch
from shape_cases import CASES, case

from pinn.geometry import Ball, Box, Disk, Polygon, SpaceTime

F64 = torch.float64
# Enough for a relative standard error below 1% (0.6% for a 3-ball in its box, 0.35% for the
# L); a 5-ball fills a tenth of its box and takes more.
MONTE_CARLO_POINTS = 50_000
MORE_POINTS = {"ball5": 200_000}
# A seeded estimate misses by more than 5 standard errors with probability < 6e-7.
STANDARD_ERRORS = 5


def monte_carlo_volume(domain, n: int, generator) -> tuple[float, float]:
    """The volume from uniform points counted by `domain.contains`, and its standard error
    V_box sqrt(p (1 - p) / n). The points fill the bounding box widened by 5% on each side, so
    that points outside count too (and a box filling its bounding box has a nonzero error)."""
    lower = torch.tensor(domain.lower, dtype=F64)
    upper = torch.tensor(domain.upper, dtype=F64)
    lower, upper = lower - 0.05 * (upper - lower), upper + 0.05 * (upper - lower)
    unit = torch.rand(n, domain.dim, generator=generator, dtype=F64)
    fraction = domain.contains(lower + unit * (upper - lower)).double().mean().item()
    box = (upper - lower).prod().item()
    return box * fraction, box * math.sqrt(fraction * (1 - fraction) / n)


EXTRA = [
    pytest.param(Ball([0.0, 0.0, 0.0], 2.0), 4 / 3 * math.pi * 8, id="ball3_radius2"),
    pytest.param(
        SpaceTime(Polygon([(0, 0), (2, 0), (2, 1), (1, 1), (1, 2), (0, 2)]), -1.0, 0.5),
        3.0 * 1.5,
        id="spacetime_l_polygon",
    ),
    pytest.param(SpaceTime(Box([0.0], [2.0]), 0.0, 3.0), 6.0, id="spacetime_interval"),
]


@pytest.mark.parametrize(
    ("domain", "exact"), [pytest.param(c.domain, c.volume, id=c.id) for c in CASES] + EXTRA
)
def test_monte_carlo_volume_matches_the_exact_volume(domain, exact, request, generator):
    n = MORE_POINTS.get(request.node.callspec.id, MONTE_CARLO_POINTS)
    estimate, error = monte_carlo_volume(domain, n, generator)
    # The bound is tight enough to mean something: 5 errors are at most 5% of the volume.
    assert error < 0.01 * exact
    assert abs(estimate - exact) < STANDARD_ERRORS * error


@pytest.mark.parametrize("shape", CASES, ids=str)
def test_volume_property_matches_the_exact_volume(shape):
    if shape.exact_volume:
        # A formula (shoelace, π^(d/2) r^d / Γ(d/2 + 1), width products): exact to rounding.
        assert shape.domain.volume == pytest.approx(shape.volume, rel=1e-12)
    else:
        # Constructive geometry: quasi-Monte Carlo with 2^16 Sobol points in the bounding box.
        assert shape.domain.volume == pytest.approx(shape.volume, rel=1e-2)


@pytest.mark.parametrize("shape", CASES, ids=str)
def test_boundary_measure_of_each_part(shape):
    measures = shape.domain.boundary_measure()
    assert list(measures) == list(shape.measures)
    for name, exact in shape.measures.items():
        # Uncut pieces are exact; cut ones are estimated from 2^12 Sobol points on the piece,
        # one per 1/4096 of it, so the cut is placed to about 1/4096 of the piece's measure.
        assert measures[name] == pytest.approx(exact, rel=1e-3), name


def part_counts(domain, n: int, generator) -> dict[str, int]:
    boundary = domain.sample_boundary(n, generator, dtype=F64)
    counts = torch.bincount(boundary.part, minlength=len(boundary.part_names)).tolist()
    return dict(zip(boundary.part_names, counts))


@pytest.mark.parametrize(
    "case_id",
    ["annulus", "l_polygon", "box_minus_box", "union_with_shared_faces", "spacetime_disk"],
)
def test_boundary_points_are_shared_in_proportion_to_measure(case_id, generator):
    shape = case(case_id)
    n = 1000
    counts = part_counts(shape.domain, n, generator)
    total = sum(shape.measures.values())
    assert sum(counts.values()) == n
    for name, measure in shape.measures.items():
        # Each piece gets its share rounded (largest remainder: off by < 1 per piece, at most
        # two pieces a part here), from measures estimated to ~1/4096 (< 0.3 of a point here).
        assert abs(counts[name] - n * measure / total) < 2.5, name


def test_a_disk_with_a_hole_shares_by_circumference():
    outer, inner = 1.5, 0.5
    annulus = Disk([0.0, 0.0], outer) - Disk([0.0, 0.0], inner, name="hole")
    boundary = annulus.sample_boundary(800, torch.Generator().manual_seed(3))
    counts = torch.bincount(boundary.part).tolist()
    # 2πR : 2πr = 3 : 1 of 800 points, exactly (each whole circle kept: measures exact).
    assert dict(zip(boundary.part_names, counts)) == {"circle": 600, "hole": 200}


def test_space_time_time_faces_get_the_volume_of_the_space(generator):
    """The t_min and t_max faces measure the space's area; the sides its perimeter times T."""
    space = Box([0.0, 0.0], [2.0, 1.0])
    slab = SpaceTime(space, 0.0, 0.5)
    measures = slab.boundary_measure()
    assert measures["t_min"] == measures["t_max"] == 2.0
    assert measures["x_min"] == measures["x_max"] == 1.0 * 0.5
    assert measures["y_min"] == measures["y_max"] == 2.0 * 0.5
    counts = part_counts(slab, 700, generator)
    # Total 7: 2 + 2 for the faces and 3 for the sides, of 700 points: exact multiples of 100.
    assert counts == {
        "x_min": 50,
        "x_max": 50,
        "y_min": 100,
        "y_max": 100,
        "t_min": 200,
        "t_max": 200,
    }
