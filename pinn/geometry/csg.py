"""Constructive geometry: union, intersection and difference of any two domains, nestable.

    plate = Box([0, 0], [1, 1]) - Disk([0.5, 0.5], 0.2, name="hole")
    annulus = Disk([0, 0], 1.0, name="outer") - Disk([0, 0], 0.5, name="hole")
    channel = Box([0, 0], [4, 1]) - Disk([1, 0.5], 0.1, name="cylinder")

The level function combines the operands' by R-functions (`pinn.geometry.rfunctions`). The
boundary is the operands' pieces, each cut to where it bounds the result: for a | b, a's pieces
outside b and b's outside a; for a & b, each inside the other; for a - b, a's pieces outside b
and b's inside a, turned round (their outward normal points into b). Part names carry over, so
`Neumann(on="hole")` works on a plate with a hole; pieces of both operands with the same name
form one part (a difference warns of it: there it joins a cut-out's rim to the outer boundary;
`Box(..., name="notch")` names a box's faces apart). Volumes are estimated by quasi-Monte
Carlo (fixed seed).

Where a piece lies on the other operand's boundary (faces that coincide: two boxes side by side
or stacked), a small step along its outward normal settles whether it bounds the result: the
first operand's piece is kept there if it does, the second's never, so a shared face is drawn
once and a face between two touching operands not at all.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from functools import cached_property

import torch

from pinn.errors import ConfigError
from pinn.geometry.domain import Domain, Piece
from pinn.geometry.rfunctions import conjunction, disjunction

Tensor = torch.Tensor
# Where the other operand's level is within this of 0 (relative to the combination's size), a
# piece lies on its boundary; a step of _TIE_STEP along the normal decides (both relative).
_TIE_TOLERANCE = 1e-10
_TIE_STEP = 1e-6


class _Combination(Domain):
    """Two domains of the same dimension and coordinate names, combined."""

    symbol = "?"

    def __init__(self, first: Domain, second: Domain):
        for operand in (first, second):
            if not isinstance(operand, Domain):
                raise ConfigError(
                    f"constructive geometry combines domains, got {type(operand).__name__}"
                )
        if first.dim != second.dim:
            raise ConfigError(
                f"cannot combine {first!r} and {second!r}: one is {first.dim}-dimensional, the "
                f"other {second.dim}-dimensional"
            )
        if first.names != second.names:
            raise ConfigError(
                f"cannot combine {first!r} and {second!r}: their coordinates differ "
                f"({list(first.names)} and {list(second.names)}); give both the same names"
            )
        self.first, self.second = first, second
        self.dim, self.names = first.dim, first.names
        self.lower, self.upper = self._bounds()

    def _bounds(self) -> tuple[tuple[float, ...], tuple[float, ...]]:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"({self.first!r} {self.symbol} {self.second!r})"

    @cached_property
    def volume(self) -> float:
        return self.estimate_volume()

    @property
    def _size(self) -> float:
        """The largest width of the bounding box: the scale of the tie tolerance and step."""
        return max(hi - lo for lo, hi in zip(self.lower, self.upper))

    @cached_property
    def seamed(self) -> bool:
        """Whether the domain holds a seam: part of a face of one operand of a union lying on a
        face of the other, the two facing each other (boxes side by side), here or in a nested
        combination. Found on a fixed draw of each piece."""
        operands = (self.first, self.second)
        return any(d.seamed for d in operands if isinstance(d, _Combination)) or self._seam()

    def _seam(self) -> bool:
        return False

    def distance(self, x: Tensor, on: str | Sequence[str] | None = None) -> Tensor:
        if self.seamed:
            raise ConfigError(
                f"distance() of {self!r}: two of the shapes united touch face to face, and on "
                "that seam, inside the domain, the distance function would be zero. Let them "
                "overlap instead (e.g. Box([0, 0], [1, 2]) | Box([0.5, 0], [2, 1]) rather than "
                "a second box starting at x = 1 where the first ends), or use a Polygon"
            )
        return super().distance(x, on)

    def _refuse_if_empty(self, what: str) -> None:
        if any(hi <= lo for lo, hi in zip(self.lower, self.upper)) or self.volume == 0:
            raise ConfigError(f"{what} is empty: {self!r} contains no point")


class Union(_Combination):
    """a | b: the points in either domain."""

    symbol = "|"

    def _bounds(self):
        lower = tuple(map(min, self.first.lower, self.second.lower))
        return lower, tuple(map(max, self.first.upper, self.second.upper))

    def level(self, x: Tensor) -> Tensor:
        return disjunction(self.first.level(x), self.second.level(x))

    def _seam(self) -> bool:
        """Whether a piece of one operand lies on the other's boundary, its outward normal
        pointing into the other: a face between the two, inside the union."""
        size = self._size
        for own, other in ((self.first, self.second), (self.second, self.first)):
            for piece in own.pieces:
                points, normals = piece.draw(1024, torch.Generator().manual_seed(0), "sobol")
                kept = piece.kept(points, normals)
                points, normals = points[kept], normals[kept]
                on_other = other.level(points).abs() <= _TIE_TOLERANCE * size
                facing = other.level(points + _TIE_STEP * size * normals) > 0
                if (on_other & facing).any():
                    return True
        return False

    @cached_property
    def pieces(self) -> tuple[Piece, ...]:
        # On a face of the second: kept if a step outward leaves it (the faces point one way).
        outside_second = _negated(self.second.level)
        outside_first = _negated(self.first.level)
        return tuple(
            [_cut(p, outside_second, self._size, outward=True) for p in self.first.pieces]
            + [_cut(p, outside_first, self._size) for p in self.second.pieces]
        )


class Intersection(_Combination):
    """a & b: the points in both domains. An empty intersection is refused."""

    symbol = "&"

    def __init__(self, first: Domain, second: Domain):
        super().__init__(first, second)
        self._refuse_if_empty("the intersection")

    def _bounds(self):
        lower = tuple(map(max, self.first.lower, self.second.lower))
        return lower, tuple(map(min, self.first.upper, self.second.upper))

    def level(self, x: Tensor) -> Tensor:
        return conjunction(self.first.level(x), self.second.level(x))

    @cached_property
    def pieces(self) -> tuple[Piece, ...]:
        # On a face of the second: kept if a step inward stays in it (the faces point one way).
        return tuple(
            [_cut(p, self.second.level, self._size, outward=False) for p in self.first.pieces]
            + [_cut(p, self.first.level, self._size) for p in self.second.pieces]
        )


class Difference(_Combination):
    """a - b: the points of a not in b. A b that covers a is refused."""

    symbol = "-"

    def __init__(self, first: Domain, second: Domain):
        super().__init__(first, second)
        self._refuse_if_empty("the difference")
        self._warn_of_shared_names()

    def _warn_of_shared_names(self) -> None:
        """A part of b (a hole's rim) named like one of a's would silently join it."""
        count = len(self.first.pieces)  # the first operand's pieces come first
        kept = [p.name if m > 0 else None for p, m in zip(self.pieces, self._piece_measures)]
        shared = sorted((set(kept[:count]) & set(kept[count:])) - {None})
        if shared:
            warnings.warn(
                f"{self!r}: both operands have boundary parts named {shared}; in the "
                "difference each forms one part, the outer boundary's and the cut-out's rim "
                f"together (a condition on {shared[0]!r} holds on both). To tell them apart, "
                "name the cut-out's: Box(..., name='notch') (faces notch_x_min, ...), "
                "Disk(..., name='hole'), Polygon(..., edge_names=[...])",
                stacklevel=4,  # the user's line: warn, this, __init__, __sub__
            )

    def _bounds(self):
        return self.first.lower, self.first.upper

    def level(self, x: Tensor) -> Tensor:
        return conjunction(self.first.level(x), -self.second.level(x))

    @cached_property
    def pieces(self) -> tuple[Piece, ...]:
        # On a face of the second: kept if a step inward stays out of it (b touches a outside).
        outside_second = _negated(self.second.level)
        return tuple(
            [_cut(p, outside_second, self._size, outward=False) for p in self.first.pieces]
            + [_cut(_turned(p), self.first.level, self._size) for p in self.second.pieces]
        )


Level = Callable[[Tensor], Tensor]


def _negated(level: Level) -> Level:
    return lambda x: -level(x)


def _cut(piece: Piece, keep: Level, size: float, outward: bool | None = None) -> Piece:
    """The part of `piece` where `keep` > 0 (added to its trim by an R-conjunction).

    Where `keep` is 0 to within rounding, the piece lies on the other operand's boundary: a
    point there is kept if `keep` > 0 a small step along (`outward`) or against its outward
    normal, never if `outward` is None. `size` scales the tolerance and the step.
    """
    trim = piece.trim

    def cut_trim(x: Tensor) -> Tensor:
        return keep(x) if trim is None else conjunction(trim(x), keep(x))

    def kept(points: Tensor, normals: Tensor) -> Tensor:
        here = keep(points)
        beyond = here > 0
        tie = here.abs() <= _TIE_TOLERANCE * size
        if outward is None:
            beyond[tie] = False
        elif tie.any():
            step = (_TIE_STEP if outward else -_TIE_STEP) * size
            beyond[tie] = keep(points[tie] + step * normals[tie]) > 0
        return piece.kept(points, normals) & beyond

    return Piece(
        piece.name, piece.measure, piece.draw, piece.carrier, cut_trim, whole=False, keep=kept
    )


def _turned(piece: Piece) -> Piece:
    """The piece seen from the other side: normals and carrier negated (a hole's boundary)."""

    def draw(n: int, generator: torch.Generator, method: str) -> tuple[Tensor, Tensor]:
        points, normals = piece.draw(n, generator, method)
        return points, -normals

    carrier = piece.carrier
    return Piece(
        piece.name,
        piece.measure,
        draw,
        lambda x: -carrier(x),
        piece.trim,
        whole=piece.whole,
        keep=lambda points, normals: piece.kept(points, -normals),
    )
