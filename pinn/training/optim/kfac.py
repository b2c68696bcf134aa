"""KFAC for PINN losses: Gauss-Newton steps whose curvature is, per nn.Linear layer, a sum of
Kronecker products (Dangel, Müller & Zeinhofer, "Kronecker-Factored Approximate Curvature for
Physics-Informed Neural Networks", NeurIPS 2024).

    curvature_of = LayerCurvatureRows(rows_of, settings.approximation, layers)
    def evaluate(generator):             # a generator: the curvature's evaluation, else a trial
        rows = curvature_of(batch, generator) if generator else rows_of(batch)
        return rows, info
    optimizer = KFAC(params, layers_params, settings)
    done, why = optimizer.iterate(evaluate, 20, on_iteration)

One iteration, on loss = sum(rows**2) with g = J^T r and G = J^T J:

1. Factors. Each layer's Kronecker factors, per group of terms (the PDE's, the conditions'), from
   the rows at the current parameters (`pinn.training.rows.layer_curvature`, "expand" or
   "reduce"), enter exponential moving averages: F <- ema F + (1 - ema) F_new, the first
   iteration's taken as they are (no bias towards zero). So do the diagonal estimates of the
   parameters without factors.
2. Direction. Delta = -K^-1 g, K block diagonal: a layer's block B1 ⊗ A1 + B2 ⊗ A2 (its weight
   and bias together, the bias as an input of 1) plus a Tikhonov term t I split between the
   factors of each pair (`pinn.training.optim.kronecker.damp`), solved exactly
   (`kronecker_solve`); the other parameters' block diag(estimate) + t. The damping t is
   relative: `damping` times the mean diagonal entry of the block (per layer), so it does not
   depend on the loss's scale or the layer's width.
3. Step. "kfac_star" (the paper's KFAC*, after Martens & Grosse 2015 §7): the update
   u = alpha Delta + mu delta, delta the previous update, minimising the exact quadratic model
   |r + J u|^2 + u^T diag(t) u over (alpha, mu), a 2 x 2 system from the products J Delta and
   J delta (matrix-free, `MatrixFreeJacobian`); at the first iteration only alpha. "line_search":
   u = Delta. Either way the lengths 1, 1/2, ..., 1/2^(n-1) of u are tried (`line_search`) and
   the lowest loss taken, as the Gauss-Newton phase does; when none lowers the loss the
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

from pinn.errors import CheckpointError
from pinn.training.optim.grid_search import best_length
from pinn.training.optim.kronecker import damp, kronecker_solve
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
        self.offsets = [0]
        for p in self.params:
            self.offsets.append(self.offsets[-1] + p.numel())
        covered = {i for pair in self.layers.values() for i in pair if i is not None}
        self.others = [i for i in range(len(self.params)) if i not in covered]
        self.factors: dict[str, dict[str, tuple[torch.Tensor, torch.Tensor]]] = {}
        self.diagonal: torch.Tensor | None = None
        self.previous: torch.Tensor | None = None
        self.raised = 1.0  # the damping over `settings.damping`, after refusals
        self.iterations = self.evaluations = self.refusals = 0
        self.recent: list[float] = []
        self.last_length = self.last_ratio = self.last_damping = math.nan
        self.last_alpha = self.last_momentum = math.nan

    # ---- state ---------------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        return {
            "factors": {g: {k: list(v) for k, v in f.items()} for g, f in self.factors.items()},
            "diagonal": self.diagonal,
            "previous": self.previous,
            "raised": self.raised,
            "iterations": self.iterations,
            "evaluations": self.evaluations,
            "refusals": self.refusals,
            "recent": list(self.recent),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        missing = sorted(set(self.state_dict()) - set(state))
        if missing:
            raise CheckpointError(
                f"this KFAC state lacks {', '.join(missing)}: it was written by another pinn, "
                "which this one cannot resume: start the run again without resume="
            )
        self.factors = {g: {k: tuple(v) for k, v in f.items()} for g, f in state["factors"].items()}
        self.diagonal, self.previous = state["diagonal"], state["previous"]
        self.raised = state["raised"]
        self.iterations, self.evaluations = state["iterations"], state["evaluations"]
        self.refusals, self.recent = state["refusals"], list(state["recent"])

    # ---- iterations ----------------------------------------------------------------------

    def step(self, evaluate: Callable) -> tuple[torch.Tensor, Any] | None:
        """One iteration: (the new loss, its info), or None when every try was refused."""
        self.evaluations += 1
        rows, _ = evaluate(torch.Generator().manual_seed(self.evaluations))
        r = rows.values.detach().to(self.dtype)
        J, loss = rows.jacobian, r.dot(r)
        g = J.rmv(r)
        self._average_factors(rows.factors, rows.diagonal.to(self.dtype))
        start = self._flat_params()
        for _ in range(self.settings.max_tries + 1):
            tikhonov = self._tikhonov()
            direction = -self._precondition(g, tikhonov)
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

    # ---- curvature -----------------------------------------------------------------------

    def _average_factors(self, factors: dict, diagonal: torch.Tensor) -> None:
        """The moving averages of the factors and of the others' diagonal, by `ema`."""
        ema = self.settings.ema
        for group, layers in factors.items():
            held = self.factors.setdefault(group, {})
            for name, pair in layers.items():
                pair = tuple(f.detach().to(self.dtype) for f in pair)
                old = held.get(name)
                held[name] = pair if old is None else _blend(old, pair, ema)
        others = diagonal[self._other_columns()]
        old = self.diagonal
        self.diagonal = others if old is None else ema * old + (1 - ema) * others

    def _other_columns(self) -> torch.Tensor:
        """The flat indices of the parameters without factors."""
        parts = [torch.arange(self.offsets[i], self.offsets[i + 1]) for i in self.others]
        return torch.cat(parts) if parts else torch.zeros(0, dtype=torch.long)

    def _tikhonov(self) -> dict[str | None, float]:
        """{layer: t} and, under None, the others': `damping` (raised after refusals) times
        the mean diagonal entry of the block."""
        damping = self.settings.damping * self.raised
        out = {}
        for name in self.layers:
            pairs = [layers[name] for layers in self.factors.values() if name in layers]
            scale = sum(A.diagonal().mean() * B.diagonal().mean() for A, B in pairs)
            out[name] = damping * float(scale) + torch.finfo(self.dtype).tiny
        if self.diagonal is not None and self.diagonal.numel():
            out[None] = damping * self.diagonal.mean().item() + torch.finfo(self.dtype).tiny
        return out

    def _precondition(self, g: torch.Tensor, tikhonov: dict) -> torch.Tensor:
        """(P,) the damped K^-1 g; zero for a layer without factors yet, which no row has
        reached (its gradient is zero too: PirateNet's blocks while their α are 0)."""
        out = torch.zeros_like(g)
        for name, (weight, bias) in self.layers.items():
            block = self._block(g, weight, bias)
            pairs = [layers[name] for layers in self.factors.values() if name in layers]
            if not pairs:
                continue
            share = tikhonov[name] / len(pairs)
            solved = kronecker_solve([damp(A, B, share) for A, B in pairs], block)
            self._unblock(out, solved, weight, bias)
        columns = self._other_columns()
        if columns.numel():
            out[columns] = g[columns] / (self.diagonal + tikhonov[None])
        return out

    def _block(self, flat: torch.Tensor, weight: int, bias: int | None) -> torch.Tensor:
        """(out, in [+ 1]) a layer's entries of the flat vector: [W | b]."""
        shape = self.params[weight].shape
        block = flat[self.offsets[weight] : self.offsets[weight + 1]].view(shape)
        if bias is None:
            return block
        return torch.cat([block, flat[self.offsets[bias] : self.offsets[bias + 1]][:, None]], 1)

    def _unblock(self, flat: torch.Tensor, block: torch.Tensor, weight: int, bias: int | None):
        columns = self.params[weight].shape[1]
        flat[self.offsets[weight] : self.offsets[weight + 1]] = block[:, :columns].reshape(-1)
        if bias is not None:
            flat[self.offsets[bias] : self.offsets[bias + 1]] = block[:, columns]

    def _damping_vector(self, tikhonov: dict) -> torch.Tensor:
        """(P,) each parameter's Tikhonov term."""
        out = torch.zeros(self.offsets[-1], dtype=self.dtype)
        for name, pair in self.layers.items():
            for i in pair:
                if i is not None:
                    out[self.offsets[i] : self.offsets[i + 1]] = tikhonov[name]
        out[self._other_columns()] = tikhonov.get(None, 0.0)
        return out

    # ---- the step ------------------------------------------------------------------------

    def _kfac_star(self, J, g, direction, tikhonov) -> torch.Tensor:
        """alpha Delta + mu delta minimising |r + J u|^2 + u^T diag(t) u (module docstring):
        the 2 x 2 system solved in closed form (in Python floats, so that no LAPACK call's
        memory alignment decides its last bits: a resumed run takes the same steps), alpha
        alone at the first iteration or when delta is parallel to Delta."""
        t = self._damping_vector(tikhonov)
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
        """(the length taken, the loss there, its info): the lowest loss of the lengths 1, 1/2,
        ..., 1/2^(n-1) of `update` (`pinn.training.optim.grid_search`), length 0 when none
        lowers it."""

        def measure():
            rows, info = evaluate(None)
            values = rows.values.detach().to(self.dtype)
            return values.dot(values), info

        def move(length: float) -> None:
            self._set_params(start + length * update)

        return best_length(move, measure, self.settings.line_search, loss)


def _blend(old: tuple, new: tuple, ema: float) -> tuple:
    return tuple(ema * o + (1 - ema) * n for o, n in zip(old, new))
