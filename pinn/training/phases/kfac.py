"""The KFAC phase: Kronecker-factored Gauss-Newton steps (`pinn.training.optim.kfac`, where the
reasons for a phase of its own are) on the last points drawn (or redrawn every
`resample_every` iterations, refined by residual every `refine_every`: `Phase.redraw_if_due`), a
history row per iteration, stopping early when no damping lowers the loss or on a plateau."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

from pinn.errors import ConfigError, is_finite_number, require_int
from pinn.problem.columns import GAUSS_NEWTON_PREFIX
from pinn.settings import setting
from pinn.training.optim.kfac import KFAC, STEP_RULES
from pinn.training.phases.base import Phase, check_stop_keys
from pinn.training.rows.layer_curvature import (
    APPROXIMATIONS,
    LayerCurvatureRows,
    factored_layers,
)
from pinn.training.rows.residual_rows import ResidualRows, parameters

if TYPE_CHECKING:
    from pinn.training.phases.parts import Parts
    from pinn.training.state import RunState


@dataclass
class KFACSettings:
    """The block `trainer.kfac`.

    Attributes:
        steps: accepted KFAC iterations (>= 0).
        approximation: "expand" or "reduce": how a layer's positions (value, derivatives) enter
            its factors (`pinn.training.rows.layer_curvature`).
        damping: the Tikhonov term of each layer's block, relative to the block's mean
            diagonal entry (> 0; raised tenfold when no step lowers the loss, back after). Split
            between the factors, it also adds cross terms of about sqrt(damping) relative to
            the block: hence the small default (on `poisson` 1e-11 to 1e-9 did best, 1e-3
            ten to a hundred times worse).
        ema: the factors' moving average, F <- ema F + (1 - ema) F_new, in [0, 1); 0 (each
            iteration's own factors) did better on `poisson` than the paper's 0.95, on fixed
            points and on points redrawn every iteration, and about as well on
            `inverse_poisson` (docs, "KFAC").
        factors_every: iterations from one evaluation of the factors to the next (>= 1); those
            between keep the last factors and cost about a third as much. On `beltrami` 2
            reached 3.0e-4 in 197 s of training where 1 took 252 s (150 iterations each).
        step_rule: "kfac_star" (the step and the previous update combined by the exact
            quadratic model, the paper's KFAC*) or "line_search" (the KFAC direction alone).
        line_search: step lengths 1, 1/2, ..., 1/2^(n-1) tried along each step (>= 1):
            "kfac_star" takes the first that lowers the loss, "line_search" the best of them.
        max_tries: refused steps in a row, each damping more, before the phase stops (>= 1).
        stall_window, stall_decrease: stop once the last `stall_window` iterations together
            lowered the loss by less than `stall_decrease` of it (a window of 0 = never).
        resample_every: iterations between redraws of the training points (0 = never); the
            factors' averages are kept across redraws.
        refine_every: iterations between refinements of the points by their residual (0 =
            never).
    """

    steps: int = setting(100, "accepted iterations (0 = none)")
    approximation: str = setting(
        "expand", "expand or reduce: how a layer's value and derivative inputs form its factors"
    )
    damping: float = setting(
        1e-10, "Tikhonov damping of each layer's block, relative to its mean diagonal entry"
    )
    ema: float = setting(
        0.0, "moving average of the factors: F = ema F + (1 - ema) F_new (0: each iteration's)"
    )
    factors_every: int = setting(
        1, "iterations between evaluations of the factors (those between keep the last ones)"
    )
    step_rule: str = setting(
        "kfac_star", "kfac_star (step and momentum from the exact quadratic model) or line_search"
    )
    line_search: int = setting(
        8,
        "lengths 1, 1/2, ..., 1/2^(n-1): kfac_star takes the first that lowers the loss, "
        "line_search the lowest",
    )
    max_tries: int = setting(10, "refused steps in a row (each damping more) before it stops")
    stall_window: int = setting(20, "stop once this many iterations together ...")
    stall_decrease: float = setting(
        1e-3, "... lowered the loss by less than this fraction (window 0 = never)"
    )
    resample_every: int = setting(
        0, "iterations between redraws of the training points (0 = never)"
    )
    refine_every: int = setting(
        0, "iterations between refinements of the points by residual (refinement.method; 0 = never)"
    )

    def __post_init__(self) -> None:
        check_stop_keys("kfac", self)
        require_int("trainer.kfac.max_tries", self.max_tries, minimum=1)
        require_int("trainer.kfac.line_search", self.line_search, minimum=1)
        require_int("trainer.kfac.factors_every", self.factors_every, minimum=1)
        if not (is_finite_number(self.damping) and self.damping > 0):
            raise ConfigError(
                f"trainer.kfac.damping must be a finite number > 0, got {self.damping!r}"
            )
        if not (is_finite_number(self.ema) and 0 <= self.ema < 1):
            raise ConfigError(f"trainer.kfac.ema must be in [0, 1), got {self.ema!r}")
        for key, known in (("approximation", APPROXIMATIONS), ("step_rule", STEP_RULES)):
            if getattr(self, key) not in known:
                raise ConfigError(
                    f"trainer.kfac.{key} must be one of {', '.join(known)}, "
                    f"got {getattr(self, key)!r}"
                )


class KFACPhase(Phase):
    """KFAC for what is left of `settings.steps`, in chunks of `trainer.log_every` iterations
    with a checkpoint maybe between them."""

    name = "kfac"
    title = "KFAC"
    settings_type = KFACSettings
    deterministic = True
    budget_free = True

    def __init__(self, settings: KFACSettings):
        super().__init__(settings)
        self.optimizer: KFAC | None = None

    def check(self, state: RunState) -> None:
        """Refuse torchrun, and a model the Taylor pass cannot run (both before training)."""
        if state.world.size > 1:
            raise ConfigError(
                "trainer.phases: kfac runs on one process; under torchrun use gauss_newton"
            )
        factored_layers(state.model, _probe(state))

    def run(self, state: RunState, parts: Parts, saved: dict[str, Any] | None) -> None:
        settings = self.settings
        problem, model, causal = parts.loss.problem, state.model, state.causal
        layers = factored_layers(model, _probe(state))
        rows_of = ResidualRows(
            problem,
            model,
            state.engine,
            state.weights.current(),
            causal=causal,
            point_weights=state.point_weights,
        )
        optimizer, curvature_of = make_kfac(rows_of, layers, settings)
        if saved is not None:
            optimizer.load_state_dict(saved["optimizer"])
        self.optimizer = optimizer

        def evaluate(generator: torch.Generator | None, factors: bool = True):
            # A generator: an iterate's rows (`LayerCurvatureRows.at`); None: a trial step's.
            at_iterate = generator is not None
            return self.rows_at_iterate(
                causal, at_iterate, lambda: curvature_of.at(state.batch, generator, factors)
            )

        def columns() -> dict[str, float]:
            return {
                GAUSS_NEWTON_PREFIX + "length": optimizer.last_length,
                GAUSS_NEWTON_PREFIX + "damping": optimizer.last_damping,
            }

        self.run_row_steps(state, parts, optimizer, evaluate, columns)

    def state_dict(self) -> dict[str, Any] | None:
        return None if self.optimizer is None else {"optimizer": self.optimizer.state_dict()}


def make_kfac(
    rows_of: ResidualRows, layers: list[str], settings: KFACSettings
) -> tuple[KFAC, LayerCurvatureRows]:
    """The KFAC optimiser over the rows' parameters and the rows with the `layers`' factors."""
    params = parameters(rows_of.model, rows_of.problem)
    curvature_of = LayerCurvatureRows(rows_of, settings.approximation, layers)
    return KFAC(params, layer_params(rows_of.model, params, layers), settings), curvature_of


def layer_params(model, params: list, layers: list[str]) -> dict[str, tuple[int, int | None]]:
    """{layer: (its weight's index in `params`, its bias's or None)}."""
    index = {id(p): i for i, p in enumerate(params)}
    out = {}
    for name in layers:
        module = model.get_submodule(name)
        bias = None if module.bias is None else index[id(module.bias)]
        out[name] = (index[id(module.weight)], bias)
    return out


def _probe(state: RunState) -> torch.Tensor:
    """(2, d) points like the run's, to trace the model at."""
    points = state.points
    return torch.zeros(2, len(points.domain.lower), dtype=points.dtype, device=points.device)
