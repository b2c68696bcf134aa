"""Loss weights per named term: fixed from the config, or adapted by learning-rate annealing.

    weights = LossWeights({"dirichlet": 10.0}, method="lra", every=100, alpha=0.1)
    terms = loss_terms(problem, model, batch)          # {"pde": ..., "dirichlet": ...}
    weights.update(terms, model.parameters(), step)    # Adam steps only; every `every` steps
    weights.total(terms).backward()

"lra" is Algorithm 1 of Wang, Teng & Perdikaris (2021), "Understanding and mitigating gradient
flow pathologies in physics-informed neural networks", SIAM J. Sci. Comput. Each update sets,
for every condition or data term i (any term not named "pde" or "pde_<key>"),

    estimate_i = max |grad_theta L_r| / mean |grad_theta L_i|
    weight_i  <- (1 - alpha) * weight_i + alpha * estimate_i

where L_r is the residual loss (the "pde*" terms summed with their fixed weights), L_i is the
unweighted term, and max and mean run over every entry of every parameter given. A parameter
a term does not reach (autograd gives None) counts as zeros: it adds nothing to the max and
its entries count in the mean's denominator, for L_r and L_i alike.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import torch

from pinn.errors import ConfigError, is_finite_number, require_int
from pinn.problem.loss import weighted_sum

WEIGHTINGS = ("fixed", "lra")
WEIGHT_PREFIX = "weight_"  # a history column WEIGHT_PREFIX + term holds that term's weight


def is_residual(name: str) -> bool:
    """Whether the loss term `name` is a PDE residual ("pde" or "pde_<key>")."""
    return name == "pde" or name.startswith("pde_")


class LossWeights:
    """The weight of each named loss term: fixed from the config, or adapted by LRA.

    Weights are Python floats, so they never carry gradient: the loss depends on the
    parameters only through the terms. A term without a weight counts once (weight 1). With
    method "lra" the residual terms keep their fixed weights; every other term starts at its
    fixed weight (1 if none) and moves by `update`, except a term weighted 0, which stays
    switched off. Adapt only during Adam: L-BFGS needs a fixed objective, so the caller stops
    calling `update` there and the weights stay frozen at their last values.

    Args:
        initial: fixed weight per term name (config `problem.weights`), finite and >= 0.
        method: "fixed" or "lra" (config `trainer.weighting`).
        every: Adam steps between LRA updates, >= 1 (config `trainer.weighting_every`).
        alpha: LRA moving-average rate, 0 < alpha <= 1: new = (1 - alpha) * old
            + alpha * estimate, so alpha = 1 takes each estimate as it is (config
            `trainer.weighting_alpha`).

    Raises:
        ConfigError: an argument is invalid; the message names its config key.
    """

    def __init__(
        self,
        initial: Mapping[str, float] | None = None,
        method: str = "fixed",
        every: int = 100,
        alpha: float = 0.1,
    ) -> None:
        if method not in WEIGHTINGS:
            raise ConfigError(
                f"trainer.weighting={method!r} is unknown; choose one of {', '.join(WEIGHTINGS)}"
            )
        require_int("trainer.weighting_every", every, 1)
        if not is_finite_number(alpha) or not 0 < alpha <= 1:
            raise ConfigError(
                f"trainer.weighting_alpha must be a number in (0, 1], got {alpha!r}; "
                "0.1 is the usual choice (new = 0.9 * old + 0.1 * estimate)"
            )
        self.method, self.every, self.alpha = method, every, float(alpha)
        self._weights = _checked_weights(initial or {})
        self._seen = list(self._weights)  # term names in first-seen order, for `row`

    def total(self, terms: Mapping[str, torch.Tensor]) -> torch.Tensor:
        """The scalar loss sum_k weight_k * terms[k] (each term a 0-d tensor) with the current
        weights; with method "fixed" exactly `pinn.problem.loss.weighted_sum(terms, initial)`.

        Raises:
            ConfigError: a weight names a term not in `terms`.
        """
        self._see(terms)
        return weighted_sum(terms, self._weights)

    def update(
        self,
        terms: Mapping[str, torch.Tensor],
        parameters: Iterable[torch.Tensor],
        step: int,
        average: Callable[[list[torch.Tensor]], None] | None = None,
    ) -> bool:
        """One LRA update when method is "lra" and `step % every == 0`; whether it happened.

        `terms` are the step's 0-d loss terms, still attached to their graph; their gradients
        in `parameters` come from `torch.autograd.grad(..., retain_graph=True)`, so the caller
        can still call `total(terms).backward()` afterwards, and no parameter's `.grad` is
        touched. Costs one backward pass for the residual plus one per adapted term.
        `average` (data-parallel training: `World.average_`) makes each gradient the mean
        over the processes before it is measured, so every process moves its weights alike.

        Raises:
            ConfigError: method "lra" but no residual term ("pde" or "pde_<key>") in `terms`.
        """
        if self.method != "lra" or step % self.every:
            return False
        self._see(terms)
        adapted = [
            name for name in terms if not is_residual(name) and self._weights.get(name, 1.0) > 0
        ]
        if not adapted:
            return False
        residual = {name: value for name, value in terms.items() if is_residual(name)}
        if not residual:
            raise ConfigError(
                f"trainer.weighting=lra scales each term against the PDE residual, but the loss "
                f"terms {list(terms)} have none named 'pde' or 'pde_<key>'; use "
                "trainer.weighting=fixed"
            )
        fixed = {name: self._weights[name] for name in residual if name in self._weights}
        parameters = [p for p in parameters if p.requires_grad]
        if not parameters:
            raise ValueError("LossWeights.update needs parameters that require grad; got none")

        def abs_gradient(loss: torch.Tensor) -> torch.Tensor:
            return _abs_gradient(loss, parameters, average)

        residual_max = abs_gradient(weighted_sum(residual, fixed)).max().item()
        for name in adapted:
            term_mean = abs_gradient(terms[name]).mean().item()
            estimate = residual_max / term_mean if term_mean > 0 else math.inf
            # A term with no gradient (mean 0) gives no estimate to move towards, and a
            # non-finite one would poison the loss: keep the old weight in both cases.
            if math.isfinite(estimate):
                old = self._weights.get(name, 1.0)
                self._weights[name] = (1 - self.alpha) * old + self.alpha * estimate
        return True

    def current(self, names: Iterable[str] | None = None) -> dict[str, float]:
        """The weight of each term in `names` (default: every term configured or seen)."""
        names = self._seen if names is None else names
        return {name: self._weights.get(name, 1.0) for name in names}

    def row(self) -> dict[str, float]:
        """{"weight_<term>": weight} for every term configured or seen, for a history row."""
        return {f"{WEIGHT_PREFIX}{name}": weight for name, weight in self.current().items()}

    def state_dict(self) -> dict[str, Any]:
        """The adapted weights as plain strings and floats (loads with `weights_only=True`)."""
        return {"method": self.method, "weights": dict(self._weights), "seen": list(self._seen)}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Continue from `state_dict()`'s result: the next update is the uninterrupted one's.

        Raises:
            ConfigError: the state was written with another `trainer.weighting`.
        """
        if state["method"] != self.method:
            raise ConfigError(
                f"the saved loss weights come from trainer.weighting={state['method']}, this "
                f"run has trainer.weighting={self.method}; resume with the saved setting"
            )
        self._weights = _checked_weights(state["weights"])
        self._seen = list(state["seen"])

    def _see(self, terms: Iterable[str]) -> None:
        self._seen.extend(name for name in terms if name not in self._seen)


def _abs_gradient(
    loss: torch.Tensor,
    parameters: list[torch.Tensor],
    average: Callable[[list[torch.Tensor]], None] | None = None,
) -> torch.Tensor:
    """|d loss / d theta| of a 0-d `loss`, every parameter entry flattened: (P,) float64.

    Parameters the loss does not reach give zeros, as does a loss with no graph at all.
    `average` (in place) replaces the gradient by its mean over processes before the abs.
    """
    if loss.requires_grad:
        grads = torch.autograd.grad(loss, parameters, retain_graph=True, allow_unused=True)
    else:
        grads = [None] * len(parameters)
    flat = [
        (torch.zeros_like(p) if g is None else g.detach()).reshape(-1)
        for g, p in zip(grads, parameters)
    ]
    gradient = torch.cat(flat)
    if average is not None:
        average([gradient])
    return gradient.abs().to(torch.float64)


def _checked_weights(weights: Mapping[str, float]) -> dict[str, float]:
    for name, weight in weights.items():
        if not is_finite_number(weight) or weight < 0:
            raise ConfigError(
                f"problem.weights.{name} must be a finite number >= 0, got {weight!r}"
            )
    return {str(name): float(weight) for name, weight in weights.items()}
