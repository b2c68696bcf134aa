"""A catalogue of shapes for the geometry tests, each with its geometry worked out by hand.

Every `Case` builds a domain with pinn.geometry and states, independently of the library:
its exact volume, an exact membership test, its boundary parts as sets of segments, spheres and
flat faces (with their exact measures), and the corners where parts meet or the boundary has a
kink (for checks that hold only where the boundary is smooth). The tests compare the library's
answers against these.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache

import torch

from pinn.geometry import Ball, Box, Disk, Domain, Polygon, SpaceTime

Tensor = torch.Tensor
F64 = torch.float64
METHODS = ("uniform", "sobol", "lhs")


def tensor(values) -> Tensor:
    return torch.as_tensor(values, dtype=F64)


# ---- exact geometry, written without pinn ---------------------------------------------------


@dataclass(frozen=True)
class Segment:
    """The segment from a to b in the plane."""

    a: tuple[float, float]
    b: tuple[float, float]

    @property
    def length(self) -> float:
        return math.dist(self.a, self.b)

    def distance(self, points: Tensor) -> Tensor:
        """(N,) Euclidean distance of (N, 2) points to the segment."""
        a, b = tensor(self.a), tensor(self.b)
        along = ((points - a) @ (b - a)) / (b - a).square().sum()
        nearest = a + along.clamp(0, 1)[:, None] * (b - a)
        return (points - nearest).norm(dim=1)

    def off_normal(self, points: Tensor, normals: Tensor) -> Tensor:
        """(N,) how far the (N, 2) normals are from perpendicular to the segment: |n · t|."""
        direction = tensor(self.b) - tensor(self.a)
        return (normals @ (direction / direction.norm())).abs()


@dataclass(frozen=True)
class Sphere:
    """The sphere |x - center| = radius in the first len(center) coordinates (a circle in 2-D;
    with a time coordinate after them, the side of a cylinder)."""

    center: tuple[float, ...]
    radius: float

    def _offset(self, points: Tensor) -> Tensor:
        return points[:, : len(self.center)] - tensor(self.center)

    def distance(self, points: Tensor) -> Tensor:
        return (self._offset(points).norm(dim=1) - self.radius).abs()

    def off_normal(self, points: Tensor, normals: Tensor) -> Tensor:
        """(N,) the part of each normal not along the radius (time component included)."""
        radial = torch.zeros_like(points)
        offset = self._offset(points)
        radial[:, : len(self.center)] = offset / offset.norm(dim=1, keepdim=True)
        along = (normals * radial).sum(dim=1, keepdim=True)
        return (normals - along * radial).norm(dim=1)


@dataclass(frozen=True)
class Flat:
    """The hyperplane x[axis] = value (a time face of a space-time domain)."""

    axis: int
    value: float

    def distance(self, points: Tensor) -> Tensor:
        return (points[:, self.axis] - self.value).abs()

    def off_normal(self, points: Tensor, normals: Tensor) -> Tensor:
        other = torch.ones(points.shape[1], dtype=torch.bool)
        other[self.axis] = False
        return normals[:, other].norm(dim=1)


Primitive = Segment | Sphere | Flat


def distance_to(primitives: list[Primitive], points: Tensor) -> Tensor:
    """(N,) distance of each point to the nearest of the primitives."""
    return torch.stack([p.distance(points) for p in primitives]).amin(dim=0)


def off_normal(primitives: list[Primitive], points: Tensor, normals: Tensor) -> Tensor:
    """(N,) the normal's deviation from perpendicular to the primitive each point lies on."""
    nearest = torch.stack([p.distance(points) for p in primitives]).argmin(dim=0)
    deviation = torch.stack([p.off_normal(points, normals) for p in primitives])
    return deviation.gather(0, nearest[None]).squeeze(0)


def polygon_edges(vertices: list[tuple[float, float]]) -> list[Segment]:
    return [Segment(a, b) for a, b in zip(vertices, vertices[1:] + vertices[:1])]


def in_open_box(points: Tensor, lower, upper) -> Tensor:
    return ((points > tensor(lower)) & (points < tensor(upper))).all(dim=1)


