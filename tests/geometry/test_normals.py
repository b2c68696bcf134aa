"""Boundary normals are unit, perpendicular to the boundary and outward, for every shape kind:
checked against the gradient of `domain.distance` and by stepping across the boundary."""

from __future__ import annotations

import pytest
import torch
from shape_cases import CASES, METHODS, case, off_normal

from pinn.geometry import Polygon

F64 = torch.float64
# Checks of smoothness stay this far from corners and from where parts meet.
AWAY_FROM_CORNERS = 0.05


def boundary_away_from_corners(shape, generator, method="sobol", n=400):
    boundary = shape.domain.sample_boundary(n, generator, method=method, dtype=F64)
    far = shape.distance_to_corners(boundary.points) > AWAY_FROM_CORNERS
    assert far.sum() > n // 2  # the filter leaves most points to check
    return boundary.points[far], boundary.normals[far], boundary.part[far], boundary.part_names


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("shape", CASES, ids=str)
def test_normals_are_unit_and_perpendicular_to_the_boundary(shape, method, generator):
    boundary = shape.domain.sample_boundary(300, generator, method=method, dtype=F64)
    # Built from unit vectors in float64: unit to rounding.
    assert torch.allclose(boundary.normals.norm(dim=1), torch.ones(300, dtype=F64), atol=1e-12)
    for index, name in enumerate(boundary.part_names):
        mask = boundary.part == index
        deviation = off_normal(shape.parts[name], boundary.points[mask], boundary.normals[mask])
        # Exact: a face normal is a fixed unit vector, a sphere's is the radius over r.
        assert (deviation <= 1e-12).all(), name


@pytest.mark.parametrize("shape", CASES, ids=str)
def test_normals_follow_the_gradient_of_the_distance(shape, generator):
    """-∇φ/|∇φ| = n, by central differences of φ = domain.distance just inside the boundary.

    The distance grows inward and has a kink on the boundary (it is |carrier|-like across a cut
    piece), so the differences are taken at x - δn, where it is smooth.
    """
    points, normals, _, _ = boundary_away_from_corners(shape, generator)
    delta, step = 1e-4, 1e-6
    inside = points - delta * normals
    dim = points.shape[1]
    gradient = torch.stack(
        [
            (shape.domain.distance(inside + step * e) - shape.domain.distance(inside - step * e))
            / (2 * step)
            for e in torch.eye(dim, dtype=F64)
        ],
        dim=1,
    )
    direction = -gradient / gradient.norm(dim=1, keepdim=True)
    # Other pieces tilt the gradient by ~(δ / their distance)² <= (1e-4 / 0.05)² = 4e-6; the
    # difference quotient's own error is ~1e-10. Seen: at most 1e-5.
    assert ((direction - normals).norm(dim=1) < 1e-4).all()


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("shape", CASES, ids=str)
def test_a_step_along_the_normal_leaves_the_domain_and_against_it_enters(shape, method, generator):
    points, normals, _, _ = boundary_away_from_corners(shape, generator, method)
    step = 1e-6  # far above rounding (1e-16), far below the distance to a corner (0.05)
    outside, inside = points + step * normals, points - step * normals
    assert not shape.domain.contains(outside).any()
    assert shape.domain.contains(inside).all()
    # And by the exact shape, independently of the library's level function.
    assert not shape.inside(outside).any()
    assert shape.inside(inside).all()


def test_normals_on_a_hole_point_into_the_hole(generator):
    square = case("square_with_hole")
    boundary = square.domain.sample_boundary(500, generator, dtype=F64)
    on_hole = boundary.on("hole")
    assert on_hole.sum() > 50
    towards_center = torch.tensor([0.5, 0.5], dtype=F64) - boundary.points[on_hole]
    expected = towards_center / towards_center.norm(dim=1, keepdim=True)
    # Outward from the domain is into the hole: -(x - c)/r, exact to rounding.
    assert torch.allclose(boundary.normals[on_hole], expected, atol=1e-12)


def test_normals_of_a_box_cut_out_of_a_box_are_turned_round(generator):
    """The inner faces of [0, 2]² - [1, 3]² (the second box named "cut": cut_x_min at x = 1)
    point into the cut-out box: +x, not the -x of the first box's x_min at x = 0."""
    shape = case("box_minus_box")
    boundary = shape.domain.sample_boundary(800, generator, dtype=F64)
    outer, inner = boundary.on("x_min"), boundary.on("cut_x_min")
    assert (boundary.points[outer, 0] == 0.0).all() and (boundary.points[inner, 0] == 1.0).all()
    assert outer.sum() > 0 and inner.sum() > 0
    assert torch.equal(
        boundary.normals[outer], torch.tensor([-1.0, 0.0], dtype=F64).expand(int(outer.sum()), 2)
    )
    assert torch.equal(
        boundary.normals[inner], torch.tensor([1.0, 0.0], dtype=F64).expand(int(inner.sum()), 2)
    )


@pytest.mark.parametrize(
    "vertices",
    [
        [(0.0, 0.0), (2.0, 0.0), (0.0, 1.0)],  # counter-clockwise
        [(0.0, 0.0), (0.0, 1.0), (2.0, 0.0)],  # clockwise
    ],
)
def test_polygon_normals_point_out_whichever_way_the_vertices_go(vertices, generator):
    triangle = Polygon(vertices)
    boundary = triangle.sample_boundary(90, generator, dtype=F64)
    centroid = torch.tensor(vertices, dtype=F64).mean(dim=0)
    # For a convex shape, outward means away from an interior point.
    assert (((boundary.points - centroid) * boundary.normals).sum(dim=1) > 0).all()
