"""Drawn points lie where they should: interior points strictly inside, boundary points on the
part they are labelled with, for every shape kind and every sampling method."""

from __future__ import annotations

import pytest
import torch
from shape_cases import CASES, METHODS, distance_to

from pinn.geometry.sampling import unit_cube

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


@pytest.mark.parametrize("dim", [1, 2, 3])
def test_every_sobol_draw_fills_each_cell_of_the_dyadic_grid_once(dim):
    # 2^(4 dim) points: a (0, m, d)-net property of Sobol's first points in d <= 3 is that each
    # of the 16^d cells of side 1/16 holds exactly one; the random digital shift keeps that.
    generator = torch.Generator().manual_seed(3)
    n = 16**dim
    first = unit_cube(n, dim, generator, "sobol")
    second = unit_cube(n, dim, generator, "sobol")
    for points in (first, second):
        cells = (points * 16).floor().to(torch.int64)
        index = (cells * 16 ** torch.arange(dim)).sum(dim=1)
        assert torch.equal(torch.bincount(index, minlength=n), torch.ones(n, dtype=torch.int64))
    assert not torch.equal(first, second)  # each draw is shifted afresh


def test_sobol_points_are_uniform_over_draws():
    # One point per draw: its coordinates over 4000 draws are uniform on [0, 1) (mean 1/2,
    # variance 1/12 within 5 standard errors).
    generator = torch.Generator().manual_seed(4)
    points = torch.stack([unit_cube(5, 2, generator, "sobol")[3] for _ in range(4000)])
    assert torch.all((points.mean(dim=0) - 0.5).abs() < 5 * (1 / 12 / 4000) ** 0.5)
    assert torch.all((points.var(dim=0) - 1 / 12).abs() < 5 * (1 / 180 / 4000) ** 0.5)
