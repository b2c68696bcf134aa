"""Drawn points lie where they should: interior points strictly inside, boundary points on the
part they are labelled with, for every shape kind and every sampling method."""

from __future__ import annotations

import pytest
import torch
from shape_cases import CASES, METHODS, distance_to

# Boundary points are computed in float64 from formulas exact up to rounding (a point on a
# segment, a centre plus a radius times a unit vector): a few ulps of coordinates of size ~1.
ON_BOUNDARY = 1e-12


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("case", CASES, ids=str)
def test_interior_points_are_strictly_inside(case, method, generator):
    domain = case.domain
    points = domain.sample_interior(400, generator, method=method, dtype=torch.float64)
    assert points.shape == (400, domain.dim)
    assert (domain.level(points) > 0).all()
    assert domain.contains(points).all()
    # Independently of the library's level function: the exact shape.
    assert case.inside(points).all()


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("case", CASES, ids=str)
def test_boundary_points_lie_on_their_part(case, method, generator):
    domain = case.domain
    n = 400
    boundary = domain.sample_boundary(n, generator, method=method, dtype=torch.float64)
    assert boundary.points.shape == (n, domain.dim)
    assert boundary.part_names == tuple(case.parts)
    assert (domain.level(boundary.points).abs() <= ON_BOUNDARY).all()
    for index, name in enumerate(boundary.part_names):
        on_part = boundary.points[boundary.part == index]
        assert len(on_part) > 0, f"no points on {name}"
        # The exact distance to the segments, circles or faces that make up this part.
        assert (distance_to(case.parts[name], on_part) <= ON_BOUNDARY).all(), name


@pytest.mark.parametrize("case", CASES, ids=str)
def test_boundary_points_spread_over_each_part(case, generator):
    """Not all on one stretch: every primitive making up a part gets points."""
    domain = case.domain
    boundary = domain.sample_boundary(800, generator, method="sobol", dtype=torch.float64)
    for index, name in enumerate(boundary.part_names):
        on_part = boundary.points[boundary.part == index]
        primitives = case.parts[name]
        nearest = torch.stack([p.distance(on_part) for p in primitives]).argmin(dim=0)
        assert set(nearest.tolist()) == set(range(len(primitives))), name
