"""Constructive geometry: union, intersection and difference of any two domains, nestable.

    plate = Box([0, 0], [1, 1]) - Disk([0.5, 0.5], 0.2, name="hole")
    annulus = Disk([0, 0], 1.0, name="outer") - Disk([0, 0], 0.5, name="hole")
    channel = Box([0, 0], [4, 1]) - Disk([1, 0.5], 0.1, name="cylinder")

The level function combines the operands' by R-functions (`pinn.geometry.rfunctions`). The
boundary is the operands' pieces, each cut to where it bounds the result: for a | b, a's pieces
outside b and b's outside a; for a & b, each inside the other; for a - b, a's pieces outside b
and b's inside a, turned round (their outward normal points into b). Part names carry over, so
`Neumann(on="hole")` works on a plate with a hole; pieces of both operands with the same name
form one part. Volumes are estimated by quasi-Monte Carlo (fixed seed).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property

import torch

from pinn.errors import ConfigError
from pinn.geometry.domain import Domain, Piece
from pinn.geometry.rfunctions import conjunction, disjunction

Tensor = torch.Tensor


class _Combination(Domain):
    """Two domains of the same dimension and coordinate names, combined."""

    symbol = "?"

    def __init__(self, first: Domain, second: Domain):
        for operand in (first, second):
            if not isinstance(operand, Domain):
                raise ConfigError(
                    f"constructive geometry combines domains, got {type(operand).__name__}"
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

    @cached_property
    def pieces(self) -> tuple[Piece, ...]:
        outside_second = _negated(self.second.level)
        outside_first = _negated(self.first.level)
        return tuple(
            [_cut(p, outside_second) for p in self.first.pieces]
            + [_cut(p, outside_first) for p in self.second.pieces]
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
        return tuple(
            [_cut(p, self.second.level) for p in self.first.pieces]
            + [_cut(p, self.first.level) for p in self.second.pieces]
        )


class Difference(_Combination):
    """a - b: the points of a not in b. A b that covers a is refused."""

    symbol = "-"

    def __init__(self, first: Domain, second: Domain):
        super().__init__(first, second)
        self._refuse_if_empty("the difference")

    def _bounds(self):
        return self.first.lower, self.first.upper

    def level(self, x: Tensor) -> Tensor:
        return conjunction(self.first.level(x), -self.second.level(x))

    @cached_property
    def pieces(self) -> tuple[Piece, ...]:
        outside_second = _negated(self.second.level)
        return tuple(
            [_cut(p, outside_second) for p in self.first.pieces]
            + [_cut(_turned(p), self.first.level) for p in self.second.pieces]
        )


Level = Callable[[Tensor], Tensor]


def _negated(level: Level) -> Level:
    return lambda x: -level(x)


def _cut(piece: Piece, keep: Level) -> Piece:
    """The part of `piece` where `keep` > 0 (added to its trim by an R-conjunction)."""
    trim = piece.trim

    def cut_trim(x: Tensor) -> Tensor:
        return keep(x) if trim is None else conjunction(trim(x), keep(x))

    return Piece(piece.name, piece.measure, piece.draw, piece.carrier, cut_trim, whole=False)


def _turned(piece: Piece) -> Piece:
    """The piece seen from the other side: normals and carrier negated (a hole's boundary)."""

    def draw(n: int, generator: torch.Generator, method: str) -> tuple[Tensor, Tensor]:
        points, normals = piece.draw(n, generator, method)
        return points, -normals

    carrier = piece.carrier
    return Piece(
        piece.name, piece.measure, draw, lambda x: -carrier(x), piece.trim, whole=piece.whole
    )
