"""Residual-based adaptive sampling: training points go where the PDE residual is large.

Two methods of Wu, Zhu, Tan, Kartha & Lu (2023), "A comprehensive study of non-adaptive and
residual-based adaptive sampling for physics-informed neural networks", CMAME 403, 115671:

- "rar", RAR-G (greedy residual-based adaptive refinement, Lu et al. 2021): at each
  refinement, the `add` of `candidates` fresh interior points with the largest |residual| join
  the training set for good; later redraws of the interior keep them.
- "rad", RAD (residual-based adaptive distribution): at each refinement, the interior points
  are drawn again from `candidates` fresh points with probability
  p(x) ∝ |r(x)|^k / mean(|r|^k) + c, the paper's recommended k = 1, c = 1 by default.

`Refinement` holds the method's settings (the `refinement:` config group) and chooses among
candidates; `PointSampler.refine` (pinn.geometry.sampler) draws the candidates and keeps the
chosen points. When to refine is each training phase's own setting (`trainer.<phase>.
refine_every`, pinn.training.phases), not this layer's:

    points = PointSampler(domain, 2000, 400, "sobol", generator, refinement=Refinement("rad"))
    batch = points.refine(lambda x: residual_magnitude(problem.residual(x, field(x))))
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import torch

from pinn.errors import ConfigError, TrainingDiverged, is_finite_number, require_int
from pinn.settings import setting
from pinn.syncs import on_host

REFINEMENTS = ("none", "rar", "rad")
_MAX_CATEGORIES = 2**24  # torch.multinomial draws from at most this many candidates


@dataclass
class Refinement:
    """How the interior points follow the residual (config group `refinement`); when they do is
    each phase's `refine_every` (`trainer.adam.refine_every`, `trainer.lbfgs.refine_every`, ...).

    Attributes:
        method: "none" (the points are only drawn), "rar" (RAR-G) or "rad" (RAD).
        candidates: fresh interior points whose residual is evaluated per refinement (>= 1).
        add: "rar" only: points added per refinement (1 <= add <= candidates).
        k: "rad" only: exponent of |r| in the sampling density (>= 0; 0 samples uniformly).
        c: "rad" only: uniform part of the density (>= 0; large c tends to uniform sampling).
    """

    method: str = setting(
        "none",
        "none, rar (add the points of largest residual) or rad (redraw by residual), in the "
        "phases whose refine_every > 0",
    )
    candidates: int = setting(10000, "points whose residual is evaluated per refinement")
    add: int = setting(100, "rar: points added per refinement")
    k: float = setting(1.0, "rad: density ∝ |r|^k / mean(|r|^k) + c")
    c: float = setting(1.0, "rad: the constant c in that density (higher: closer to uniform)")

    def __post_init__(self) -> None:
        if self.method not in REFINEMENTS:
            raise ConfigError(
                f"refinement.method must be one of {', '.join(REFINEMENTS)}, got {self.method!r}"
            )
        for key in ("candidates", "add"):
            require_int(f"refinement.{key}", getattr(self, key), minimum=1)
        for key in ("k", "c"):
            _require_non_negative(f"refinement.{key}", getattr(self, key))
        if self.method == "rar" and self.add > self.candidates:
            raise ConfigError(
                f"refinement.add ({self.add}) must not exceed refinement.candidates "
                f"({self.candidates}): RAR adds the largest residuals among the candidates"
            )
        if self.method == "rad" and self.candidates > _MAX_CATEGORIES:
            raise ConfigError(
                f"refinement.candidates must be at most 2**24 = {_MAX_CATEGORIES} for RAD "
                f"(torch.multinomial's limit), got {self.candidates}"
            )

    def settings(self) -> dict[str, str | int | float]:
        """The settings as a plain dict (for checkpoints: `PointSampler.state_dict`)."""
        return dataclasses.asdict(self)

    def select(
        self, magnitude: torch.Tensor, n_interior: int, generator: torch.Generator
    ) -> torch.Tensor:
        """Indices of the chosen candidates, given their (M,) float64 CPU |residual|.

        "rar": (add,) indices of the largest, largest first (draws nothing).
        "rad": (n_interior,) indices drawn with p ∝ |r|^k / mean(|r|^k) + c from `generator`,
        without replacement where at least n_interior candidates have p > 0, else with it.
        """
        if self.method == "rar":
            return torch.topk(magnitude, self.add).indices
        if self.method == "rad":
            density = rad_density(magnitude, self.k, self.c)
            replacement = n_interior > int((density > 0).sum())
            return torch.multinomial(density, n_interior, replacement, generator=generator)
        raise RuntimeError("Refinement.select() with refinement.method 'none': nothing to choose")


def rad_density(magnitude: torch.Tensor, k: float, c: float) -> torch.Tensor:
    """(M,) unnormalised RAD density |r|^k / mean(|r|^k) + c of (M,) magnitudes |r|.

    Where every |r| is zero (an exact solution) the residual prefers no point: the density is
    uniform. |r| is scaled by its largest value first, which leaves the density as it is but
    keeps |r|^k from overflowing.
    """
    largest = magnitude.max()
    if largest == 0:
        return torch.ones_like(magnitude)
    weight = (magnitude / largest).pow(k)
    return weight / weight.mean() + c


def residual_magnitude(residual: torch.Tensor | Mapping[str, torch.Tensor]) -> torch.Tensor:
    """(N,) size of a problem's residual at N points: the root of the sum of its squares.

    `residual` is what `Problem.residual` returns: an (N,) or (N, ...) tensor, or a dict of
    them for a system of equations; every component of a point counts, unweighted.
    """
    parts = residual.values() if isinstance(residual, Mapping) else [residual]
    squares = [part.reshape(len(part), -1).square().sum(dim=1) for part in parts]
    return torch.stack(squares).sum(dim=0).sqrt()


def evaluate(
    residual: Callable[[torch.Tensor], torch.Tensor], points: torch.Tensor, chunk: int
) -> torch.Tensor:
    """(M,) float64 CPU |residual(x)| at the (M, d) points, computed `chunk` points at a time
    and copied to the host at once: a refinement's one wait for the device (`pinn.syncs`), as
    the candidates are chosen on the host, by the sampler's generator.

    Raises:
        ValueError: `residual` does not map (m, d) points to an (m,) tensor.
        TrainingDiverged: the residual is NaN or infinite at some candidate.
    """
    magnitudes = []
    for part in torch.split(points, chunk):
        value = residual(part)
        if not isinstance(value, torch.Tensor) or value.shape != (len(part),):
            shape = tuple(value.shape) if isinstance(value, torch.Tensor) else type(value)
            raise ValueError(
                f"the refinement residual must map ({len(part)}, d) points to ({len(part)},) "
                f"residuals, got {shape}; reduce a system's residual with residual_magnitude"
            )
        magnitudes.append(value.detach().abs())
    magnitude = torch.cat(magnitudes).cpu().to(torch.float64)
    with on_host():
        bad = int((~torch.isfinite(magnitude)).sum())
    if bad:
        raise TrainingDiverged(
            f"the residual is NaN or infinite at {bad} of {len(magnitude)} refinement "
            "candidates: the network has diverged; lower the learning rate or refine later"
        )
    return magnitude


def _require_non_negative(key: str, value: object) -> None:
    if not is_finite_number(value) or value < 0:
        raise ConfigError(f"{key} must be a finite number >= 0, got {value!r}")
