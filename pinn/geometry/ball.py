"""Balls in any dimension; `Disk` is the two-dimensional one."""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from functools import cached_property

import torch

from pinn.errors import ConfigError, is_finite_number
from pinn.geometry.domain import Domain, Piece, coordinate_names, finite_point
from pinn.geometry.sampling import unit_cube

Tensor = torch.Tensor
# Keeps the inverse normal CDF finite at a unit coordinate of exactly 0.
_OPEN = 1e-16
# How far from the centre interior points fall: uniform in volume, or in radius.
RADIAL = ("volume", "radius")


class Ball(Domain):
    """The open ball |x - center| < radius in d = len(center) dimensions.

    Its boundary is one part, named `name` ("sphere" unless given; name a ball that is cut
    out of another shape, e.g. name="hole", to put conditions on it alone). Interior and
    boundary points map the unit cube exactly: in 2-D by polar coordinates that keep areas, in
    other dimensions by normalised Gaussian directions and a radius u^(1/d).

    In many dimensions nearly all of a ball's volume lies next to its sphere (at d = 100, half of
    it past r = 0.993): points uniform in volume leave the centre unseen. `radial="radius"`
    draws the distance from the centre uniformly in [0, radius] instead (the distribution of
    Hu et al. 2023 and Shi et al. 2024 for their high-dimensional tests), for the training
    points and the validation points alike; `interior_weights` corrects integrals for it.
    Either way a ball cut by CSG is sampled uniformly in volume.

    Args:
        center: d coordinates.
        radius: > 0.
        names: d coordinate names (default x, y, z or x0, x1, ...).
        name: the part name of the boundary.
        radial: "volume" (uniform in volume, the default) or "radius" (radius uniform).
    """

    kind = "Ball"
    default_part = "sphere"

    def __init__(
        self,
        center: Sequence[float],
        radius: float,
        names: Sequence[str] | None = None,
        name: str | None = None,
        radial: str = "volume",
    ):
        self.center = finite_point(center, f"{self.kind} center")
        if radial not in RADIAL:
            raise ConfigError(
                f"{self.kind} radial={radial!r} is unknown; choose one of {', '.join(RADIAL)}"
            )
        self.radial = radial
        if not (is_finite_number(radius) and radius > 0):
            raise ConfigError(f"{self.kind} radius must be a finite number > 0, got {radius!r}")
        self.radius = float(radius)
        self.dim = len(self.center)
        self.names = coordinate_names(self.dim, names, self.kind)
        self.part = name or self.default_part
        self.lower = tuple(c - self.radius for c in self.center)
        self.upper = tuple(c + self.radius for c in self.center)
        self.unit_dim = 2 if self.dim == 2 else self.dim + 1

    def __repr__(self) -> str:
        radial = "" if self.radial == "volume" else f", radial={self.radial!r}"
        return (
            f"{self.kind}(center={list(self.center)}, radius={self.radius}, "
            f"name={self.part!r}{radial})"
        )

    @cached_property
    def volume(self) -> float:
        d = self.dim
        return (
            _tiny_past_overflow(lambda: math.pi ** (d / 2) / math.gamma(d / 2 + 1)) * self.radius**d
        )

    @cached_property
    def surface(self) -> float:
        """(d-1)-dimensional measure of the sphere (2 for the two end points when d = 1)."""
        d = self.dim
        unit = _tiny_past_overflow(lambda: 2 * math.pi ** (d / 2) / math.gamma(d / 2))
        return unit * self.radius ** (d - 1)

    def level(self, x: Tensor) -> Tensor:
        """(r² - |x - c|²) / (2r): the distance to the sphere to first order."""
        offset = x - torch.tensor(self.center, dtype=x.dtype, device=x.device)
        return (self.radius**2 - offset.square().sum(dim=1)) / (2 * self.radius)

    def from_unit(self, unit: Tensor) -> Tensor:
        if self.dim == 2:
            fraction, directions = unit[:, 0], self._directions(unit[:, 1:])
        else:
            fraction, directions = unit[:, -1], self._directions(unit[:, :-1])
        # uniform in volume: the fraction of the volume within r, (r/R)^d, is uniform
        power = 1.0 if self.radial == "radius" else 1 / self.dim
        radius = self.radius * fraction**power
        return torch.tensor(self.center, dtype=torch.float64) + directions * radius[:, None]

    def interior_weights(self, x: Tensor) -> Tensor:
        """(n,) quadrature weights of n interior points drawn by `from_unit`: volume / n when
        uniform in volume; with radial="radius", whose density falls like r^(1-d), each point
        weighs volume / n times d (r/R)^(d-1)."""
        uniform = super().interior_weights(x)
        if self.radial == "volume":
            return uniform
        offset = x - torch.tensor(self.center, dtype=x.dtype, device=x.device)
        relative = offset.norm(dim=1) / self.radius
        return uniform * self.dim * relative ** (self.dim - 1)

    def _directions(self, unit: Tensor) -> Tensor:
        """(n, d) unit vectors, uniform on the sphere, from (n, d) (or, in 2-D, (n, 1)) unit
        coordinates."""
        if self.dim == 2:
            angle = 2 * math.pi * unit[:, 0]
            return torch.stack([torch.cos(angle), torch.sin(angle)], dim=1)
        if self.dim == 1:
            return torch.where(unit < 0.5, -1.0, 1.0).to(torch.float64)
        gaussian = torch.special.ndtri(unit.clamp(_OPEN, 1 - _OPEN))
        return gaussian / gaussian.norm(dim=1, keepdim=True)

    @cached_property
    def pieces(self) -> tuple[Piece, ...]:
        return (Piece(self.part, self.surface, self._draw_sphere, self.level),)

    def _draw_sphere(self, n: int, generator: torch.Generator, method: str):
        directions = self._directions(
            unit_cube(n, 1 if self.dim == 2 else self.dim, generator, method)
        )
        points = torch.tensor(self.center, dtype=torch.float64) + self.radius * directions
        return points, directions


class Disk(Ball):
    """The open disk |(x, y) - center| < radius: a two-dimensional `Ball`, whose boundary part is
    named "circle" unless `name` says otherwise."""

    kind = "Disk"
    default_part = "circle"

    def __init__(
        self,
        center: Sequence[float],
        radius: float,
        names: Sequence[str] | None = None,
        name: str | None = None,
        radial: str = "volume",
    ):
        super().__init__(center, radius, names, name, radial)
        if self.dim != 2:
            raise ConfigError(
                f"Disk needs a 2-D center, got {list(center)}; use Ball in other dimensions"
            )


def _tiny_past_overflow(measure) -> float:
    """A unit ball's measure, or past d = 340, where Γ(d/2) overflows a float and the measure
    underflows it (the volume is 1e-1000 at d = 1000), the smallest positive float: a measure of
    0 would mean no ball at all."""
    try:
        return measure()
    except OverflowError:
        return sys.float_info.min
