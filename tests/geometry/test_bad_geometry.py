"""Bad geometry is refused up front with a ConfigError that says what is wrong."""

from __future__ import annotations

import math

import pytest
import torch

from pinn.errors import ConfigError
from pinn.geometry import Ball, Box, Disk, Polygon, SpaceTime


def refused(build, *words: str) -> str:
    """Run `build`, expect a ConfigError (a ValueError) whose message has all `words`."""
    with pytest.raises(ConfigError) as info:
        build()
    assert isinstance(info.value, ValueError)
    message = str(info.value)
    for word in words:
        assert word in message, f"{word!r} not in {message!r}"
    return message


# ---- polygons -------------------------------------------------------------------------------


def test_a_bow_tie_is_self_intersecting():
    refused(lambda: Polygon([(0, 0), (1, 1), (1, 0), (0, 1)]), "self-intersecting", "edge 0")


@pytest.mark.parametrize(
    ("vertices", "words"),
    [
        ([(0, 0), (1, 0), (2, 0)], ["degenerate", "double back"]),  # collinear
        ([(0, 0), (1, 1), (2, 2), (3, 3)], ["degenerate"]),  # collinear
        ([(0, 0), (1, 0), (1, 0), (0, 1)], ["degenerate", "same point"]),  # repeated vertex
        ([(0, 0), (1, 0), (1, 1), (0, 0)], ["degenerate", "same point"]),  # last = first
        ([(0, 0), (2, 0), (1, 0), (1, 1)], ["degenerate", "double back"]),  # edges fold back
    ],
    ids=["collinear3", "collinear4", "repeated", "closed_by_hand", "folds_back"],
)
def test_degenerate_polygons(vertices, words):
    refused(lambda: Polygon(vertices), *words)


def test_a_vertex_visited_twice_makes_edges_meet():
    # A figure of eight through (1, 1): not simple.
    refused(lambda: Polygon([(0, 0), (1, 1), (2, 0), (2, 2), (1, 1), (0, 2)]), "self-intersecting")


@pytest.mark.parametrize("vertices", [[], [(0, 0)], [(0, 0), (1, 0)]])
def test_fewer_than_three_vertices(vertices):
    refused(lambda: Polygon(vertices), "at least 3 vertices")


@pytest.mark.parametrize(
    ("vertices", "words"),
    [
        ([(0, 0), (1, 0, 0), (0, 1)], ["(x, y) pair"]),
        ([(0, 0), (1, math.nan), (0, 1)], ["vertex 1", "finite"]),
        ([(0, 0), ("a", 0), (0, 1)], ["vertex 1", "numbers"]),
    ],
)
def test_vertices_must_be_finite_pairs(vertices, words):
    refused(lambda: Polygon(vertices), *words)


def test_edge_names_must_match_the_edges():
    refused(lambda: Polygon([(0, 0), (1, 0), (0, 1)], edge_names=["a", "b"]), "3 edge names")


# ---- balls ----------------------------------------------------------------------------------


@pytest.mark.parametrize("radius", [0, 0.0, -1.0, math.nan, math.inf, "1", True, None])
@pytest.mark.parametrize("shape", [Disk, Ball])
def test_radius_must_be_a_positive_finite_number(shape, radius):
    refused(lambda: shape([0.0, 0.0], radius), "radius", "> 0", repr(radius))


def test_a_disk_needs_a_two_dimensional_center():
    refused(lambda: Disk([0.0, 0.0, 0.0], 1.0), "2-D center", "Ball")


@pytest.mark.parametrize("center", [[], [0.0, math.inf], [math.nan]])
def test_a_center_must_be_finite(center):
    refused(lambda: Ball(center, 1.0), "center", "finite")


