"""Space-time: a spatial domain times a time interval, time the last coordinate."""

from __future__ import annotations

import math

import pytest
import torch

from pinn.geometry import Box, Disk, Polygon, SpaceTime

F64 = torch.float64
L_SHAPE = Polygon([(0, 0), (2, 0), (2, 1), (1, 1), (1, 2), (0, 2)])
SPACES = {
    "interval": Box([-1.0], [1.0]),
    "disk": Disk([0.0, 0.0], 1.0),
    "polygon": L_SHAPE,
    "plate": Box([0.0, 0.0], [1.0, 1.0]) - Disk([0.5, 0.5], 0.25, name="hole"),
}


@pytest.mark.parametrize("kind", SPACES)
def test_coordinates_bounds_and_parts(kind):
    space = SPACES[kind]
    slab = SpaceTime(space, 0.5, 2.0, time="tau")
    assert slab.dim == space.dim + 1 and slab.names == (*space.names, "tau")
    assert slab.lower == (*space.lower, 0.5) and slab.upper == (*space.upper, 2.0)
    assert slab.part_names == (*space.part_names, "tau_min", "tau_max")
    # The volume of the space (exact or estimated) times the duration, 1.5.
    assert slab.volume == pytest.approx(space.volume * 1.5, rel=1e-12)


@pytest.mark.parametrize("method", ["uniform", "sobol", "lhs"])
@pytest.mark.parametrize("kind", SPACES)
def test_points_lie_in_the_space_at_times_in_the_interval(kind, method, generator):
    space = SPACES[kind]
    slab = SpaceTime(space, -1.0, 3.0)
    interior = slab.sample_interior(300, generator, method=method, dtype=F64)
    assert space.contains(interior[:, :-1]).all()
    assert ((interior[:, -1] > -1.0) & (interior[:, -1] < 3.0)).all()
    boundary = slab.sample_boundary(300, generator, method=method, dtype=F64)
    t, where = boundary.points[:, -1], boundary.points[:, :-1]
    at_start, at_end = boundary.on("t_min"), boundary.on("t_max")
    # The time faces: exactly at the ends, inside the space, normals -t and +t.
    assert (t[at_start] == -1.0).all() and (t[at_end] == 3.0).all()
    assert space.contains(where[at_start | at_end]).all()
    assert (boundary.normals[at_start] == torch.tensor([0.0] * space.dim + [-1.0])).all()
    assert (boundary.normals[at_end] == torch.tensor([0.0] * space.dim + [1.0])).all()
    # The sides: on the space's boundary, within the interval, normals with no time component.
    side = ~(at_start | at_end)
    assert side.sum() > 0
    assert (space.level(where[side]).abs() < 1e-12).all()
    assert ((t[side] >= -1.0) & (t[side] <= 3.0)).all()
    assert (boundary.normals[side, -1] == 0).all()
    # Each side part is the spatial part of the same name (the part index maps by name).
    spatial = space.sample_boundary(1, generator).part_names
    for name in spatial:
        on_part = boundary.points[boundary.on(name)]
        assert (space.distance(on_part[:, :-1], on=name).abs() < 1e-12).all(), name


def test_sides_are_spread_over_space_and_time_with_sobol(generator):
    """Side points of Disk x [0, 1]: their angle and time fill the (angle, time) square.

    (The spatial point and its time are drawn apart; two Sobol sets drawn apart would pair their
    points along a few lines, leaving most of the square empty.)"""
    cylinder = SpaceTime(Disk([0.0, 0.0], 1.0), 0.0, 1.0)
    boundary = cylinder.sample_boundary(1024, generator, method="sobol", dtype=F64)
    side = boundary.points[boundary.on("circle")]
    assert len(side) == 512  # side 2π, faces π each: half the points
    angle = (torch.atan2(side[:, 1], side[:, 0]) % (2 * math.pi)) / (2 * math.pi)
    time = side[:, 2]
    cells = torch.bincount((angle * 8).long() * 8 + (time * 8).long(), minlength=64)
    # 8 points a cell on average: a uniform set leaves a cell empty with chance e^-8 = 3e-4.
    assert (cells > 0).all()
    # Uncorrelated: for independent pairs the correlation is ~N(0, 1/512), 0.15 is 3.4 sd.
    assert torch.corrcoef(torch.stack([angle, time]))[0, 1].abs() < 0.15


def test_initial_face_is_the_space_at_the_start(generator):
    rod = SpaceTime(Box([0.0], [2.0]), 0.0, 5.0)
    assert rod.part_names == ("x_min", "x_max", "t_min", "t_max")
    assert rod.boundary_measure() == {"x_min": 5.0, "x_max": 5.0, "t_min": 2.0, "t_max": 2.0}
    boundary = rod.sample_boundary(140, generator, method="uniform", dtype=F64)
    assert torch.bincount(boundary.part).tolist() == [50, 50, 20, 20]
    start = boundary.points[boundary.on("t_min")]
    assert (start[:, 1] == 0.0).all() and ((start[:, 0] > 0) & (start[:, 0] < 2)).all()
    ends = boundary.points[boundary.on(["x_min", "x_max"])]
    assert set(ends[:, 0].tolist()) == {0.0, 2.0}


def test_interior_of_a_mapped_space_keeps_the_method_structure(generator):
    """Box x [0, 1] maps the unit cube exactly: LHS puts one point per stratum in time too."""
    slab = SpaceTime(Box([0.0, 0.0], [1.0, 1.0]), 0.0, 1.0)
    points = slab.sample_interior(64, generator, method="lhs", dtype=F64)
    for axis in range(3):
        assert sorted((points[:, axis] * 64).floor().long().tolist()) == list(range(64))
