"""Seeded point sets in the unit cube, and the split of a count between parts.

Every domain draws its points from `unit_cube` and maps them: exactly (a box, a ball) or by
rejection from its bounding box (polygons, constructive geometry). All draws come from a
`torch.Generator`, in float64 on the CPU, so they are the same on every device and dtype;
`onto` moves them to the training device without a host sync.
"""

from __future__ import annotations

import functools
import math

import torch

from pinn.errors import ConfigError

SAMPLING_METHODS = ("uniform", "sobol", "lhs")
# Quadrature's own method (`Domain.boundary_quadrature`), not a sampler: the midpoints of n
# equal cells in one dimension, Sobol's points in more.
MIDPOINT = "midpoint"


def check_method(method: str, key: str = "sampling method") -> None:
    """Refuse a sampling method other than uniform, sobol or lhs, naming `key`."""
    if method not in SAMPLING_METHODS:
        raise ConfigError(
            f"{key}={method!r} is unknown; choose one of {', '.join(SAMPLING_METHODS)}"
        )


def unit_cube(n: int, dim: int, generator: torch.Generator, method: str) -> torch.Tensor:
    """(n, dim) float64 CPU points in [0, 1)^dim by `method` (uniform, sobol or lhs; or
    `MIDPOINT`: (i + 1/2) / n in one dimension, the midpoint rule, as sobol in more)."""
    if method == MIDPOINT:
        if dim == 1:
            return ((torch.arange(n, dtype=torch.float64) + 0.5) / n)[:, None]
        method = "sobol"
    check_method(method)
    if n == 0 or dim == 0:
        return torch.empty(n, dim, dtype=torch.float64)
    if method == "uniform":
        return torch.rand(n, dim, generator=generator, dtype=torch.float64)
    if method == "sobol":
        # A random digital shift of the first n Sobol points: XOR with one random 30-bit word
        # per coordinate keeps the net's stratification and makes each point uniform on the
        # cube. The net is computed once per (n, dim), so a redraw costs a few integer ops.
        shift = torch.randint(0, 2**_SOBOL_BITS, (dim,), generator=generator)
        return (_sobol_net(n, dim) ^ shift).to(torch.float64) / 2**_SOBOL_BITS
    strata = torch.stack([torch.randperm(n, generator=generator) for _ in range(dim)], dim=1)
    jitter = torch.rand(n, dim, generator=generator, dtype=torch.float64)
    return (strata + jitter) / n


_SOBOL_BITS = torch.quasirandom.SobolEngine.MAXBIT  # 30: the digits every Sobol point has


@functools.lru_cache(maxsize=32)
def _sobol_net(n: int, dim: int) -> torch.Tensor:
    """(n, dim) int64: the first n unscrambled Sobol points in `dim` dimensions, times 2^30."""
    engine = torch.quasirandom.SobolEngine(dim, scramble=False)
    return (engine.draw(n, dtype=torch.float64) * 2**_SOBOL_BITS).to(torch.int64)


def onto(drawn: torch.Tensor, dtype: torch.dtype, device: str | torch.device) -> torch.Tensor:
    """`drawn` (on the CPU) cast to `dtype` and copied to `device` without waiting on it.

    A plain copy to a GPU from pageable memory makes the host wait for the GPU's queue, once
    per redraw; from pinned memory the copy is queued behind the step and the host runs on.
    """
    cast = drawn.to(dtype=dtype)
    if torch.device(device).type != "cuda":
        return cast.to(device=device)
    return cast.pin_memory().to(device=device, non_blocking=True)


def share(total: int, weights: list[float]) -> list[int]:
    """Split `total` into integer parts proportional to `weights` (largest remainder).

    Parts of weight 0 get nothing; ties go to the earlier part.
    """
    scale = total / sum(weights)
    if math.isinf(scale):  # measures near the smallest float (a ball in 1000 dimensions)
        largest = max(weights)
        weights = [w / largest for w in weights]
        scale = total / sum(weights)
    exact = [w * scale for w in weights]
    counts = [int(e) for e in exact]
    by_remainder = sorted(range(len(weights)), key=lambda i: exact[i] - counts[i], reverse=True)
    for i in by_remainder[: total - sum(counts)]:
        counts[i] += 1
    return counts
