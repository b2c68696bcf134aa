"""KFAC for PINN losses: Gauss-Newton steps whose curvature is, per nn.Linear layer, a sum of
Kronecker products (Dangel, Müller & Zeinhofer, "Kronecker-Factored Approximate Curvature for
Physics-Informed Neural Networks", NeurIPS 2024).

    curvature_of = LayerCurvatureRows(rows_of, settings.approximation, layers)
    def evaluate(generator, factors=True):   # a generator: an iterate's rows, else a trial's
        return curvature_of.at(batch, generator, factors), info
    optimizer = KFAC(params, layers_params, settings)
    done, why = optimizer.iterate(evaluate, 20, on_iteration)

One iteration, on loss = sum(rows**2) with g = J^T r and G = J^T J:

1. Factors. Each layer's Kronecker factors, per group of terms (the PDE's, the conditions'), from
   the rows at the current parameters (`pinn.training.rows.layer_curvature`, "expand" or
   "reduce"), enter exponential moving averages: F <- ema F + (1 - ema) F_new, the first
   iteration's taken as they are (no bias towards zero). So do the diagonal estimates of the
   parameters without factors. Every `factors_every`-th iteration only (Martens & Grosse's
   period T3): those between keep the last factors and skip the tapped pass and the backward
   passes that make them, about two thirds of an iteration.
2. Direction. Delta = -K^-1 g, K block diagonal: a layer's block B1 ⊗ A1 + B2 ⊗ A2 (its weight
   and bias together, the bias as an input of 1) plus a Tikhonov term t I split between the
   factors of each pair (`pinn.training.optim.kronecker.damp`), solved exactly
   (`kronecker_solve`); the other parameters' block diag(estimate) + t. The damping t is
   relative: `damping` times the mean diagonal entry of the block (per layer), so it does not
   depend on the loss's scale or the layer's width (`pinn.training.optim.kfac_curvature`).
3. Step. "kfac_star" (the paper's KFAC*, after Martens & Grosse 2015 §7): the update
   u = alpha Delta + mu delta, delta the previous update, minimising the exact quadratic model
   |r + J u|^2 + u^T diag(t) u over (alpha, mu), a 2 x 2 system from the products J Delta and
   J delta (matrix-free, `MatrixFreeJacobian`); at the first iteration only alpha. "line_search":
   u = Delta. Then the lengths 1, 1/2, ..., 1/2^(n-1) of u (`line_search`): "kfac_star" takes
   the first that lowers the loss (its length is the model's, so mostly 1, one evaluation: on
   `poisson` as accurate as the best of the grid and two to three times faster), "line_search" the
   lowest of them all, as the Gauss-Newton phase does; when none lowers the loss the
   parameters stay, the damping is raised tenfold and the step solved again (the factors
   kept), `max_tries` times in a row before STALLED; after an accepted step it falls back by
   tenths to `damping`.

Parameters without factors (a FactorizedLinear's, PirateNet's gates, the problem's unknowns, a
user's own kinds of layer) get a diagonal block: a Hutchinson estimate of diag(J^T J), one
draw of signs per term and iteration (free: the factors' backward passes give it), averaged by
the same moving average. They train, more slowly than with factors where they are many.

Why a phase of its own, not a `trainer.gauss_newton.solver`: Levenberg-Marquardt's solvers
solve the damped normal equations of the iteration's rows and keep nothing but mu; KFAC keeps
moving averages of its factors and its previous update across iterations, never forms J or
its normal equations, and chooses its step from the exact model along two directions. Its
settings (approximation, ema, step rule) would be noise in the block of a solver that ignores
them, and the rules the phases share (a line search, refusals, the plateau, redraws) are small.

`state_dict` holds the factors, the diagonal estimates, the previous update, the damping and the
counters: a resumed run takes the same steps. One process only (no torchrun).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import torch

from pinn.training.optim.grid_search import best_length
from pinn.training.optim.kfac_curvature import KroneckerCurvature
from pinn.training.optim.row_steps import RowSteps

if TYPE_CHECKING:
    from pinn.training.phases.kfac import KFACSettings

STEP_RULES = ("kfac_star", "line_search")
# layer name -> (its weight's index among the parameters, its bias's or None)
LayerParams = dict[str, tuple[int, int | None]]


class KFAC(RowSteps):
    """KFAC over `params`, one `iterate` call per chunk of iterations.

    Args:
        params: the tensors to optimise, in the order of the rows' Jacobian's columns.
        layers: {layer: (weight index, bias index or None)} into `params`, for the factored
            nn.Linear layers; every other parameter gets the diagonal block.
        settings: `KFACSettings` (the block `trainer.kfac`).
        dtype: of the factors and solves (float64).
    """

    title = "KFAC"

    def __init__(
        self,
        params: Iterable[torch.Tensor],
        layers: LayerParams,
        settings: KFACSettings,
        dtype: torch.dtype = torch.float64,
    ):
        self.params, self.layers, self.settings = list(params), dict(layers), settings
        self.dtype = dtype
        self.stall_window, self.stall_decrease = settings.stall_window, settings.stall_decrease
        self.curvature = KroneckerCurvature([p.shape for p in self.params], self.layers, dtype)
        self.previous: torch.Tensor | None = None
        self.raised = 1.0  # the damping over `settings.damping`, after refusals
        self.iterations = self.evaluations = self.refusals = 0
        self.recent: list[float] = []
        self.last_length = self.last_ratio = self.last_damping = math.nan
        self.last_alpha = self.last_momentum = math.nan

    # ---- state ---------------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        return {
            **self.curvature.state_dict(),
            "previous": self.previous,
            "raised": self.raised,
            **self._counters(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self._load_counters(state)
        self.curvature.load_state_dict(state)
        self.previous = state["previous"]
        self.raised = state["raised"]

    # ---- iterations ----------------------------------------------------------------------

    def step(self, evaluate: Callable) -> tuple[torch.Tensor, Any] | None:
        """One iteration: (the new loss, its info), or None when every try was refused."""
        self.evaluations += 1
        fresh = (self.evaluations - 1) % self.settings.factors_every == 0
        rows, _ = evaluate(torch.Generator().manual_seed(self.evaluations), fresh)
        r = rows.values.detach().to(self.dtype)
        J, loss = rows.jacobian, r.dot(r)
        g = J.rmv(r)
        if fresh:
            self.curvature.average(rows.factors, rows.diagonal, self.settings.ema)
        start = self._flat_params()
        for _ in range(self.settings.max_tries + 1):
            tikhonov = self.curvature.tikhonov(self.settings.damping * self.raised)
            direction = -self.curvature.precondition(g, tikhonov)
            update = direction
            if self.settings.step_rule == "kfac_star":
                update = self._kfac_star(J, g, direction, tikhonov)
            length, new_loss, info = self._search(evaluate, start, update, loss)
            if length > 0:
                self.previous = length * update
                self.last_length, self.last_ratio = length, (new_loss / loss).item()
                self.last_damping = self.settings.damping * self.raised
                self.raised = max(self.raised / 10, 1.0)
                self.iterations += 1
                return new_loss.to(rows.values.dtype), info
            self._set_params(start)
            self.refusals += 1
            self.raised *= 10
        return None

    # ---- the step ------------------------------------------------------------------------

    def _kfac_star(self, J, g, direction, tikhonov) -> torch.Tensor:
        """alpha Delta + mu delta minimising |r + J u|^2 + u^T diag(t) u (module docstring):
        the 2 x 2 system solved in closed form (in Python floats, so that no LAPACK call's
        memory alignment decides its last bits: a resumed run takes the same steps), alpha
        alone at the first iteration or when delta is parallel to Delta."""
        t = self.curvature.damping_vector(tikhonov)
        product = J.mv(direction)
        a11 = (product.dot(product) + (t * direction).dot(direction)).item()
        s1 = g.dot(direction).item()
        alpha, mu = -s1 / a11, 0.0
        if self.previous is not None:
            previous = J.mv(self.previous)
            a12 = (product.dot(previous) + (t * direction).dot(self.previous)).item()
            a22 = (previous.dot(previous) + (t * self.previous).dot(self.previous)).item()
            s2 = g.dot(self.previous).item()
            determinant = a11 * a22 - a12 * a12
            if determinant > 1e-12 * a11 * a22:
                alpha = (-s1 * a22 + s2 * a12) / determinant
                mu = (-s2 * a11 + s1 * a12) / determinant
        self.last_alpha, self.last_momentum = alpha, mu
        update = alpha * direction
        return update if mu == 0.0 else update + mu * self.previous

    def _search(self, evaluate, start, update, loss):
        """(the length taken, the loss there, its info) of the lengths 1, 1/2, ..., 1/2^(n-1)
        of `update` (`pinn.training.optim.grid_search`): the first lower loss for "kfac_star",
        the lowest for "line_search"; length 0 when none lowers it."""

        def measure():
            rows, info = evaluate(None)
            values = rows.values.detach().to(self.dtype)
            return values.dot(values), info

        def move(length: float) -> None:
            self._set_params(start + length * update)

        backtrack = self.settings.step_rule == "kfac_star"  # its length is the model's
        return best_length(move, measure, self.settings.line_search, loss, first=backtrack)
