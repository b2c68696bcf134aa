"""Residual-based attention: a weight per interior point of each PDE term, growing where the
residual stays large.

RBA: Anagnostopoulos, Toscano, Stergiopulos & Karniadakis (2024), "Residual-based attention in
physics-informed neural networks", CMAME 421, 116805. vRBA, its variational form: Toscano, Chen,
Oommen & Karniadakis (2025), "A variational framework for residual-based adaptivity in neural
PDE solvers and operator learning", arXiv:2509.14198; its exponential potential as the authors'
code computes it (jdtoscano94/vRBA_variational_residual_based_attention_PINNs_Operator_learning,
`update_vRBA`, with phi = 1).

    weights = PointWeights(PointWeightSettings(method="rba"))
    weights.request()                                  # the next evaluation updates them first
    vectors = residuals(problem, model, batch, engine, point_weights=weights)  # PDE terms scaled

Each PDE term e ("pde", or "pde_<key>" of a system) has a weight λ_p per interior point p, and
its loss is mean_p (λ_p r_p)^2: its (N,) residual vector is multiplied by λ point by point
(`scales`), so every phase minimises the weighted loss (Gauss-Newton's rows are λ_p r_p, the
square roots of the weights λ_p^2 its squares carry). An update, from the detached residual of
the evaluation that makes it, per term:

    ρ_p = |r_p| / max_q |r_q|                         (ρ = 1 everywhere where every r is 0)
    λ_p ← γ λ_p + η t_p,   rba:  t_p = ρ_p
                           vrba: t_p = exp((|r_p| - max|r|) / ε_k),  ε_k = c max|r| / ln(k + 2)
                                     = (k + 2)^((ρ_p - 1) / c)

k the update's number (1, 2, ...), c the `temperature`: vRBA's targets are the exponential
(L-infinity) potential's sampling density, normalised by its largest value, the temperature
annealed as k grows. Since 0 <= t <= 1, every weight stays between 0 and
max(initial, η / (1 - γ)). The weights carry no gradient.

They belong to the points: when the interior points change (a redraw, RAD, RAR's additions), a
point that stays (RAR keeps the earlier points, first) keeps its weight and every new point
starts at the mean weight of the points before the change, so the term keeps its scale.
Before its first update every point weighs `initial`. The weights, their points and the update
count are state: a checkpoint holds them (`state_dict`). Under data-parallel training each
process weighs its own points, ρ by its own largest residual.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch

from pinn.errors import ConfigError, is_finite_number, require_int
from pinn.problem.causal import is_pde
from pinn.problem.columns import ATTENTION_PREFIX
from pinn.settings import setting

POINT_WEIGHTINGS = ("none", "rba", "vrba")
# The history columns: the mean and the largest weight over every PDE term's points.
MEAN_WEIGHT, MAX_WEIGHT = ATTENTION_PREFIX + "mean_weight", ATTENTION_PREFIX + "max_weight"


@dataclass
class PointWeightSettings:
    """The block `trainer.point_weights`.

    Attributes:
        method: "none", "rba" or "vrba" (module docstring).
        gamma: the decay γ in λ ← γ λ + η t, in [0, 1).
        eta: the rate η > 0 of that update; the weights stay below max(initial, η / (1 - γ)).
        initial: every point's weight before the first update (>= 0; the RBA paper's is 0,
            which leaves the PDE terms nearly off for the first 1 / (1 - γ) updates).
        every: optimiser steps between updates (>= 1), in every phase: Adam steps, L-BFGS and
            Gauss-Newton iterations (`pinn.training.phases`).
        temperature: "vrba" only: c > 0 in ε_k = c max|r| / ln(k + 2); larger is flatter.
    """

    method: str = setting(
        "none",
        "none, rba (residual-based attention: a weight per PDE point, λ ← γ λ + η |r|/max|r|) "
        "or vrba (its variational form, exponential potential)",
    )
    gamma: float = setting(0.999, "the decay γ in λ ← γ λ + η target, in [0, 1)")
    eta: float = setting(
        0.001, "the rate η > 0 of that update: the weights stay below max(initial, η/(1-γ))"
    )
    initial: float = setting(1.0, "every point's weight before its first update (the paper: 0)")
    every: int = setting(
        1, "optimiser steps (Adam steps, L-BFGS or Gauss-Newton iterations) between updates"
    )
    temperature: float = setting(
        1.0, "vrba: c in ε_k = c max|r| / ln(k + 2), k the update's number (larger: flatter)"
    )

    def __post_init__(self) -> None:
        if self.method not in POINT_WEIGHTINGS:
            raise ConfigError(
                f"trainer.point_weights.method must be one of {', '.join(POINT_WEIGHTINGS)}, "
                f"got {self.method!r}"
            )
        if not (is_finite_number(self.gamma) and 0 <= self.gamma < 1):
            raise ConfigError(
                f"trainer.point_weights.gamma must be a number in [0, 1), got {self.gamma!r}; "
                "the papers use 0.999 (a memory of about 1000 updates)"
            )
        for key in ("eta", "temperature"):
            value = getattr(self, key)
            if not (is_finite_number(value) and value > 0):
                raise ConfigError(
                    f"trainer.point_weights.{key} must be a finite number > 0, got {value!r}"
                )
        if not (is_finite_number(self.initial) and self.initial >= 0):
            raise ConfigError(
                f"trainer.point_weights.initial must be a finite number >= 0, got {self.initial!r}"
            )
        require_int("trainer.point_weights.every", self.every, minimum=1)

    @property
    def on(self) -> bool:
        return self.method != "none"


def attention_targets(
    magnitude: torch.Tensor, method: str, update: int, temperature: float = 1.0
) -> torch.Tensor:
    """(E, N) targets t in [0, 1] of the (E, N) |residuals| of E terms at N points, each term
    normalised by its own largest: rba t = ρ, vrba t = (update + 2)^((ρ - 1) / temperature),
    `update` the update's number (1 for the first)."""
    largest = magnitude.amax(dim=1, keepdim=True)
    safe = largest.clamp(min=torch.finfo(magnitude.dtype).tiny)  # 0/0 never computed
    ratio = torch.where(largest > 0, magnitude / safe, 1.0)
    if method == "rba":
        return ratio
    if method == "vrba":
        return (update + 2.0) ** ((ratio - 1) / temperature)
    raise ValueError(f"no attention targets for method {method!r}")


