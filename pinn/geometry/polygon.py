"""Simple polygons in the plane: the L-shape, a trapezoid, any region bounded by straight edges."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property

import torch

from pinn.errors import ConfigError
from pinn.geometry.domain import Domain, Piece, coordinate_names, finite_point
from pinn.geometry.rfunctions import equivalence
from pinn.geometry.sampling import unit_cube

Tensor = torch.Tensor


class Polygon(Domain):
    """The region inside a simple polygon (its edges meet only at shared vertices).

    Edge i runs from vertex i to vertex i + 1 (the last back to the first); each is a boundary
    part, named "edge<i>" unless `edge_names` says otherwise (several edges may share a name,
    which makes them one part). Vertices may go round either way. Interior points are drawn by
    rejection from the bounding box; boundary points along the edges, by length.

    Args:
        vertices: n >= 3 (x, y) pairs.
        names: the two coordinate names (default x, y).
        edge_names: n part names, one per edge.
    """

    def __init__(
        self,
        vertices: Sequence[Sequence[float]],
        names: Sequence[str] | None = None,
        edge_names: Sequence[str] | None = None,
    ):
        corners = [finite_point(v, f"Polygon vertex {i}") for i, v in enumerate(vertices)]
        if len(corners) < 3 or any(len(c) != 2 for c in corners):
            raise ConfigError(
                f"Polygon needs at least 3 vertices, each an (x, y) pair, got {list(vertices)}"
            )
        self.vertices = torch.tensor(corners, dtype=torch.float64)
        self.dim = 2
        self.names = coordinate_names(2, names, "Polygon")
        n = len(corners)
        self.edge_names = (
            tuple(edge_names) if edge_names is not None else tuple(f"edge{i}" for i in range(n))
        )
        if len(self.edge_names) != n or not all(isinstance(e, str) and e for e in self.edge_names):
            raise ConfigError(
                f"Polygon with {n} edges needs {n} edge names, got {list(self.edge_names)}"
            )
        _check_simple(corners)
        area = _signed_area(corners)
        # +1: counter-clockwise, the interior on the left of each edge.
        self.orientation = 1.0 if area > 0 else -1.0
        self._area = abs(area)
        self.lower = tuple(self.vertices.min(dim=0).values.tolist())
        self.upper = tuple(self.vertices.max(dim=0).values.tolist())

    def __repr__(self) -> str:
        return f"Polygon(vertices={self.vertices.tolist()}, edge_names={list(self.edge_names)})"

    @cached_property
    def volume(self) -> float:
        return self._area

    def _edges(self, like: Tensor) -> tuple[Tensor, Tensor]:
        """(n, 2) start and end vertices of the edges, in `like`'s dtype and device."""
        start = self.vertices.to(dtype=like.dtype, device=like.device)
        return start, torch.roll(start, -1, dims=0)

    def level(self, x: Tensor) -> Tensor:
        """The distance-like function of all edges, negative outside (by the crossing rule)."""
        inside = self._crossings(x)
        magnitude = equivalence([piece.distance(x) for piece in self.pieces])
        return torch.where(inside, magnitude, -magnitude)

    def _crossings(self, x: Tensor) -> Tensor:
        """(N,) bool: an odd number of edges crosses the ray from x towards +x (even-odd rule)."""
        start, end = self._edges(x)
        px, py = x[:, :1], x[:, 1:]
        ax, ay, bx, by = start[:, 0], start[:, 1], end[:, 0], end[:, 1]
        straddles = (ay > py) != (by > py)  # (N, n)
        height = torch.where(straddles, by - ay, torch.ones_like(by - ay))
        crossing_x = ax + (py - ay) * (bx - ax) / height
        return ((straddles & (px < crossing_x)).sum(dim=1) % 2) == 1

    @cached_property
    def pieces(self) -> tuple[Piece, ...]:
        return tuple(self._edge_piece(i) for i in range(len(self.vertices)))

    def _edge_piece(self, i: int) -> Piece:
        a = self.vertices[i]
        b = self.vertices[(i + 1) % len(self.vertices)]
        length = float((b - a).norm())
        tangent = (b - a) / length
        # The interior lies on the left of a counter-clockwise edge: outward is to its right.
        outward = self.orientation * torch.stack([tangent[1], -tangent[0]])

        def draw(n: int, generator: torch.Generator, method: str) -> tuple[Tensor, Tensor]:
            along = unit_cube(n, 1, generator, method)
            return a + along * (b - a), outward.expand(n, 2).clone()

        def carrier(x: Tensor) -> Tensor:  # signed distance to the edge's line, > 0 inside
            normal = -outward.to(dtype=x.dtype, device=x.device)
            return ((x - a.to(dtype=x.dtype, device=x.device)) * normal).sum(dim=1)

        def trim(x: Tensor) -> Tensor:  # >= 0 in the disk whose diameter is the edge
            middle = ((a + b) / 2).to(dtype=x.dtype, device=x.device)
            return ((length / 2) ** 2 - (x - middle).square().sum(dim=1)) / length

        return Piece(self.edge_names[i], length, draw, carrier, trim)


