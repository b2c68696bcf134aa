"""Seeded point sets in the unit cube, and the split of a count between parts.

Every domain draws its points from `unit_cube` and maps them: exactly (a box, a ball) or by
rejection from its bounding box (polygons, constructive geometry). All draws come from a
`torch.Generator`, in float64 on the CPU, so they are the same on every device and dtype.
"""

from __future__ import annotations

import math

import torch

from pinn.errors import ConfigError

SAMPLING_METHODS = ("uniform", "sobol", "lhs")


def check_method(method: str, key: str = "sampling method") -> None:
    """Refuse a sampling method other than uniform, sobol or lhs, naming `key`."""
    if method not in SAMPLING_METHODS:
        raise ConfigError(
            f"{key}={method!r} is unknown; choose one of {', '.join(SAMPLING_METHODS)}"
        )


def unit_cube(n: int, dim: int, generator: torch.Generator, method: str) -> torch.Tensor:
    """(n, dim) float64 CPU points in [0, 1)^dim by `method` (uniform, sobol or lhs)."""
    check_method(method)
    if n == 0 or dim == 0:
        return torch.empty(n, dim, dtype=torch.float64)
    if method == "uniform":
        return torch.rand(n, dim, generator=generator, dtype=torch.float64)
    if method == "sobol":
        # A fresh scramble seed from the generator: every draw is a new, seeded Sobol set.
        seed = int(torch.randint(0, 2**31 - 1, (1,), generator=generator))
        engine = torch.quasirandom.SobolEngine(dim, scramble=True, seed=seed)
        return engine.draw(n, dtype=torch.float64)
    strata = torch.stack([torch.randperm(n, generator=generator) for _ in range(dim)], dim=1)
    jitter = torch.rand(n, dim, generator=generator, dtype=torch.float64)
    return (strata + jitter) / n


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