class PointWeights:
    """The weights λ of every PDE term's interior points, and their update (module docstring).

    `weights` is the (E, N) tensor of the E PDE terms `names` at the N points `points`, None
    before the first evaluation; `updates` counts the updates so far.
    """

    def __init__(self, settings: PointWeightSettings):
        if not settings.on:
            raise ValueError("PointWeights needs a method; for none, pass point_weights=None")
        self.settings = settings
        self.weights: torch.Tensor | None = None
        self.names: list[str] = []
        self.points: torch.Tensor | None = None
        self.updates = 0
        self._pending = False

    def request(self) -> None:
        """Update the weights from the residual of the next evaluation, before it is weighed:
        every later evaluation weighs as that one did (a line search compares one loss)."""
        self._pending = True

    def scales(
        self, terms: Mapping[str, torch.Tensor], points: torch.Tensor
    ) -> dict[str, torch.Tensor]:
        """{PDE term: (N,) λ} for the (N,) residual vectors `terms` at the (N, d) interior
        `points` (detached): what each PDE vector is multiplied by. Follows a change of the
        points first, then makes a requested update from these residuals.

        Raises:
            ConfigError: no term is a PDE residual ("pde" or "pde_<key>").
        """
        names = [name for name in terms if is_pde(name)]
        if not names:
            raise ConfigError(
                f"trainer.point_weights.method={self.settings.method} weighs the PDE residual at "
                f"each interior point, but the loss terms {list(terms)} have none named 'pde' or "
                "'pde_<key>'; set trainer.point_weights.method=none"
            )
        self._follow(names, points, terms[names[0]])
        if self._pending:
            self._pending = False
            magnitude = torch.stack([terms[name].detach().abs() for name in names])
            self._update(magnitude.to(self.weights.dtype))
        return {name: self.weights[e] for e, name in enumerate(names)}

    def row(self) -> dict[str, float]:
        """{attention_mean_weight, attention_max_weight} over every term's points, for a history
        row ({} before the first evaluation)."""
        if self.weights is None:
            return {}
        return {MEAN_WEIGHT: self.weights.mean().item(), MAX_WEIGHT: self.weights.max().item()}

    def state_dict(self) -> dict[str, Any]:
        """The weights, their points and terms, and the update count (tensors on the CPU)."""
        held = self.weights is not None
        return {
            "method": self.settings.method,
            "weights": self.weights.detach().cpu() if held else None,
            "points": self.points.detach().cpu() if held else None,
            "names": list(self.names),
            "updates": self.updates,
        }

    def load_state_dict(self, state: Mapping[str, Any], device: torch.device | str) -> None:
        """Continue from `state_dict()`'s result (tensors moved to `device`).

        Raises:
            ConfigError: the state was written with another method.
        """
        if state["method"] != self.settings.method:
            raise ConfigError(
                f"the saved point weights come from trainer.point_weights.method="
                f"{state['method']}, this run has {self.settings.method}; resume with the saved "
                "setting"
            )
        held = state["weights"] is not None
        self.weights = state["weights"].to(device) if held else None
        self.points = state["points"].to(device) if held else None
        self.names, self.updates = list(state["names"]), state["updates"]
        self._pending = False

    def fixed(self) -> FixedPointWeights:
        """The current weights as constants, for passes that must not change them (the
        Gauss-Newton Jacobian's, inside torch.func transforms)."""
        return FixedPointWeights(dict(zip(self.names, self.weights, strict=True)))

    # ---- internals ---------------------------------------------------------------------------

    def _follow(self, names: list[str], points: torch.Tensor, like: torch.Tensor) -> None:
        """Make the weights those of `points` (N, d): `initial` at the first evaluation; where
        the points changed, the kept ones (a prefix) keep theirs, new ones get the mean."""
        if self.weights is None:
            shape = (len(names), len(points))
            self.weights = torch.full(shape, float(self.settings.initial), dtype=like.dtype)
            self.weights = self.weights.to(like.device)
        elif names != self.names:
            raise ConfigError(
                f"the PDE terms changed from {self.names} to {names} during training: a "
                "residual must return the same terms at every call"
            )
        elif points is not self.points and not _same(points, self.points):
            self.weights = _carried(self.weights, self.points, points)
        self.names, self.points = names, points  # the batch's own tensor: checked by identity

    def _update(self, magnitude: torch.Tensor) -> None:
        """λ ← γ λ + η t from the (E, N) |residuals| (the module docstring's rule)."""
        self.updates += 1
        settings = self.settings
        target = attention_targets(magnitude, settings.method, self.updates, settings.temperature)
        self.weights = settings.gamma * self.weights + settings.eta * target


class FixedPointWeights:
    """Weights as given, never updated: `scales` returns them whatever the residual."""

    def __init__(self, weights: Mapping[str, torch.Tensor]):
        self.weights = dict(weights)

    def scales(
        self, terms: Mapping[str, torch.Tensor], points: torch.Tensor
    ) -> dict[str, torch.Tensor]:
        return self.weights


def _same(points: torch.Tensor, old: torch.Tensor) -> bool:
    return points.shape == old.shape and torch.equal(points.detach(), old)


def _carried(weights: torch.Tensor, old: torch.Tensor, points: torch.Tensor) -> torch.Tensor:
    """(E, N') weights of the N' `points` from the (E, N) `weights` of the N `old` ones: where
    `old` are the first N of `points` (RAR's additions) they keep theirs, and every other point
    starts at the mean of each term's weights."""
    mean = weights.mean(dim=1, keepdim=True)
    kept = len(old) if len(points) > len(old) and torch.equal(points[: len(old)], old) else 0
    fresh = mean.expand(len(weights), len(points) - kept)
    return torch.cat([weights[:, :kept], fresh], dim=1)