def _signed_area(corners: list[tuple[float, ...]]) -> float:
    """The shoelace formula: > 0 for counter-clockwise vertices."""
    pairs = zip(corners, corners[1:] + corners[:1])
    return sum(ax * by - bx * ay for (ax, ay), (bx, by) in pairs) / 2


def _check_simple(corners: list[tuple[float, ...]]) -> None:
    """Refuse repeated vertices, edges that cross or touch, and a polygon without area."""
    n = len(corners)
    edges = [(corners[i], corners[(i + 1) % n]) for i in range(n)]
    for i, (a, b) in enumerate(edges):
        if a == b:
            raise ConfigError(
                f"Polygon is degenerate: vertices {i} and {(i + 1) % n} are the same point {a}"
            )
    for i in range(n):
        for j in range(i + 1, n):
            adjacent = j == i + 1 or (i == 0 and j == n - 1)
            if adjacent:
                shared = edges[i][1] if j == i + 1 else edges[i][0]
                if _fold_back(edges[i], edges[j], shared):
                    raise ConfigError(
                        f"Polygon is degenerate: edges {i} and {j} double back on each other"
                    )
            elif _segments_meet(*edges[i], *edges[j]):
                raise ConfigError(
                    f"Polygon is self-intersecting: edge {i} {edges[i]} meets edge {j} "
                    f"{edges[j]}; give the vertices in order around a simple polygon"
                )
    if abs(_signed_area(corners)) == 0:
        raise ConfigError(f"Polygon is degenerate: its vertices enclose no area ({corners})")


def _cross(o, a, b) -> float:
    return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])


def _fold_back(first, second, shared) -> bool:
    """Whether two edges meeting at `shared` run along the same line in the same direction
    away from it (overlapping, not just meeting)."""
    far_first = first[0] if first[1] == shared else first[1]
    far_second = second[0] if second[1] == shared else second[1]
    along = (far_first[0] - shared[0]) * (far_second[0] - shared[0]) + (
        far_first[1] - shared[1]
    ) * (far_second[1] - shared[1])
    return _cross(shared, far_first, far_second) == 0 and along > 0


def _segments_meet(a, b, c, d) -> bool:
    """Whether the closed segments ab and cd have a point in common."""
    d1, d2 = _cross(c, d, a), _cross(c, d, b)
    d3, d4 = _cross(a, b, c), _cross(a, b, d)
    if ((d1 > 0 and d2 < 0) or (d1 < 0 and d2 > 0)) and (
        (d3 > 0 and d4 < 0) or (d3 < 0 and d4 > 0)
    ):
        return True

    def on_segment(p, q, r) -> bool:  # r on segment pq, given collinear
        return min(p[0], q[0]) <= r[0] <= max(p[0], q[0]) and min(p[1], q[1]) <= r[1] <= max(
            p[1], q[1]
        )

    return (
        (d1 == 0 and on_segment(c, d, a))
        or (d2 == 0 and on_segment(c, d, b))
        or (d3 == 0 and on_segment(a, b, c))
        or (d4 == 0 and on_segment(a, b, d))
    )
