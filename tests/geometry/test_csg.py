"""Constructive geometry: which pieces of the operands make the boundary, under which names."""

from __future__ import annotations

import math

import pytest
import torch

from pinn.geometry import Box, Difference, Disk, Intersection, Polygon, Union

F64 = torch.float64
PLATE = Box([0.0, 0.0], [1.0, 1.0]) - Disk([0.5, 0.5], 0.25, name="hole")


def test_operators_build_the_combinations():
    a, b = Box([0.0, 0.0], [2.0, 2.0]), Box([1.0, 1.0], [3.0, 3.0], name="b")
    assert isinstance(a | b, Union) and isinstance(a & b, Intersection)
    assert isinstance(a - b, Difference)
    assert (a | b).first is a and (a | b).second is b
    assert (a | b).lower == (0.0, 0.0) and (a | b).upper == (3.0, 3.0)
    assert (a & b).lower == (1.0, 1.0) and (a & b).upper == (2.0, 2.0)
    assert (a - b).lower == (0.0, 0.0) and (a - b).upper == (2.0, 2.0)


def test_a_difference_keeps_both_operands_part_names(generator):
    assert PLATE.part_names == ("x_min", "x_max", "y_min", "y_max", "hole")
    boundary = PLATE.sample_boundary(600, generator, dtype=F64)
    assert boundary.part_names == PLATE.part_names
    radius = (boundary.points - torch.tensor([0.5, 0.5], dtype=F64)).norm(dim=1)
    on_circle = (radius - 0.25).abs() < 1e-12  # points on the circle, to rounding
    # on("hole") selects exactly the points on the circle, and every point is on some part.
    assert on_circle.sum() > 0
    assert torch.equal(boundary.on("hole"), on_circle)
    assert torch.equal(boundary.on(["x_min", "x_max", "y_min", "y_max"]), ~on_circle)


def test_pieces_of_the_same_name_merge_into_one_part(generator):
    walls = Disk([0.0, 0.0], 1.0, name="wall") | Disk([1.0, 0.0], 1.0, name="wall")
    assert walls.part_names == ("wall",)
    boundary = walls.sample_boundary(300, generator, dtype=F64)
    assert boundary.part_names == ("wall",) and (boundary.part == 0).all()
    # Each circle keeps the 2/3 of it outside the other (the arcs meet at x = 1/2).
    expected = 2 * (2 * math.pi - 2 * math.pi / 3)
    # The kept fraction of each circle is estimated from 2^12 Sobol points.
    assert walls.boundary_measure()["wall"] == pytest.approx(expected, rel=1e-3)
    near_first = (boundary.points[:, 0] < 0.5).sum().item()
    assert near_first == 150  # by symmetry, the measures split the points evenly


def test_a_piece_inside_the_other_operand_contributes_no_points(generator):
    # The disk lies inside the box: its circle bounds nothing of the union.
    box_with_disk = Box([0.0, 0.0], [1.0, 1.0]) | Disk([0.5, 0.5], 0.3)
    assert box_with_disk.part_names == ("x_min", "x_max", "y_min", "y_max")
    # The faces of [0, 2]² inside [1, 3]² and the other way round bound nothing either.
    union = Box([0.0, 0.0], [2.0, 2.0]) | Box([1.0, 1.0], [3.0, 3.0])
    boundary = union.sample_boundary(2000, generator, dtype=F64)
    strictly_inside_either = ((boundary.points > 0.0) & (boundary.points < 2.0)).all(dim=1) | (
        (boundary.points > 1.0) & (boundary.points < 3.0)
    ).all(dim=1)
    assert not strictly_inside_either.any()


def test_a_union_draws_a_shared_face_once(generator):
    """[0, 2] x [0, 1] | [0, 1] x [0, 2] share the stretches x = 0, y in [0, 1] and y = 0,
    x in [0, 1] of their faces: the union's boundary there is drawn, and only once."""
    ell = Box([0.0, 0.0], [2.0, 1.0]) | Box([0.0, 0.0], [1.0, 2.0])
    assert ell.boundary_measure() == pytest.approx(
        {"x_min": 2.0, "x_max": 2.0, "y_min": 2.0, "y_max": 2.0}, rel=1e-3
    )
    boundary = ell.sample_boundary(800, generator, dtype=F64)
    x, y = boundary.points[:, 0], boundary.points[:, 1]
    # 800 points over a perimeter of 8: 100 per unit length on every stretch, give or take
    # sqrt(100 / 2) = 7 (half of a face's 200); 40 is over 5 sd.
    shared_bottom = ((y == 0) & (x < 1)).sum().item()
    shared_left = ((x == 0) & (y < 1)).sum().item()
    assert 60 < shared_bottom < 140 and 60 < shared_left < 140
    # Drawn once: the faces x = 0 and y = 0 (2 of the perimeter 8) get their 200 points, not the
    # 250 of a shared stretch drawn twice (up to rounding of shares of estimated measures).
    assert ((x == 0).sum() - 200).abs() < 3 and ((y == 0).sum() - 200).abs() < 3


def test_boxes_side_by_side_have_no_face_between_them(generator):
    pair = Box([0.0, 0.0], [1.0, 1.0]) | Box([1.0, 0.0], [2.0, 1.0])
    boundary = pair.sample_boundary(600, generator, dtype=F64)
    assert not (boundary.points[:, 0] == 1.0).any()
    assert pair.boundary_measure() == pytest.approx(
        {"x_min": 1.0, "y_min": 2.0, "y_max": 2.0, "x_max": 1.0}, rel=1e-3
    )


