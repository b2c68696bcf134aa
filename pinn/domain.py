"""Box domains of any dimension and the points sampled in them.

A `Box` knows its corners, the names of its coordinates and of its 2d faces
(`x_min`, `x_max`, `y_min`, ...). It draws interior points and boundary points
(each with its outward normal and the index of its face) from a `torch.Generator`,
so every draw is seeded and reproducible.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from pinn.errors import ConfigError

SAMPLING_METHODS = ("uniform", "sobol", "lhs")
_DEFAULT_NAMES = ("x", "y", "z")


@dataclass(frozen=True)
class BoundaryPoints:
    """Points on the boundary of a domain.

    Attributes:
        points: (N, d) coordinates.
        normals: (N, d) outward unit normals.
        face: (N,) long index into `face_names`.
        face_names: the name of each face, e.g. ("x_min", "x_max", ...).
        box: the box they lie on (its corners match points across opposite faces), or None.
    """

    points: torch.Tensor
    normals: torch.Tensor
    face: torch.Tensor
    face_names: tuple[str, ...]
    box: Box | None = None

    def on(self, faces: str | Sequence[str]) -> torch.Tensor:
        """(N,) bool mask of the points that lie on the named face or on any of the faces."""
        faces = [faces] if isinstance(faces, str) else list(faces)
        unknown = [name for name in faces if name not in self.face_names]
        if unknown:
            raise ConfigError(
                f"unknown face(s) {unknown}; this domain's faces are {list(self.face_names)}"
            )
        indices = torch.tensor([self.face_names.index(n) for n in faces], device=self.face.device)
        return torch.isin(self.face, indices)


class Box:
    """The axis-aligned box [lower_0, upper_0] x ... x [lower_{d-1}, upper_{d-1}].

    Args:
        lower: d lower corners.
        upper: d upper corners, each greater than its lower corner.
        names: d coordinate names; defaults to x, y, z (d <= 3) or x0, x1, ... (d > 3).
    """

    def __init__(
        self,
        lower: Sequence[float],
        upper: Sequence[float],
        names: Sequence[str] | None = None,
    ):
        if len(lower) != len(upper) or len(lower) == 0:
            raise ValueError(
                f"Box needs as many upper as lower corners (at least one), "
                f"got lower={list(lower)}, upper={list(upper)}"
            )
        if any(hi <= lo for lo, hi in zip(lower, upper)):
            raise ValueError(f"Box needs upper > lower in every dimension, got {lower}, {upper}")
        self.lower = tuple(float(v) for v in lower)
        self.upper = tuple(float(v) for v in upper)
        self.dim = len(self.lower)
        if names is None:
            numbered = [f"x{i}" for i in range(self.dim)]
            names = _DEFAULT_NAMES[: self.dim] if self.dim <= 3 else numbered
        if len(names) != self.dim:
            raise ValueError(f"Box of dimension {self.dim} needs {self.dim} names, got {names}")
        self.names = tuple(names)
        self.face_names = tuple(f"{n}_{side}" for n in self.names for side in ("min", "max"))

    def __repr__(self) -> str:
        return f"Box(lower={list(self.lower)}, upper={list(self.upper)}, names={list(self.names)})"

    @property
    def widths(self) -> tuple[float, ...]:
        return tuple(hi - lo for lo, hi in zip(self.lower, self.upper))

    def face_areas(self) -> list[float]:
        """The (d-1)-dimensional measure of each face, in `face_names` order."""
        areas = []
        for axis in range(self.dim):
            area = 1.0
            for other, width in enumerate(self.widths):
                if other != axis:
                    area *= width
            areas += [area, area]
        return areas

    def _scale(self, unit: torch.Tensor) -> torch.Tensor:
        lower = torch.tensor(self.lower, dtype=unit.dtype, device=unit.device)
        upper = torch.tensor(self.upper, dtype=unit.dtype, device=unit.device)
        return lower + unit * (upper - lower)

    def sample_interior(
        self,
        n: int,
        generator: torch.Generator,
        method: str = "sobol",
        dtype: torch.dtype = torch.float32,
        device: str | torch.device = "cpu",
    ) -> torch.Tensor:
        """(n, d) points inside the box."""
        return self._scale(unit_cube(n, self.dim, generator, method, dtype, device))

    def sample_boundary(
        self,
        n: int,
        generator: torch.Generator,
        method: str = "sobol",
        dtype: torch.dtype = torch.float32,
        device: str | torch.device = "cpu",
    ) -> BoundaryPoints:
        """n points on the boundary, shared out between faces in proportion to their area."""
        counts = _share(n, self.face_areas())
        points, normals, faces = [], [], []
        for face, count in enumerate(counts):
            axis, side = divmod(face, 2)
            # With d = 1 a face is a point; otherwise the free coordinates cover the face.
            on_face = self._scale(unit_cube(count, self.dim, generator, method, dtype, device))
            on_face[:, axis] = self.upper[axis] if side else self.lower[axis]  # exactly on it
            normal = torch.zeros(count, self.dim, dtype=dtype, device=device)
            normal[:, axis] = 1.0 if side else -1.0
            points.append(on_face)
            normals.append(normal)
            faces.append(torch.full((count,), face, dtype=torch.long, device=device))
        return BoundaryPoints(
            torch.cat(points), torch.cat(normals), torch.cat(faces), self.face_names, self
        )

    def grid(
        self, n_per_dim: int, dtype: torch.dtype = torch.float32, device: str | torch.device = "cpu"
    ) -> torch.Tensor:
        """(n_per_dim**d, d) tensor-product grid including the faces, first axis slowest."""
        axes = [
            torch.linspace(lo, hi, n_per_dim, dtype=dtype, device=device)
            for lo, hi in zip(self.lower, self.upper)
        ]
        mesh = torch.meshgrid(*axes, indexing="ij")
        return torch.stack([m.reshape(-1) for m in mesh], dim=1)


def unit_cube(
    n: int,
    dim: int,
    generator: torch.Generator,
    method: str,
    dtype: torch.dtype,
    device: str | torch.device,
) -> torch.Tensor:
    """(n, dim) points in [0, 1)^dim by `method` (uniform, sobol or lhs), drawn from `generator`."""
    if method not in SAMPLING_METHODS:
        raise ConfigError(
            f"unknown sampling method {method!r}; choose one of {', '.join(SAMPLING_METHODS)}"
        )
    if n == 0:
        return torch.empty(0, dim, dtype=dtype, device=device)
    if method == "uniform":
        unit = torch.rand(n, dim, generator=generator, dtype=torch.float64)
    elif method == "sobol":
        # A fresh scramble seed from the generator: every draw is a new, seeded Sobol set.
        seed = int(torch.randint(0, 2**31 - 1, (1,), generator=generator))
        unit = torch.quasirandom.SobolEngine(dim, scramble=True, seed=seed).draw(
            n, dtype=torch.float64
        )
    else:  # lhs
        strata = torch.stack([torch.randperm(n, generator=generator) for _ in range(dim)], dim=1)
        jitter = torch.rand(n, dim, generator=generator, dtype=torch.float64)
        unit = (strata + jitter) / n
    return unit.to(dtype=dtype, device=device)


def _share(total: int, weights: list[float]) -> list[int]:
    """Split `total` into integer parts proportional to `weights` (largest remainder)."""
    scale = total / sum(weights)
    exact = [w * scale for w in weights]
    counts = [int(e) for e in exact]
    by_remainder = sorted(range(len(weights)), key=lambda i: exact[i] - counts[i], reverse=True)
    for i in by_remainder[: total - sum(counts)]:
        counts[i] += 1
    return counts
