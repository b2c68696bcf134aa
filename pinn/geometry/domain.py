"""What every domain is: a shape that draws points, knows its boundary parts and its distance.

A `Domain` of dimension d has named coordinates (`names`), a bounding box (`lower`, `upper`),
a level function (`level`: > 0 inside, 0 on the boundary, < 0 outside) and a boundary made of
`Piece`s, each with a part name ("x_min", "circle", "edge3", "hole"). From these it gives:

    domain.sample_interior(n, generator, method)     (n, d) points strictly inside
    domain.sample_boundary(n, generator, method)     BoundaryPoints: points, outward normals, parts
    domain.distance(x, on=None)                      (N,) 0 on the boundary (or parts), > 0 inside
    domain.contains(x)                               (N,) bool
    a | b,  a & b,  a - b                            union, intersection, difference (csg)

Interior points come from an exact map of the unit cube where the shape has one (a box, a ball)
and by rejection from the bounding box otherwise. Boundary points are shared out between the
pieces in proportion to their measure (or counted per part: `sample_boundary({"hole": 600})`)
and drawn on each piece (by rejection where constructive geometry cut it). Every draw comes from
the generator passed in, so a draw is seeded and, from the same generator state, repeated
exactly (what resuming a run relies on).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property

import torch

from pinn.errors import ConfigError
from pinn.geometry.rfunctions import equivalence, trimmed_distance
from pinn.geometry.sampling import MIDPOINT, check_method, onto, share, unit_cube
from pinn.syncs import on_host

Tensor = torch.Tensor
_DEFAULT_NAMES = ("x", "y", "z")
# Fixed draws that estimate measures (of constructive geometry and of cut pieces): never the
# user's generator, so estimating changes no training draw.
_ESTIMATE_SEED = 0
_ESTIMATE_POINTS = 2**16
_PIECE_ESTIMATE_POINTS = 2**12
_MAX_REJECTION_ROUNDS = 1000
# A point this close to the boundary, relative to the bounding box, counts as on it.
_ON_BOUNDARY = 1e-12


@dataclass(frozen=True)
class BoundaryPoints:
    """Points on the boundary of a domain.

    Attributes:
        points: (N, d) coordinates.
        normals: (N, d) outward unit normals.
        part: (N,) long index into `part_names` of the part each point lies on.
        part_names: the names of the boundary parts, e.g. ("x_min", "x_max", ...) for a box.
        domain: the domain they lie on, or None.
        part_rows: where each part's points are, known on the host when they were drawn:
            (part index, first row, row after the last) for each run of consecutive rows of one
            part, in row order (`Domain.sample_boundary` gives it); None where unknown.
    """

    points: Tensor
    normals: Tensor
    part: Tensor
    part_names: tuple[str, ...]
    domain: Domain | None = None
    part_rows: tuple[tuple[int, int, int], ...] | None = None

    def on(self, parts: str | Sequence[str]) -> Tensor:
        """(N,) bool mask of the points on the named part or on any of the parts."""
        parts = known_parts([parts] if isinstance(parts, str) else list(parts), self.part_names)
        indices = torch.tensor([self.part_names.index(n) for n in parts], device=self.part.device)
        return torch.isin(self.part, indices)

    def rows_on(self, parts: str | Sequence[str]) -> Tensor | None:
        """(n,) long indices of the points on the named parts, in row order (what `on`'s mask
        selects), made on the device from `part_rows` without reading a tensor on the host
        (indexing by a mask waits for the device to count it, `pinn.syncs`); None where
        `part_rows` is unknown."""
        parts = known_parts([parts] if isinstance(parts, str) else list(parts), self.part_names)
        if self.part_rows is None:
            return None
        wanted = {self.part_names.index(name) for name in parts}
        device = self.part.device
        runs = [
            torch.arange(start, stop, device=device)
            for index, start, stop in self.part_rows
            if index in wanted
        ]
        return torch.cat(runs) if runs else torch.zeros(0, dtype=torch.long, device=device)


@dataclass(frozen=True)
class Piece:
    """One smooth piece of a boundary, carrying one part name.

    Attributes:
        name: its part name; several pieces may share one (they form one part).
        measure: (d-1)-dimensional measure of the uncut piece (length, area, ...).
        draw: (n, generator, method) -> ((n, d) points on the uncut piece, (n, d) outward unit
            normals there), float64 on the CPU.
        carrier: (N, d) -> (N,): zero on the line, plane or sphere containing the piece, positive
            on the domain's side of it, with unit gradient on it.
        trim: (N, d) -> (N,): > 0 on the part of the carrier that is the piece (None: all of
            it). Constructive geometry cuts pieces by adding to the trim.
        whole: whether `draw` gives only points of the piece (True for a shape's own pieces);
            a piece cut by constructive geometry is drawn by rejection on its trim.
        keep: ((n, d) points on the carrier, (n, d) outward normals there) -> (n,) bool: which
            points belong to the piece (None: those where trim > 0). Constructive geometry sets
            it to settle the points where the piece lies on the other operand's boundary.
    """

    name: str
    measure: float
    draw: Callable[[int, torch.Generator, str], tuple[Tensor, Tensor]]
    carrier: Callable[[Tensor], Tensor]
    trim: Callable[[Tensor], Tensor] | None = None
    whole: bool = True
    keep: Callable[[Tensor, Tensor], Tensor] | None = None

    def kept(self, points: Tensor, normals: Tensor) -> Tensor:
        """(n,) bool: which of the (n, d) points on the carrier, with their (n, d) outward
        normals, belong to the piece."""
        if self.keep is not None:
            return self.keep(points, normals)
        if self.trim is None:
            return torch.ones(len(points), dtype=torch.bool, device=points.device)
        return self.trim(points) > 0

    def distance(self, x: Tensor) -> Tensor:
        """(N,) distance-like: zero on the piece, positive elsewhere on the domain."""
        return trimmed_distance(self.carrier(x), None if self.trim is None else self.trim(x))


class Domain:
    """Base class of the shapes a problem is posed on. Subclasses set, in `__init__`:

    `dim`, `names` (d coordinate names), `lower`, `upper` (the bounding box, d floats each), and
    implement `level`, `pieces` and `volume`. A shape with an exact map from the unit cube to
    its interior also sets `unit_dim` and implements `from_unit`.
    """

    dim: int
    names: tuple[str, ...]
    lower: tuple[float, ...]
    upper: tuple[float, ...]
    unit_dim: int | None = None  # unit-cube coordinates `from_unit` maps; None: rejection

    # ---- what a shape defines --------------------------------------------------------------

    def level(self, x: Tensor) -> Tensor:
        """(N,) > 0 inside, 0 on the boundary, < 0 outside, at (N, d) points (R-function)."""
        raise NotImplementedError

    @cached_property
    def pieces(self) -> tuple[Piece, ...]:
        """The pieces of the boundary."""
        raise NotImplementedError

    @cached_property
    def volume(self) -> float:
        """d-dimensional measure (length, area, volume) of the domain."""
        raise NotImplementedError

    def from_unit(self, unit: Tensor) -> Tensor:
        """(n, unit_dim) points of [0, 1)^unit_dim -> (n, d) uniform points inside."""
        raise NotImplementedError

    # ---- derived ---------------------------------------------------------------------------

    @cached_property
    def part_names(self) -> tuple[str, ...]:
        """The names of the boundary parts, in the order of their first piece."""
        measures = self._piece_measures
        return tuple(dict.fromkeys(p.name for p, m in zip(self.pieces, measures) if m > 0))

    def boundary_measure(self) -> dict[str, float]:
        """{part name: (d-1)-dimensional measure}: exact for uncut pieces, else estimated."""
        measures = dict.fromkeys(self.part_names, 0.0)
        for piece, measure in zip(self.pieces, self._piece_measures):
            if measure > 0:
                measures[piece.name] += measure
        return measures

    def contains(self, x: Tensor, closed: bool = False) -> Tensor:
        """(N,) bool: whether each of the (N, d) points lies inside; with `closed`, inside or on
        the boundary to within rounding (1e-12 of the bounding box's size)."""
        level = self.level(x)
        if not closed:
            return level > 0
        return level >= -_ON_BOUNDARY * max(hi - lo for lo, hi in zip(self.lower, self.upper))

    def distance(self, x: Tensor, on: str | Sequence[str] | None = None) -> Tensor:
        """(N,) distance-like function: zero on the boundary (or on the named parts of it),
        positive inside, growing like the distance near a smooth piece (R-functions).

        Use it for a hard Dirichlet constraint on any shape, u = g + φ N (`Problem.
        hard_constraint`). Built from torch operations: every engine differentiates it.
        """
        pieces = self._pieces_on(on)
        return equivalence([piece.distance(x) for piece in pieces])

    def _pieces_on(self, on: str | Sequence[str] | None) -> list[Piece]:
        if on is None:
            names = set(self.part_names)
        else:
            names = {on} if isinstance(on, str) else set(on)
            unknown = sorted(names - set(self.part_names))
            if unknown or not names:
                raise ConfigError(
                    f"distance(on={on!r}): unknown boundary part(s) {unknown}; this domain's "
                    f"parts are {list(self.part_names)}"
                )
        return [p for p, m in zip(self.pieces, self._piece_measures) if m > 0 and p.name in names]

    @cached_property
    def bounding_volume(self) -> float:
        return math.prod(hi - lo for lo, hi in zip(self.lower, self.upper))

    def estimate_volume(self) -> float:
        """The volume by quasi-Monte Carlo in the bounding box (fixed seed): for shapes with
        no formula. Relative error about 1e-3 or better for a shape filling its box."""
        generator = torch.Generator().manual_seed(_ESTIMATE_SEED)
        inside = self.contains(self._in_bounding_box(_ESTIMATE_POINTS, generator, "sobol"))
        return self.bounding_volume * inside.double().mean().item()

    @cached_property
    def _piece_measures(self) -> list[float]:
        """Each piece's measure after cutting: exact when uncut, else estimated (fixed seed)."""
        measures = []
        for piece in self.pieces:
            if piece.whole:
                measures.append(piece.measure)
                continue
            generator = torch.Generator().manual_seed(_ESTIMATE_SEED)
            points, normals = piece.draw(_PIECE_ESTIMATE_POINTS, generator, "sobol")
            kept = piece.kept(points, normals)
            measures.append(piece.measure * kept.double().mean().item())
        return measures

    def grid(
        self, n_per_dim: int, dtype: torch.dtype = torch.float32, device: str | torch.device = "cpu"
    ) -> Tensor:
        """(M, d) points of the n_per_dim**d grid over the bounding box (its faces included,
        first axis slowest) that lie in the closed domain, to within rounding."""
        axes = [
            torch.linspace(lo, hi, n_per_dim, dtype=torch.float64)
            for lo, hi in zip(self.lower, self.upper)
        ]
        mesh = torch.meshgrid(*axes, indexing="ij")
        points = torch.stack([m.reshape(-1) for m in mesh], dim=1)
        return points[self.contains(points, closed=True)].to(dtype=dtype, device=device)

    # ---- drawing points --------------------------------------------------------------------

    def sample_interior(
        self,
        n: int,
        generator: torch.Generator,
        method: str = "sobol",
        dtype: torch.dtype = torch.float32,
        device: str | torch.device = "cpu",
    ) -> Tensor:
        """(n, d) points inside, drawn by `method` (uniform, sobol or lhs) from `generator`."""
        with on_host():  # float64 on the CPU, then one copy that does not wait
            drawn = self.interior_float64(n, generator, method)
        return onto(drawn, dtype, device)

    def interior_float64(self, n: int, generator: torch.Generator, method: str) -> Tensor:
        """(n, d) interior points in float64 on the CPU: what `sample_interior` casts."""
        check_method(method)
        if self.unit_dim is not None:
            return self.from_unit(unit_cube(n, self.unit_dim, generator, method))
        return self._rejection(n, generator, method)

    def interior_weights(self, x: Tensor) -> Tensor:
        """(n,) weights w with Σ w f(x) ≈ ∫ f over the domain, for n points x drawn by
        `interior_float64`: volume / n each (uniform points); a shape that draws with
        another density overrides it."""
        return torch.full((x.shape[0],), self.volume / x.shape[0], dtype=x.dtype, device=x.device)

    def sample_boundary(
        self,
        n: int | Mapping[str, int],
        generator: torch.Generator,
        method: str = "sobol",
        dtype: torch.dtype = torch.float32,
        device: str | torch.device = "cpu",
    ) -> BoundaryPoints:
        """Points on the boundary, each with its outward unit normal and part.

        n: a count, shared out between all the pieces in proportion to their measure; or
            {part name: count}, exactly that many on each part named (shared between its
            pieces by measure) and none on the others (`share_boundary` gives such counts).
        """
        check_method(method)
        measures = self._piece_measures
        counts = self._piece_counts(n)
        points, normals, parts, rows = [], [], [], []
        with on_host():  # float64 on the CPU, then one copy each that does not wait
            for piece, count, measure in zip(self.pieces, counts, measures):
                if measure == 0:
                    continue
                on_piece, normal = self._draw_piece(piece, count, measure, generator, method)
                points.append(on_piece)
                normals.append(normal)
                index = self.part_names.index(piece.name)
                parts.append(torch.full((count,), index))
                start = rows[-1][2] if rows else 0
                rows.append((index, start, start + count))
            points, normals, parts = torch.cat(points), torch.cat(normals), torch.cat(parts)
        return BoundaryPoints(
            onto(points, dtype, device),
            onto(normals, dtype, device),
            onto(parts, torch.int64, device),
            self.part_names,
            self,
            tuple(rows),
        )

    def share_boundary(self, n: int, parts: Sequence[str] | None = None) -> dict[str, int]:
        """{part: count}: n points shared between the pieces of `parts` (all for None) by
        measure, largest remainder, summed per part; what `sample_boundary(n)` draws when
        `parts` is every part."""
        names = self.part_names if parts is None else known_parts(parts, self.part_names)
        measures = [m if p.name in names else 0.0 for p, m in self._pieces_with_measures]
        counts = share(n, measures) if n and any(measures) else [0] * len(measures)
        totals = dict.fromkeys(names, 0)
        for (piece, _), count in zip(self._pieces_with_measures, counts):
            if piece.name in totals:
                totals[piece.name] += count
        return totals

    @property
    def _pieces_with_measures(self) -> list[tuple[Piece, float]]:
        return list(zip(self.pieces, self._piece_measures))

    def _piece_counts(self, n: int | Mapping[str, int]) -> list[int]:
        """How many of the boundary points each piece gets, for `sample_boundary`'s `n`.

        With {part: count}, the pieces of the named parts are first shared the total by
        measure, as an int n is; a part whose pieces' shares do not sum to its count (one
        given more or fewer than its measure's share) splits its count between its pieces by
        measure instead. So counts that `share_boundary` gave draw exactly what an int does.
        """
        if not isinstance(n, Mapping):
            return share(n, self._piece_measures) if n else [0] * len(self.pieces)
        wanted = dict(n)
        known_parts(list(wanted), self.part_names)
        for name, count in wanted.items():
            if isinstance(count, bool) or not isinstance(count, int) or count < 0:
                raise ConfigError(
                    f"boundary part {name!r}: a count of points must be a whole number >= 0, "
                    f"got {count!r}"
                )
        measures = [m if p.name in wanted else 0.0 for p, m in self._pieces_with_measures]
        total = sum(wanted.values())
        counts = share(total, measures) if total else [0] * len(measures)
        for name, count in wanted.items():
            mine = [i for i, piece in enumerate(self.pieces) if piece.name == name]
            if sum(counts[i] for i in mine) != count:
                for i, split in zip(mine, share(count, [measures[i] for i in mine])):
                    counts[i] = split
        return counts

    def boundary_quadrature(
        self,
        on: str | Sequence[str] | None,
        n: int,
        dtype: torch.dtype = torch.float64,
        device: str | torch.device = "cpu",
    ) -> tuple[Tensor, Tensor, Tensor]:
        """(n, d) points, (n, d) outward normals and (n,) weights with Σ w f(p) ≈ ∫ f ds over
        the named boundary parts (all of it for None).

        The points are shared between the pieces by measure, each point weighing its piece's
        measure over the piece's count. On a whole segment (a 2-d box's face, a polygon's
        edge) or circle they are the midpoints of equal cells: the midpoint rule, second order
        in 1/n on a segment, spectrally accurate on a circle (the trapezoidal rule of a
        periodic integrand); a piece that constructive geometry left whole (a hole's rim) too.
        Elsewhere (faces of two or more dimensions, pieces cut short) they are Sobol points
        with a fixed seed, about first order.
        """
        pieces = self._pieces_on(on)
        measures = [self._piece_measures[self.pieces.index(piece)] for piece in pieces]
        generator = torch.Generator().manual_seed(_ESTIMATE_SEED)
        points, normals, weights = [], [], []
        for piece, count, measure in zip(pieces, share(n, measures), measures):
            if count == 0:
                continue
            on_piece, normal = self._quadrature_points(piece, count, measure, generator)
            points.append(on_piece)
            normals.append(normal)
            weights.append(torch.full((count,), measure / count, dtype=torch.float64))
        return tuple(onto(torch.cat(parts), dtype, device) for parts in (points, normals, weights))

    def _quadrature_points(
        self, piece: Piece, n: int, measure: float, generator: torch.Generator
    ) -> tuple[Tensor, Tensor]:
        """n points on the piece for `boundary_quadrature`: the midpoint rule's where nothing of
        the piece is cut away (its measure whole and every point kept), else Sobol's."""
        if piece.whole or measure == piece.measure:
            points, normals = piece.draw(n, generator, MIDPOINT)
            if piece.whole or bool(piece.kept(points, normals).all()):
                return points, normals
        return self._draw_piece(piece, n, measure, generator, "sobol")

    def _draw_piece(
        self, piece: Piece, n: int, measure: float, generator: torch.Generator, method: str
    ) -> tuple[Tensor, Tensor]:
        """n points on the piece (by rejection where it was cut) and their normals."""
        if piece.whole:
            return piece.draw(n, generator, method)
        rate = measure / piece.measure
        empty = torch.empty(0, self.dim, dtype=torch.float64)  # what n = 0 gives
        kept_points, kept_normals, count = [empty], [empty], 0
        for _ in range(_MAX_REJECTION_ROUNDS):
            if count >= n:
                break
            batch = math.ceil((n - count) / rate * 1.1) + 16
            points, normals = piece.draw(batch, generator, method)
            keep = piece.kept(points, normals)
            kept_points.append(points[keep])
            kept_normals.append(normals[keep])
            count += int(keep.sum())
        else:
            raise RuntimeError(f"could not draw {n} points on boundary part {piece.name!r}")
        return torch.cat(kept_points)[:n], torch.cat(kept_normals)[:n]

    def _in_bounding_box(self, n: int, generator: torch.Generator, method: str) -> Tensor:
        lower = torch.tensor(self.lower, dtype=torch.float64)
        upper = torch.tensor(self.upper, dtype=torch.float64)
        return lower + unit_cube(n, self.dim, generator, method) * (upper - lower)

    def _rejection(self, n: int, generator: torch.Generator, method: str) -> Tensor:
        """(n, d) points drawn in the bounding box, keeping those strictly inside."""
        rate = self.volume / self.bounding_volume
        kept, count = [torch.empty(0, self.dim, dtype=torch.float64)], 0
        for _ in range(_MAX_REJECTION_ROUNDS):
            if count >= n:
                break
            candidates = self._in_bounding_box(
                math.ceil((n - count) / rate * 1.1) + 16, generator, method
            )
            inside = candidates[self.contains(candidates)]
            kept.append(inside)
            count += len(inside)
        else:
            raise RuntimeError(f"could not draw {n} points inside {self!r}")
        return torch.cat(kept)[:n]

    # ---- constructive geometry ---------------------------------------------------------------

    def __or__(self, other: Domain) -> Domain:
        from pinn.geometry.csg import Union

        return Union(self, other)

    def __and__(self, other: Domain) -> Domain:
        from pinn.geometry.csg import Intersection

        return Intersection(self, other)

    def __sub__(self, other: Domain) -> Domain:
        from pinn.geometry.csg import Difference

        return Difference(self, other)


def known_parts(parts: Sequence[str], part_names: Sequence[str]) -> list[str]:
    """`parts` as a list, refused unless each is one of `part_names` (a domain's parts)."""
    unknown = [name for name in parts if name not in part_names]
    if unknown:
        raise ConfigError(
            f"unknown boundary part(s) {unknown}; this domain's parts are {list(part_names)}"
        )
    return list(parts)


def coordinate_names(dim: int, names: Sequence[str] | None, kind: str) -> tuple[str, ...]:
    """d coordinate names: `names` checked, or x, y, z (d <= 3), or x0, x1, ... (d > 3)."""
    if names is None:
        names = _DEFAULT_NAMES[:dim] if dim <= 3 else [f"x{i}" for i in range(dim)]
    names = tuple(names)
    if len(names) != dim or not all(isinstance(n, str) and n for n in names):
        raise ConfigError(f"{kind} of dimension {dim} needs {dim} names, got {list(names)}")
    if len(set(names)) != dim:
        raise ConfigError(f"{kind}: coordinate names must differ, got {list(names)}")
    return names


def finite_point(values: Sequence[float], what: str) -> tuple[float, ...]:
    """A point as floats, refused unless every coordinate is a finite number."""
    try:
        point = tuple(float(v) for v in values)
    except (TypeError, ValueError) as error:
        raise ConfigError(f"{what} must be a list of numbers, got {values!r}") from error
    if not point or not all(math.isfinite(v) for v in point):
        raise ConfigError(f"{what} must be a non-empty list of finite numbers, got {values!r}")
    return point
