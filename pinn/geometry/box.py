"""Axis-aligned boxes of any dimension: the interval, the rectangle, the cube and beyond."""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import cached_property

import torch

from pinn.errors import ConfigError
from pinn.geometry.domain import Domain, Piece, coordinate_names
from pinn.geometry.rfunctions import conjoin
from pinn.geometry.sampling import MIDPOINT, unit_cube

Tensor = torch.Tensor


class Box(Domain):
    """The box [lower_0, upper_0] x ... x [lower_{d-1}, upper_{d-1}].

    Its boundary parts are its 2d faces, `x_min, x_max, y_min, ...`, named after the
    coordinates. Interior points map the unit cube exactly, so Sobol and LHS keep their
    structure; boundary points are shared between the faces in proportion to their area.

    Args:
        lower: d lower corners.
        upper: d upper corners, each greater than its lower corner.
        names: d coordinate names; defaults to x, y, z (d <= 3) or x0, x1, ... (d > 3).
        name: when given, the faces are `<name>_x_min, <name>_x_max, ...`: for a box cut out
            of another domain, whose faces would otherwise share the outer ones' names.
    """

    def __init__(
        self,
        lower: Sequence[float],
        upper: Sequence[float],
        names: Sequence[str] | None = None,
        name: str | None = None,
    ):
        if len(lower) != len(upper) or len(lower) == 0:
            raise ConfigError(
                f"Box needs as many upper as lower corners (at least one), "
                f"got lower={list(lower)}, upper={list(upper)}"
            )
        if any(not (math.isfinite(lo) and math.isfinite(hi)) for lo, hi in zip(lower, upper)):
            raise ConfigError(f"Box needs finite corners, got {list(lower)}, {list(upper)}")
        if any(hi <= lo for lo, hi in zip(lower, upper)):
            raise ConfigError(
                f"Box needs upper > lower in every dimension, got {list(lower)}, {list(upper)}"
            )
        self.lower = tuple(float(v) for v in lower)
        self.upper = tuple(float(v) for v in upper)
        self.dim = self.unit_dim = len(self.lower)
        self.names = coordinate_names(self.dim, names, "Box")
        if name is not None and not (isinstance(name, str) and name):
            raise ConfigError(f"Box's name must be a non-empty string, got {name!r}")
        prefix = "" if name is None else f"{name}_"
        self.name = name
        self.face_names = tuple(
            f"{prefix}{n}_{side}" for n in self.names for side in ("min", "max")
        )

    def __repr__(self) -> str:
        named = "" if self.name is None else f", name={self.name!r}"
        return (
            f"Box(lower={list(self.lower)}, upper={list(self.upper)}, "
            f"names={list(self.names)}{named})"
        )

    @property
    def widths(self) -> tuple[float, ...]:
        return tuple(hi - lo for lo, hi in zip(self.lower, self.upper))

    def face_areas(self) -> list[float]:
        """The (d-1)-dimensional measure of each face, in `face_names` order."""
        return [self.volume / width for width in self.widths for _ in range(2)]

    @cached_property
    def volume(self) -> float:
        return math.prod(self.widths)

    def level(self, x: Tensor) -> Tensor:
        return conjoin([self._slab(x, axis) for axis in range(self.dim)])

    def _slab(self, x: Tensor, axis: int) -> Tensor:
        """(N,) (x_a - lower_a)(upper_a - x_a) / width_a: > 0 strictly between the two faces of
        `axis`, with unit slope on them."""
        lo, hi = self.lower[axis], self.upper[axis]
        return (x[:, axis] - lo) * (hi - x[:, axis]) / (hi - lo)

    def from_unit(self, unit: Tensor) -> Tensor:
        return self._scale(unit)

    def _scale(self, unit: Tensor) -> Tensor:
        lower = torch.tensor(self.lower, dtype=unit.dtype)
        return lower + unit * (torch.tensor(self.upper, dtype=unit.dtype) - lower)

    @cached_property
    def pieces(self) -> tuple[Piece, ...]:
        areas = self.face_areas()
        return tuple(
            Piece(
                name=self.face_names[face],
                measure=areas[face],
                draw=lambda n, generator, method, face=face: self._draw_face(
                    face, n, generator, method
                ),
                carrier=lambda x, face=face: self._carrier(face, x),
                trim=None if self.dim == 1 else lambda x, face=face: self._face_trim(face, x),
            )
            for face in range(2 * self.dim)
        )

    def _draw_face(
        self, face: int, n: int, generator: torch.Generator, method: str
    ) -> tuple[Tensor, Tensor]:
        axis, side = divmod(face, 2)
        # With d = 1 a face is a point; otherwise the free coordinates cover the face.
        unit = unit_cube(n, self.dim, generator, method)
        if method == MIDPOINT and self.dim == 2:  # a segment: the midpoint rule along it
            unit[:, 1 - axis] = unit_cube(n, 1, generator, MIDPOINT)[:, 0]
        points = self._scale(unit)
        points[:, axis] = self.upper[axis] if side else self.lower[axis]  # exactly on it
        normals = torch.zeros(n, self.dim, dtype=torch.float64)
        normals[:, axis] = 1.0 if side else -1.0
        return points, normals

    def _carrier(self, face: int, x: Tensor) -> Tensor:
        axis, side = divmod(face, 2)
        return self.upper[axis] - x[:, axis] if side else x[:, axis] - self.lower[axis]

    def _face_trim(self, face: int, x: Tensor) -> Tensor:
        axis = face // 2
        return conjoin([self._slab(x, other) for other in range(self.dim) if other != axis])

    def grid(
        self, n_per_dim: int, dtype: torch.dtype = torch.float32, device: str | torch.device = "cpu"
    ) -> Tensor:
        """(n_per_dim**d, d) tensor-product grid including the faces, first axis slowest.

        All of it: a box needs no test of which grid points it contains (and rounding in the
        level function could drop some on the faces)."""
        axes = [
            torch.linspace(lo, hi, n_per_dim, dtype=dtype, device=device)
            for lo, hi in zip(self.lower, self.upper)
        ]
        mesh = torch.meshgrid(*axes, indexing="ij")
        return torch.stack([m.reshape(-1) for m in mesh], dim=1)