def test_an_intersection_keeps_the_faces_its_operands_share(generator):
    overlap = Box([0.0, 0.0], [2.0, 1.0]) & Box([0.0, 0.0], [1.0, 2.0])  # the unit square
    assert overlap.boundary_measure() == pytest.approx(
        {"x_min": 1.0, "y_min": 1.0, "y_max": 1.0, "x_max": 1.0}, rel=1e-3
    )
    boundary = overlap.sample_boundary(400, generator, dtype=F64)
    counts = torch.bincount(boundary.part).tolist()
    assert counts == [100, 100, 100, 100]


def test_a_difference_keeps_a_face_the_removed_shape_only_touches(generator):
    square = Box([0.0, 0.0], [1.0, 1.0]) - Box([1.0, 0.0], [2.0, 1.0])
    assert square.boundary_measure() == pytest.approx(
        {"x_min": 1.0, "x_max": 1.0, "y_min": 1.0, "y_max": 1.0}, rel=1e-3
    )
    boundary = square.sample_boundary(400, generator, dtype=F64)
    assert (boundary.points[boundary.on("x_max"), 0] == 1.0).all()
    assert boundary.on("x_max").sum() == 100


def test_a_difference_drops_faces_shared_with_the_removed_shape(generator):
    # The removed half shares the right face and parts of the bottom and top: what is left is
    # [0, 0.5] x [0, 1], whose right face is the removed box's x_min, turned round.
    with pytest.warns(UserWarning, match=r"named \['x_min'\]"):  # its new right side
        half = Box([0.0, 0.0], [1.0, 1.0]) - Box([0.5, 0.0], [1.0, 1.0])
    assert half.boundary_measure() == pytest.approx(
        {"x_min": 2.0, "y_min": 0.5, "y_max": 0.5}, rel=1e-3
    )
    boundary = half.sample_boundary(300, generator, dtype=F64)
    assert (boundary.points[:, 0] <= 0.5).all()
    right = boundary.points[:, 0] == 0.5
    assert right.sum() == 100 and (boundary.normals[right, 0] == 1.0).all()


def test_nested_combinations_keep_every_name(generator):
    plate = Box([0.0, 0.0], [4.0, 2.0]) - Disk([1.0, 1.0], 0.5, name="left")
    plate = plate - Disk([3.0, 1.0], 0.5, name="right")
    notched = plate - Polygon([(1.5, 2.5), (2.5, 2.5), (2.0, 1.5)], edge_names=["cut"] * 3)
    assert notched.part_names == ("x_min", "x_max", "y_min", "y_max", "left", "right", "cut")
    boundary = notched.sample_boundary(1000, generator, dtype=F64)
    for name, center in (("left", 1.0), ("right", 3.0)):
        points = boundary.points[boundary.on(name)]
        radius = (points - torch.tensor([center, 1.0], dtype=F64)).norm(dim=1)
        assert len(points) > 0 and ((radius - 0.5).abs() < 1e-12).all()
    cut = boundary.points[boundary.on("cut")]
    assert len(cut) > 0 and (cut[:, 1] < 2.0).all() and (cut[:, 1] >= 1.5).all()
    # The top face lost the notch's width at y = 2: from x = 1.75 to 2.25.
    assert notched.boundary_measure()["y_max"] == pytest.approx(3.5, rel=1e-3)


@pytest.mark.parametrize("n", [0, 1, 2, 3, 4, 7])
def test_a_few_points_on_a_shape_with_more_parts_than_points(n, generator):
    boundary = PLATE.sample_boundary(n, generator, dtype=F64)
    assert boundary.points.shape == (n, 2)
    assert boundary.normals.shape == (n, 2) and boundary.part.shape == (n,)
    assert (PLATE.level(boundary.points).abs() < 1e-12).all()


def test_a_difference_warns_when_a_cut_out_part_joins_an_outer_one_of_its_name():
    """The notch's faces x = 0 and y = 0 bound the result under the names of the outer box's
    faces x_min and y_max: a condition on x_min would hold on both, so the user is told."""
    with pytest.warns(UserWarning, match=r"named \['x_min', 'y_max'\].*name='notch'") as caught:
        merged = Box([-1.0, -1.0], [1.0, 1.0]) - Box([0.0, -1.0], [1.0, 0.0])
    assert caught[0].filename == __file__  # points at the user's line, not pinn's
    assert merged.boundary_measure()["x_min"] == pytest.approx(3.0)  # 2 outer + 1 notch


def test_a_named_box_keeps_its_faces_apart(recwarn):
    notched = Box([-1.0, -1.0], [1.0, 1.0]) - Box([0.0, -1.0], [1.0, 0.0], name="notch")
    assert not [w for w in recwarn if issubclass(w.category, UserWarning)]
    measures = notched.boundary_measure()
    assert measures == pytest.approx(
        {"x_min": 2.0, "x_max": 1.0, "y_min": 1.0, "y_max": 2.0, "notch_x_min": 1.0,
         "notch_y_max": 1.0}
    )  # fmt: skip
    x = notched.sample_boundary(64, torch.Generator().manual_seed(0), "sobol")
    on_notch = x.part == notched.part_names.index("notch_x_min")
    assert torch.allclose(x.points[on_notch, 0], torch.zeros(())) and on_notch.any()
    assert torch.allclose(x.normals[on_notch], torch.tensor([1.0, 0.0]))  # into the notch


@pytest.mark.parametrize("name", ["", 3])
def test_a_bad_box_name_is_refused(name):
    with pytest.raises(ValueError, match="Box's name must be a non-empty string"):
        Box([0.0], [1.0], name=name)