def in_ball(points: Tensor, center, radius: float) -> Tensor:
    return (points[:, : len(center)] - tensor(center)).norm(dim=1) < radius


# ---- the cases ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """A shape and what is known about it without pinn.

    Attributes:
        id: the test id.
        make: builds the domain.
        volume: its exact volume (area in 2-D).
        inside: (N, d) -> (N,) bool, exact membership of the open domain.
        parts: {part name: the primitives that make up that part of the boundary}.
        measures: {part name: exact (d-1)-dimensional measure}.
        corners: (K, d) points where parts meet or the boundary has a kink (may be empty).
        edges: (N, d) -> (N,) distance to where parts meet, for shapes whose parts meet along
            curves rather than at points (space-time); None: use `corners`.
        exact_volume: whether `domain.volume` is a formula (else a quasi-Monte Carlo estimate).
        coincident: whether faces of its operands coincide (the distance's slope next to them
            is not 1).
    """

    id: str
    make: Callable[[], Domain]
    volume: float
    inside: Callable[[Tensor], Tensor]
    parts: dict[str, list[Primitive]]
    measures: dict[str, float]
    corners: list[tuple[float, ...]] = field(default_factory=list)
    edges: Callable[[Tensor], Tensor] | None = None
    exact_volume: bool = True
    coincident: bool = False

    @property
    def domain(self) -> Domain:
        return _built(self.id)

    def distance_to_corners(self, points: Tensor) -> Tensor:
        """(N,) distance of each point to the nearest corner (inf without corners)."""
        if self.edges is not None:
            return self.edges(points)
        if not self.corners:
            return torch.full((len(points),), math.inf, dtype=F64)
        return torch.cdist(points, tensor(self.corners)).amin(dim=1)

    def __repr__(self) -> str:
        return self.id


L_VERTICES = [(0.0, 0.0), (2.0, 0.0), (2.0, 1.0), (1.0, 1.0), (1.0, 2.0), (0.0, 2.0)]
# Clockwise on purpose: the orientation must not flip the normals.
TRIANGLE_VERTICES = [(0.0, 0.0), (0.0, 1.0), (2.0, 0.0)]
L_CORNERS = L_VERTICES


def _l_shape_inside(points: Tensor) -> Tensor:
    x, y = points[:, 0], points[:, 1]
    return in_open_box(points, (0, 0), (2, 2)) & ~((x >= 1) & (y >= 1))


def _square_with_hole() -> Domain:
    return Box([0.0, 0.0], [1.0, 1.0]) - Disk([0.5, 0.5], 0.25, name="hole")


def _annulus() -> Domain:
    return Disk([0.0, 0.0], 1.0, name="outer") - Disk([0.0, 0.0], 0.5, name="hole")


def _cylinder_edges(points: Tensor) -> Tensor:
    """Distance to the two circles where the side of Disk([0.5, 0.5], 0.5) x [0, 2] meets the
    time faces."""
    radial = ((points[:, :2] - 0.5).norm(dim=1) - 0.5).abs()
    to_face = torch.minimum(points[:, 2].abs(), (points[:, 2] - 2.0).abs())
    return torch.hypot(radial, to_face)


CASES = [
    Case(
        "disk",
        lambda: Disk([0.5, -0.25], 0.75),
        math.pi * 0.75**2,
        lambda p: in_ball(p, (0.5, -0.25), 0.75),
        {"circle": [Sphere((0.5, -0.25), 0.75)]},
        {"circle": 2 * math.pi * 0.75},
    ),
    Case(
        "ball3",
        lambda: Ball([0.1, 0.2, -0.3], 0.8),
        4 / 3 * math.pi * 0.8**3,
        lambda p: in_ball(p, (0.1, 0.2, -0.3), 0.8),
        {"sphere": [Sphere((0.1, 0.2, -0.3), 0.8)]},
        {"sphere": 4 * math.pi * 0.8**2},
    ),
    Case(
        "ball5",
        lambda: Ball([0.0, 0.5, 0.0, -0.5, 1.0], 1.5),
        8 * math.pi**2 / 15 * 1.5**5,
        lambda p: in_ball(p, (0.0, 0.5, 0.0, -0.5, 1.0), 1.5),
        {"sphere": [Sphere((0.0, 0.5, 0.0, -0.5, 1.0), 1.5)]},
        {"sphere": 8 * math.pi**2 / 3 * 1.5**4},
    ),
    Case(
        "l_polygon",
        lambda: Polygon(L_VERTICES),
        3.0,
        _l_shape_inside,
        {f"edge{i}": [edge] for i, edge in enumerate(polygon_edges(L_VERTICES))},
        {f"edge{i}": edge.length for i, edge in enumerate(polygon_edges(L_VERTICES))},
        corners=L_CORNERS,
    ),
    Case(
        "triangle",
        lambda: Polygon(TRIANGLE_VERTICES),
        1.0,
        lambda p: (p[:, 0] > 0) & (p[:, 1] > 0) & (p[:, 0] / 2 + p[:, 1] < 1),
        {f"edge{i}": [edge] for i, edge in enumerate(polygon_edges(TRIANGLE_VERTICES))},
        {f"edge{i}": edge.length for i, edge in enumerate(polygon_edges(TRIANGLE_VERTICES))},
        corners=TRIANGLE_VERTICES,
    ),
    Case(
        "square_with_hole",
        _square_with_hole,
        1.0 - math.pi * 0.25**2,
        lambda p: in_open_box(p, (0, 0), (1, 1)) & ~in_ball(p, (0.5, 0.5), 0.25),
        {
            "x_min": [Segment((0, 0), (0, 1))],
            "x_max": [Segment((1, 0), (1, 1))],
            "y_min": [Segment((0, 0), (1, 0))],
            "y_max": [Segment((0, 1), (1, 1))],
            "hole": [Sphere((0.5, 0.5), 0.25)],
        },
        {"x_min": 1.0, "x_max": 1.0, "y_min": 1.0, "y_max": 1.0, "hole": 2 * math.pi * 0.25},
        corners=[(0, 0), (1, 0), (1, 1), (0, 1)],
        exact_volume=False,
    ),
    Case(
        "annulus",
        _annulus,
        math.pi * (1.0 - 0.5**2),
        lambda p: in_ball(p, (0, 0), 1.0) & ~in_ball(p, (0, 0), 0.5),
        {"outer": [Sphere((0, 0), 1.0)], "hole": [Sphere((0, 0), 0.5)]},
        {"outer": 2 * math.pi, "hole": math.pi},
        exact_volume=False,
    ),
    Case(
        # [0, 2]² | [1, 3]²: the faces cross at (2, 1) and (1, 2).
        "union_of_boxes",
        lambda: Box([0.0, 0.0], [2.0, 2.0]) | Box([1.0, 1.0], [3.0, 3.0]),
        7.0,
        lambda p: in_open_box(p, (0, 0), (2, 2)) | in_open_box(p, (1, 1), (3, 3)),
        {
            "x_min": [Segment((0, 0), (0, 2)), Segment((1, 2), (1, 3))],
            "x_max": [Segment((2, 0), (2, 1)), Segment((3, 1), (3, 3))],
            "y_min": [Segment((0, 0), (2, 0)), Segment((2, 1), (3, 1))],
            "y_max": [Segment((0, 2), (1, 2)), Segment((1, 3), (3, 3))],
        },
        {"x_min": 3.0, "x_max": 3.0, "y_min": 3.0, "y_max": 3.0},
        corners=[(0, 0), (2, 0), (2, 1), (3, 1), (3, 3), (1, 3), (1, 2), (0, 2)],
        exact_volume=False,
    ),
    Case(
        "intersection_of_boxes",
        lambda: Box([0.0, 0.0], [2.0, 2.0]) & Box([1.0, 1.0], [3.0, 3.0]),
        1.0,
        lambda p: in_open_box(p, (1, 1), (2, 2)),
        {  # in the order of their first piece: the first box's faces, then the second's
            "x_max": [Segment((2, 1), (2, 2))],
            "y_max": [Segment((1, 2), (2, 2))],
            "x_min": [Segment((1, 1), (1, 2))],
            "y_min": [Segment((1, 1), (2, 1))],
        },
        {"x_max": 1.0, "y_max": 1.0, "x_min": 1.0, "y_min": 1.0},
        corners=[(1, 1), (2, 1), (2, 2), (1, 2)],
        exact_volume=False,
    ),
    Case(
        # Disk & Box: a quarter disk; the box's far faces lie outside the disk.
        "quarter_disk",
        lambda: Disk([0.0, 0.0], 1.0) & Box([0.0, 0.0], [2.0, 2.0]),
        math.pi / 4,
        lambda p: in_ball(p, (0, 0), 1.0) & (p[:, 0] > 0) & (p[:, 1] > 0),
        {
            "circle": [Sphere((0, 0), 1.0)],
            "x_min": [Segment((0, 0), (0, 1))],
            "y_min": [Segment((0, 0), (1, 0))],
        },
        {"circle": math.pi / 2, "x_min": 1.0, "y_min": 1.0},
        corners=[(0, 0), (1, 0), (0, 1)],
        exact_volume=False,
    ),
    Case(
        # [0, 2]² - [1, 3]²: an L; the inner faces are the second box's, under its name.
        "box_minus_box",
        lambda: Box([0.0, 0.0], [2.0, 2.0]) - Box([1.0, 1.0], [3.0, 3.0], name="cut"),
        3.0,
        _l_shape_inside,
        {
            "x_min": [Segment((0, 0), (0, 2))],
            "x_max": [Segment((2, 0), (2, 1))],
            "y_min": [Segment((0, 0), (2, 0))],
            "y_max": [Segment((0, 2), (1, 2))],
            "cut_x_min": [Segment((1, 1), (1, 2))],
            "cut_y_min": [Segment((1, 1), (2, 1))],
        },
        {
            "x_min": 2.0,
            "x_max": 1.0,
            "y_min": 2.0,
            "y_max": 1.0,
            "cut_x_min": 1.0,
            "cut_y_min": 1.0,
        },
        corners=L_CORNERS,
        exact_volume=False,
    ),
    Case(
        # [0, 2] x [0, 1] | [0, 1] x [0, 2]: an L whose operands share the faces x = 0 and y = 0
        # (and touch nowhere else), so coincident pieces must be drawn once.
        "union_with_shared_faces",
        lambda: Box([0.0, 0.0], [2.0, 1.0]) | Box([0.0, 0.0], [1.0, 2.0]),
        3.0,
        _l_shape_inside,
        {
            "x_min": [Segment((0, 0), (0, 2))],
            "x_max": [Segment((2, 0), (2, 1)), Segment((1, 1), (1, 2))],
            "y_min": [Segment((0, 0), (2, 0))],
            "y_max": [Segment((1, 1), (2, 1)), Segment((0, 2), (1, 2))],
        },
        {"x_min": 2.0, "x_max": 2.0, "y_min": 2.0, "y_max": 2.0},
        # The L's corners and where one operand's shared face ends (the distance has a kink).
        corners=[*L_CORNERS, (0, 1), (1, 0)],
        exact_volume=False,
        coincident=True,
    ),
    Case(
        "spacetime_disk",
        lambda: SpaceTime(Disk([0.5, 0.5], 0.5), 0.0, 2.0),
        math.pi * 0.25 * 2.0,
        lambda p: in_ball(p, (0.5, 0.5), 0.5) & (p[:, 2] > 0) & (p[:, 2] < 2),
        {"circle": [Sphere((0.5, 0.5), 0.5)], "t_min": [Flat(2, 0.0)], "t_max": [Flat(2, 2.0)]},
        {"circle": 2 * math.pi * 0.5 * 2.0, "t_min": math.pi * 0.25, "t_max": math.pi * 0.25},
        edges=_cylinder_edges,
    ),
]

CASE_IDS = [case.id for case in CASES]


@cache
def _built(case_id: str) -> Domain:
    """Each domain built once per session (building CSG estimates its volume and measures)."""
    return next(case for case in CASES if case.id == case_id).make()


def case(case_id: str) -> Case:
    return next(c for c in CASES if c.id == case_id)
