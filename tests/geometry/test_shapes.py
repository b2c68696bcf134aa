"""Ball, Disk and Polygon: their parts, and points spread uniformly over them."""

from __future__ import annotations

import math

import pytest
import torch

from pinn.geometry import Ball, Disk, Polygon

F64 = torch.float64
N = 4000
# A fraction p of N independent points is off by more than 5 sd, 5 sqrt(p(1-p)/N), with
# probability < 6e-7; Sobol and LHS sets are closer still.
SD = 5


def within(fraction: float, expected: float, n: int = N) -> bool:
    return abs(fraction - expected) < SD * math.sqrt(expected * (1 - expected) / n)


@pytest.mark.parametrize("method", ["uniform", "sobol", "lhs"])
@pytest.mark.parametrize("dim", [2, 3, 5])
def test_ball_interior_is_uniform_in_radius_and_direction(dim, method, generator):
    center = torch.linspace(-0.5, 0.5, dim, dtype=F64)
    ball = Ball(center.tolist(), 2.0)
    offsets = ball.sample_interior(N, generator, method=method, dtype=F64) - center
    radius = offsets.norm(dim=1) / 2.0
    # Uniform in volume: the fraction within r·s is s^d.
    for s in (0.5, 0.8, 0.95):
        assert within((radius < s).double().mean().item(), s**dim), s
    # Directions: each half-space through the centre holds half the points.
    for axis in range(dim):
        assert within((offsets[:, axis] > 0).double().mean().item(), 0.5), axis


@pytest.mark.parametrize("method", ["uniform", "sobol", "lhs"])
@pytest.mark.parametrize("dim", [2, 3, 5])
def test_sphere_points_are_uniform_in_direction(dim, method, generator):
    ball = Ball([0.0] * dim, 1.5)
    boundary = ball.sample_boundary(N, generator, method=method, dtype=F64)
    assert boundary.part_names == ("sphere",)
    directions = boundary.points / 1.5
    # The normal of a sphere is the direction itself.
    assert torch.allclose(boundary.normals, directions, atol=1e-12)
    for axis in range(dim):
        # A coordinate u of a uniform direction has density ∝ (1 - u²)^((d - 3)/2), so
        # P(|u| > 1/2) is 2/3 on the circle, 1/2 on the 2-sphere, 5/16 on the 4-sphere.
        expected = {2: 2 / 3, 3: 1 / 2, 5: 5 / 16}[dim]
        assert within((directions[:, axis].abs() > 0.5).double().mean().item(), expected)
        assert within((directions[:, axis] > 0).double().mean().item(), 0.5)


def test_disk_is_a_two_dimensional_ball_with_a_circle():
    disk = Disk([1.0, 2.0], 0.5)
    assert disk.dim == 2 and disk.names == ("x", "y") and disk.part_names == ("circle",)
    assert disk.lower == (0.5, 1.5) and disk.upper == (1.5, 2.5)
    assert disk.boundary_measure() == {"circle": pytest.approx(math.pi)}
    assert Disk([0.0, 0.0], 1.0, name="wall").part_names == ("wall",)
    assert Ball([0.0, 0.0, 0.0], 1.0).part_names == ("sphere",)
    assert Ball([0.0] * 4, 1.0).names == ("x0", "x1", "x2", "x3")


def test_a_one_dimensional_ball_is_an_interval(generator):
    segment = Ball([1.0], 0.5)
    assert segment.volume == pytest.approx(1.0) and segment.surface == 2.0
    interior = segment.sample_interior(200, generator, dtype=F64)
    assert ((interior > 0.5) & (interior < 1.5)).all()
    boundary = segment.sample_boundary(200, generator, dtype=F64)
    assert set(boundary.points[:, 0].tolist()) == {0.5, 1.5}
    assert torch.equal(boundary.normals[:, 0], torch.where(boundary.points[:, 0] > 1, 1.0, -1.0))


@pytest.mark.parametrize("method", ["uniform", "sobol", "lhs"])
def test_polygon_interior_is_uniform(method, generator):
    """The L-shape is three unit squares: a third of the points in each."""
    ell = Polygon([(0, 0), (2, 0), (2, 1), (1, 1), (1, 2), (0, 2)])
    points = ell.sample_interior(N, generator, method=method, dtype=F64)
    right = (points[:, 0] > 1).double().mean().item()
    top = (points[:, 1] > 1).double().mean().item()
    assert within(right, 1 / 3) and within(top, 1 / 3)


@pytest.mark.parametrize("method", ["uniform", "sobol", "lhs"])
def test_polygon_edge_points_are_uniform_along_each_edge(method, generator):
    triangle = Polygon([(0, 0), (3, 0), (0, 4)])  # edges 3, 5 and 4 long
    boundary = triangle.sample_boundary(1200, generator, method=method, dtype=F64)
    assert torch.bincount(boundary.part).tolist() == [300, 500, 400]
    hypotenuse = boundary.points[boundary.on("edge1")]
    along = hypotenuse[:, 1] / 4  # 0 at (3, 0), 1 at (0, 4)
    assert within((along < 0.25).double().mean().item(), 0.25, 500)
    assert within((along < 0.5).double().mean().item(), 0.5, 500)


def test_edges_sharing_a_name_are_one_part(generator):
    square = Polygon([(0, 0), (1, 0), (1, 1), (0, 1)], edge_names=["wall", "out", "wall", "in"])
    assert square.part_names == ("wall", "out", "in")
    assert square.boundary_measure() == {"wall": 2.0, "out": 1.0, "in": 1.0}
    boundary = square.sample_boundary(400, generator, dtype=F64)
    wall = boundary.points[boundary.on("wall")]
    assert len(wall) == 200 and set(wall[:, 1].tolist()) == {0.0, 1.0}


def test_vertex_order_changes_neither_area_nor_parts():
    counter_clockwise = Polygon([(0, 0), (2, 0), (2, 1), (0, 1)])
    clockwise = Polygon([(0, 0), (0, 1), (2, 1), (2, 0)])
    assert counter_clockwise.volume == clockwise.volume == 2.0
    assert counter_clockwise.lower == clockwise.lower == (0.0, 0.0)
    assert counter_clockwise.upper == clockwise.upper == (2.0, 1.0)
    probe = torch.tensor([[1.0, 0.5], [3.0, 0.5], [1.0, -0.1]], dtype=F64)
    assert counter_clockwise.contains(probe).tolist() == [True, False, False]
    assert clockwise.contains(probe).tolist() == [True, False, False]