# ---- constructive geometry ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("first", "second"),
    [
        (Disk([0.0, 0.0], 1.0), Disk([3.0, 0.0], 1.0)),  # bounding boxes apart
        # Bounding boxes overlap, shapes do not: the corner (1, 1) is 0.07 from the circle.
        (Box([0.0, 0.0], [1.0, 1.0]), Disk([1.9, 1.9], 1.2)),
    ],
    ids=["disjoint_disks", "box_and_disk_apart"],
)
def test_an_empty_intersection(first, second):
    refused(lambda: first & second, "intersection is empty")


def test_a_difference_that_removes_everything():
    refused(lambda: Box([0.0, 0.0], [1.0, 1.0]) - Box([-1.0, -1.0], [2.0, 2.0]), "empty")
    refused(lambda: Disk([0.0, 0.0], 0.5) - Box([-1.0, -1.0], [1.0, 1.0]), "difference is empty")


@pytest.mark.parametrize(
    "operation", [lambda a, b: a | b, lambda a, b: a & b, lambda a, b: a - b], ids="|&-"
)
@pytest.mark.parametrize(
    ("first", "second", "words"),
    [
        (
            Box([0.0, 0.0], [1.0, 1.0]),
            Box([0.0, 0.0], [1.0, 1.0], names=["u", "v"]),
            ("coordinates differ", "same names"),
        ),
        (Disk([0.0, 0.0], 1.0), Ball([0.0, 0.0, 0.0], 1.0), ("2-dimensional", "3-dimensional")),
    ],
    ids=["names", "dimensions"],
)
def test_operands_need_the_same_coordinates(first, second, words, operation):
    refused(lambda: operation(first, second), *words)


def test_only_domains_combine():
    refused(lambda: Box([0.0], [1.0]) | 3, "combines domains", "int")


# ---- space-time -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("start", "end"), [(1.0, 1.0), (2.0, 1.0), (0.0, math.inf), (math.nan, 1.0), ("0", 1.0)]
)
def test_space_time_needs_start_before_end(start, end):
    refused(lambda: SpaceTime(Box([0.0], [1.0]), start, end), "start < end")


@pytest.mark.parametrize(("names", "time"), [(["x", "t"], "t"), (["x", "y"], "y"), (None, "")])
def test_space_time_needs_a_new_time_name(names, time):
    refused(
        lambda: SpaceTime(Box([0.0, 0.0], [1.0, 1.0], names=names), 0.0, 1.0, time=time),
        "time coordinate",
    )


def test_space_time_needs_a_domain():
    refused(lambda: SpaceTime([0.0, 1.0], 0.0, 1.0), "spatial domain")


# ---- part names and methods -----------------------------------------------------------------


def test_unknown_part_names_are_refused_listing_the_names_there_are(generator):
    plate = Box([0.0, 0.0], [1.0, 1.0]) - Disk([0.5, 0.5], 0.25, name="hole")
    boundary = plate.sample_boundary(20, generator)
    message = refused(lambda: boundary.on(["hole", "inlet"]), "inlet")
    for name in ("x_min", "x_max", "y_min", "y_max", "hole"):
        assert name in message
    message = refused(lambda: plate.distance(torch.zeros(1, 2), on="circle"), "circle")
    assert "hole" in message and "x_min" in message


@pytest.mark.parametrize("where", ["interior", "boundary"])
@pytest.mark.parametrize(
    "domain",
    [
        Disk([0.0, 0.0], 1.0),
        Polygon([(0, 0), (1, 0), (0, 1)]),
        Box([0.0, 0.0], [1.0, 1.0]) - Disk([0.5, 0.5], 0.25),
        SpaceTime(Disk([0.0, 0.0], 1.0), 0.0, 1.0),
    ],
    ids=["disk", "polygon", "csg", "spacetime"],
)
def test_unknown_sampling_method(domain, where, generator):
    sample = domain.sample_interior if where == "interior" else domain.sample_boundary
    refused(lambda: sample(8, generator, method="halton"), "'halton'", "uniform", "sobol", "lhs")
