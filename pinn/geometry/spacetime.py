"""Space-time: a spatial domain of any shape times a time interval, time the last coordinate."""

from __future__ import annotations

from functools import cached_property

import torch

from pinn.errors import ConfigError, is_finite_number
from pinn.geometry.domain import Domain, Piece
from pinn.geometry.rfunctions import conjunction
from pinn.geometry.sampling import unit_cube

Tensor = torch.Tensor


class SpaceTime(Domain):
    """space x [start, end], with coordinates (*space.names, time).

    The boundary parts are the spatial parts, carried through time under their own names
    ("x_min", "circle", "hole", ...), and the two time faces `<time>_min` (where `Initial`
    conditions hold) and `<time>_max`. Interior points map the unit cube exactly where the space
    does (a box, a ball), and are drawn by rejection otherwise. `window` cuts out a time
    window (time-marching).

    Args:
        space: the spatial domain.
        start: the initial time.
        end: the final time (> start).
        time: the name of the time coordinate (default "t").
    """

    def __init__(self, space: Domain, start: float, end: float, time: str = "t"):
        if not isinstance(space, Domain):
            raise ConfigError(f"SpaceTime needs a spatial domain, got {type(space).__name__}")
        if not (is_finite_number(start) and is_finite_number(end) and start < end):
            raise ConfigError(f"SpaceTime needs finite start < end, got {start!r}, {end!r}")
        if not isinstance(time, str) or not time or time in space.names:
            raise ConfigError(
                f"SpaceTime: the time coordinate needs a name that is not one of the space's "
                f"{list(space.names)}, got {time!r}"
            )
        self.space, self.start, self.end, self.time = space, float(start), float(end), time
        self.dim, self.names = space.dim + 1, (*space.names, time)
        self.lower, self.upper = (*space.lower, self.start), (*space.upper, self.end)
        self.unit_dim = None if space.unit_dim is None else space.unit_dim + 1
        self.time_faces = ("min", "max")  # a window's inner ends are no boundary (`window`)

    def __repr__(self) -> str:
        return f"SpaceTime({self.space!r}, {self.start}, {self.end}, time={self.time!r})"

    def window(self, start: float, end: float) -> SpaceTime:
        """The same space over [start, end] within [self.start, self.end], for time-marching:
        its time faces are only those that are this domain's, so a window inside the interval
        has no `<time>_min` (no `Initial` condition holds there) and no `<time>_max`."""
        if not (self.start <= start < end <= self.end):
            raise ConfigError(
                f"a window [{start}, {end}] must lie within [{self.start}, {self.end}]"
            )
        window = SpaceTime(self.space, start, end, self.time)
        window.time_faces = tuple(
            side
            for side, at in (("min", start), ("max", end))
            if at == (self.start if side == "min" else self.end) and side in self.time_faces
        )
        return window

    @property
    def duration(self) -> float:
        return self.end - self.start

    @cached_property
    def volume(self) -> float:
        return self.space.volume * self.duration

    def _in_time(self, x: Tensor) -> Tensor:
        """(N,) > 0 for start < t < end, with unit slope at both ends."""
        t = x[:, -1]
        return (t - self.start) * (self.end - t) / self.duration

    def level(self, x: Tensor) -> Tensor:
        return conjunction(self.space.level(x[:, :-1]), self._in_time(x))

    def from_unit(self, unit: Tensor) -> Tensor:
        return torch.cat([self.space.from_unit(unit[:, :-1]), self._times(unit[:, -1:])], dim=1)

    def interior_weights(self, x: Tensor) -> Tensor:
        # times are uniform: the space's weights (its own density) times the duration
        return self.space.interior_weights(x[:, :-1]) * self.duration

    def _times(self, unit: Tensor) -> Tensor:
        return self.start + unit * self.duration

    @cached_property
    def pieces(self) -> tuple[Piece, ...]:
        faces = [
            face for face in self._time_faces() if face.name.rpartition("_")[2] in self.time_faces
        ]
        return (*(self._through_time(p) for p in self.space.pieces), *faces)

    def _through_time(self, piece: Piece) -> Piece:
        """A spatial piece at every time in the interval."""

        def draw(n: int, generator: torch.Generator, method: str) -> tuple[Tensor, Tensor]:
            points, normals = piece.draw(n, generator, method)
            # Shuffled: two Sobol sets drawn apart pair up their points along a few lines.
            order = torch.randperm(n, generator=generator)
            times = self._times(unit_cube(n, 1, generator, method)[order])
            return torch.cat([points, times], 1), torch.cat(
                [normals, torch.zeros(n, 1, dtype=torch.float64)], 1
            )

        space_trim = piece.trim

        def trim(x: Tensor) -> Tensor:
            in_time = self._in_time(x)
            return in_time if space_trim is None else conjunction(space_trim(x[:, :-1]), in_time)

        def keep(points: Tensor, normals: Tensor) -> Tensor:
            in_space = piece.kept(points[:, :-1], normals[:, :-1])
            return in_space & (self._in_time(points) > 0)

        carrier = piece.carrier
        return Piece(
            piece.name,
            piece.measure * self.duration,
            draw,
            lambda x: carrier(x[:, :-1]),
            trim,
            whole=piece.whole,
            keep=keep,
        )

    def _time_faces(self) -> tuple[Piece, Piece]:
        def face(at_end: bool) -> Piece:
            moment = self.end if at_end else self.start

            def draw(n: int, generator: torch.Generator, method: str) -> tuple[Tensor, Tensor]:
                points = self.space.interior_float64(n, generator, method)
                normals = torch.zeros(n, self.dim, dtype=torch.float64)
                normals[:, -1] = 1.0 if at_end else -1.0
                return torch.cat(
                    [points, torch.full((n, 1), moment, dtype=torch.float64)], 1
                ), normals

            def carrier(x: Tensor) -> Tensor:
                return moment - x[:, -1] if at_end else x[:, -1] - moment

            return Piece(
                f"{self.time}_{'max' if at_end else 'min'}",
                self.space.volume,
                draw,
                carrier,
                lambda x: self.space.level(x[:, :-1]),
            )

        return face(False), face(True)
