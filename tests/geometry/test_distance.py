"""`domain.distance`: zero on the boundary (or on named parts), positive inside, growing like the
distance near the boundary, and differentiable everywhere in float64 without NaN."""

from __future__ import annotations

import pytest
import torch
from shape_cases import CASES, case

from pinn.errors import ConfigError
from pinn.geometry import Box, Disk, Polygon

F64 = torch.float64
# The distance of a boundary point is a product of carriers that vanish to rounding (~1e-16).
ZERO = 1e-12
# "Where parts meet": positivity on the other parts is checked this far from corners.
AWAY_FROM_CORNERS = 0.05


def draw(shape, generator, n=300):
    interior = shape.domain.sample_interior(n, generator, dtype=F64)
    boundary = shape.domain.sample_boundary(n, generator, dtype=F64)
    return interior, boundary


@pytest.mark.parametrize("shape", CASES, ids=str)
def test_zero_on_the_boundary_and_positive_inside(shape, generator):
    interior, boundary = draw(shape, generator)
    assert (shape.domain.distance(boundary.points).abs() <= ZERO).all()
    assert (shape.domain.distance(interior) > 0).all()


@pytest.mark.parametrize("shape", CASES, ids=str)
def test_zero_on_the_named_part_only(shape, generator):
    interior, boundary = draw(shape, generator)
    away = shape.distance_to_corners(boundary.points) > AWAY_FROM_CORNERS
    for name in boundary.part_names:
        distance = shape.domain.distance(boundary.points, on=name)
        on_part = boundary.on(name)
        assert (distance[on_part].abs() <= ZERO).all(), name
        assert (distance[~on_part & away] > 0).all(), name
        assert (shape.domain.distance(interior, on=name) > 0).all(), name


@pytest.mark.parametrize("shape", [c for c in CASES if not c.coincident], ids=str)
def test_grows_like_the_distance_next_to_the_boundary(shape, generator):
    _, boundary = draw(shape, generator)
    away = shape.distance_to_corners(boundary.points) > AWAY_FROM_CORNERS
    depth = 1e-4
    inside = boundary.points[away] - depth * boundary.normals[away]
    ratio = shape.domain.distance(inside) / depth
    # Other pieces lower it by their share 1/(1/δ + Σ 1/φ_j): δ / φ_j < 1e-4 / 0.05 each.
    assert ((ratio > 0.99) & (ratio <= 1.0 + 1e-9)).all()


def test_shared_faces_change_the_slope_but_keep_the_zero(generator):
    """Where two operands' faces coincide both pieces vanish on the face and their trims vanish
    with them, so the slope next to it is not 1 (a limitation of the R-function trims); the
    distance is still zero on the face and positive just inside."""
    shape = case("union_with_shared_faces")
    inside = torch.tensor([[0.5, 1e-4], [1e-4, 0.5], [1.5, 1e-4]], dtype=F64)
    distance = shape.domain.distance(inside) / 1e-4
    assert (distance > 0.5).all() and (distance < 1.5).all()


@pytest.mark.parametrize("shape", CASES, ids=str)
def test_derivatives_are_finite_inside_and_on_the_boundary(shape, generator):
    interior, boundary = draw(shape, generator, n=200)
    points = torch.cat([interior, boundary.points]).requires_grad_(True)
    (gradient,) = torch.autograd.grad(shape.domain.distance(points).sum(), points)
    assert torch.isfinite(gradient).all()
    # Forward mode, as a Taylor-mode or jvp-based residual engine would use it.
    direction = torch.randn(points.shape, generator=generator, dtype=F64)
    value, tangent = torch.func.jvp(shape.domain.distance, (points.detach(),), (direction,))
    assert torch.isfinite(value).all() and torch.isfinite(tangent).all()
    # The tangent is the gradient along the direction (both modes agree).
    assert torch.allclose(tangent, (gradient * direction).sum(dim=1), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize(
    ("domain", "corners"),
    [
        (Box([0.0, 0.0], [1.0, 2.0]), [[0.0, 0.0], [1.0, 2.0], [0.0, 2.0]]),
        (Polygon([(0, 0), (2, 0), (2, 1), (1, 1), (1, 2), (0, 2)]), [[2.0, 0.0], [1.0, 1.0]]),
        (case("square_with_hole").make(), [[0.0, 0.0], [1.0, 1.0]]),
        (case("box_minus_box").make(), [[1.0, 1.0], [2.0, 1.0], [0.0, 2.0]]),
    ],
    ids=["box", "polygon", "square_with_hole", "box_minus_box"],
)
def test_corners_give_zero_and_finite_derivatives(domain, corners):
    """At a corner two pieces' distances vanish together: still 0, and no NaN in a gradient."""
    points = torch.tensor(corners, dtype=F64, requires_grad=True)
    distance = domain.distance(points)
    assert torch.equal(distance.detach(), torch.zeros(len(corners), dtype=F64))
    (gradient,) = torch.autograd.grad(distance.sum(), points)
    assert torch.isfinite(gradient).all()
    _, tangent = torch.func.jvp(domain.distance, (points.detach(),), (torch.ones_like(points),))
    assert torch.isfinite(tangent).all()
    # A vertex lies on the closed domain.
    assert domain.contains(points.detach(), closed=True).all()


@pytest.mark.parametrize("on", ["top", ["x_min", "hull"], []])
def test_unknown_parts_are_refused_naming_the_parts_there_are(on):
    plate = case("square_with_hole").domain
    with pytest.raises(ConfigError) as info:
        plate.distance(torch.zeros(1, 2, dtype=F64), on=on)
    message = str(info.value)
    for name in ("x_min", "x_max", "y_min", "y_max", "hole"):
        assert name in message
    for unknown in [on] if isinstance(on, str) else on:
        if unknown != "x_min":
            assert unknown in message


def test_a_seam_inside_a_union_is_refused_and_an_overlap_or_a_shared_edge_is_not():
    """Boxes side by side meet face to face inside their union, where a distance to the
    boundary would be 0: refused. Overlapping boxes, and faces that both lie on the boundary
    (the y = 0 faces below), are fine."""
    seamed = Box([0.0, 0.0], [1.0, 2.0]) | Box([1.0, 0.0], [2.0, 1.0])
    for domain in (seamed, seamed - Disk([0.5, 1.5], 0.2, name="hole")):
        assert domain.seamed
        with pytest.raises(ConfigError, match="touch face to face"):
            domain.distance(torch.tensor([[0.5, 0.5]], dtype=torch.float64))
    overlapping = Box([0.0, 0.0], [1.0, 2.0]) | Box([0.5, 0.0], [2.0, 1.0])
    assert not overlapping.seamed
    seam = torch.tensor([[1.0, 0.25], [1.0, 0.5], [1.0, 0.75]], dtype=torch.float64)
    assert (overlapping.distance(seam) > 0.05).all()  # (1, y) is inside, away from the boundary
    on_edge = torch.tensor([[0.75, 0.0], [1.5, 0.0]], dtype=torch.float64)
    assert overlapping.distance(on_edge).abs().max() < 1e-12
