"""Levenberg-Marquardt: damped Gauss-Newton steps on a sum of squares of residual rows.

    rows_of = ResidualRows(problem, model, engine, weights)     # pinn.training.rows.residual_rows

    def evaluate(jacobian):
        rows = rows_of(batch, jacobian)
        return rows.values, rows.jacobian, rows.terms

    optimizer = LevenbergMarquardt(parameters(model, problem), world=world)
    done, why = optimizer.iterate(evaluate, 20, on_iteration)

`evaluate(jacobian)` returns `(rows, J, info)` at the parameters' current values: this
process's (R,) residual rows, their Jacobian with respect to the flat parameters and what to
report with them (`ResidualRows` gives all three). `jacobian` is False (J may be None: a line
search's trial), True (J the (R, P) matrix) or "products" (asked for by the "cg" solver, which
needs only J v and J^T u: J may be a `MatrixFreeJacobian` of
`pinn.training.optim.jacobian_products`, or the matrix). The loss is sum(rows**2), averaged over
the processes (`World.average_`).
`on_iteration(loss, info)` is called after each accepted step with the parameters at its end,
their loss (over all processes) and the `info` of that evaluation (this process's: a phase
averages per-term values itself, as `World.average_loss` does, before writing its history row).

One iteration: with g = J^T r and A = J^T J, solve the damped normal equations
(A + mu I) delta = -g for the step; the model of the loss along it, |r + J delta|^2, predicts a
decrease. Plain Levenberg-Marquardt (`line_search=0`) takes the step only if the loss drops, and
the gain ratio rho = actual / predicted moves mu as a trust region's radius (after a step:
mu / 10 for rho > 0.75, mu for rho > 0.25, 2 mu below). With a line search (`line_search=n`)
the lengths 1, 1/2, ..., 1/2^(n-1) of the step are tried and the lowest loss taken, mu staying
small (it falls back by tenths to its first value after refusals), or, with
`adapt_damping=True`, moved by the length taken (1/8 or less: mu / length; the full step:
mu / 4, not below its first value; 1/2 and 1/4: mu kept), so that a first mu too small for
the problem is raised to where the steps are nearly whole: on a PINN this is the better
rule, its Gauss-Newton direction being good and its length too long (the Poisson problem, 921
parameters, 1000 points, from rel_l2 2.2e-2: 2.5e-6 after 150 iterations at damping 1e-8 with a
12-length search, against 3.5e-5 after 40 and a loss falling 8 % an iteration with the trust
region). After a refusal (no length lowers the loss) mu is multiplied by nu, nu doubling with
each refusal in a row (Nielsen 1999); after `max_tries` refusals in a row, STALLED. The first mu
is `damping` times the largest diagonal entry of A. `scaling="diagonal"` damps with mu diag(A)
instead of mu I (Marquardt's scaling, invariant to the parameters' scales; not with the "rows"
solver).

Solvers (`solver`): "parameters", Cholesky of the (P, P) matrix A + mu I; "rows", when there are
fewer rows than parameters, Cholesky of the (R, R) matrix J J^T + mu I, (J J^T + mu I) y = -r,
delta = J^T y (the same step: (J^T J + mu I) J^T = J^T (J J^T + mu I)); "cg", conjugate
gradients with a Jacobi preconditioner on v -> J^T (J v) + mu v, matrix-free: it takes only
products of J, never forming an R x P, P x P or R x R matrix (for networks too large for them),
and the preconditioner and the first mu come from a Hutchinson estimate of diag(A) (`probes`
draws, seeded by the evaluation count, so a resumed run draws the same). With
`preconditioner="nystrom"` the conjugate gradients are preconditioned instead by a randomised
Nyström approximation of A from `sketch_size` products J^T (J omega) per Jacobian
(`pinn.training.optim.nystrom`, seeded the same way): for the ill-conditioning along directions
mixing the parameters that the diagonal misses, and for a large R as well (the row-space system
has the same nonzero spectrum: the module says why one solver serves both). "auto": "cg" above
`dense_limit` parameters (decided from P before evaluating), else "rows" when R < P on one
process, else "parameters". Under torchrun every reduction (J^T J, J^T r, the losses, each
conjugate-gradient product) goes through `world.average_`, so N processes with equal shares of
the rows take the step one process with all of them would; with N = 1 it is the plain
computation. "rows" needs every row in one place: one process only.

Precision: rows, Jacobian and normal equations are computed in `dtype` (float64 by default).
A float32 model's rows and Jacobian are cast up, the equations solved in float64, and the step
rounded to float32 when added: the loss then stops where float32 rows stop (about 1e-7 of the
residual's scale), orders of magnitude above a float64 run's floor.

`state_dict` holds mu, the factor of the next refusal and the counters: a resumed run takes the
same steps.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import torch

from pinn.errors import ConfigError, require_int
from pinn.training.distributed import World
from pinn.training.optim.damped_solves import cholesky_solve, conjugate_gradient
from pinn.training.optim.grid_search import best_length
from pinn.training.optim.jacobian_products import DenseJacobian
from pinn.training.optim.nystrom import NystromSketch
from pinn.training.optim.row_steps import STALLED, RowSteps, plateau_reason  # noqa: F401

if TYPE_CHECKING:  # the settings' module runs this algorithm: imported for the hints only
    from pinn.training.phases.gauss_newton import GaussNewtonSettings

SOLVERS = ("auto", "parameters", "rows", "cg")
PRECONDITIONERS = ("jacobi", "nystrom")  # of the "cg" solver
SKETCH_STREAM = 1 << 32  # the Nyström draws' seeds: the evaluation count plus this (not probes')
SHORT_STEP = 1 / 8  # a line search's length at or below which mu is raised (`_accept`)

# evaluate(jacobian) -> (rows (R,), J (R, P) or None, info), at the current parameters.
Evaluate = Callable[[bool], tuple[torch.Tensor, "torch.Tensor | None", Any]]


class LevenbergMarquardt(RowSteps):
    """Levenberg-Marquardt over `params`, one `iterate` call per chunk of iterations.

    Args:
        params: the tensors to optimise, in the order of the Jacobian's columns.
        settings: `GaussNewtonSettings` (the block `trainer.gauss_newton`, checked when made):
            `damping`, the first mu relative to the largest diagonal entry of J^T J;
            `solver`, one of `SOLVERS` ("auto": "cg" above `dense_limit` parameters);
            `max_tries` refused steps in a row (each raising mu) before STALLED; the plateau
            rule `stall_window`, `stall_decrease`; `cg_iterations`, and the conjugate
            gradients' `preconditioner` ("jacobi" or "nystrom", of `sketch_size` products);
            `line_search`, 0 for plain Levenberg-Marquardt (the full step or none), n > 0 for
            the best of the step lengths 1, 1/2, ..., 1/2^(n-1) along each solved step (see
            `_search`); `adapt_damping`, with a line search, mu moved by the length it takes (see
            `_accept`) instead of held at its first value. `steps` and `resample_every` are
            the phase's, not the algorithm's.
        world: the processes sharing the rows (one by default).
        dtype: the dtype of the normal equations (float64).
        scaling: "identity" (mu I) or "diagonal" (mu diag(J^T J)).
        cg_tolerance: the conjugate-gradient solve's relative residual.
        probes: "cg" on a matrix-free Jacobian: the Rademacher draws estimating diag(J^T J).
    """

    title = "Levenberg-Marquardt"

    def __init__(
        self,
        params: Iterable[torch.Tensor],
        settings: GaussNewtonSettings,
        *,
        world: World | None = None,
        dtype: torch.dtype = torch.float64,
        scaling: str = "identity",
        cg_tolerance: float = 1e-12,
        probes: int = 8,
    ):
        solver = settings.solver
        if scaling not in ("identity", "diagonal"):
            raise ConfigError(f"scaling={scaling!r} is unknown; choose identity or diagonal")
        if solver == "rows" and scaling != "identity":
            raise ConfigError("solver=rows damps with mu I: use scaling=identity with it")
        if settings.preconditioner == "nystrom" and scaling != "identity":
            raise ConfigError(
                "preconditioner=nystrom preconditions J^T J + mu I: use scaling=identity with it"
            )
        self.world = world or World()
        if solver == "rows" and self.world.size > 1:
            raise ConfigError(
                "solver=rows needs every row on one process; under torchrun use "
                "solver=parameters, cg or auto"
            )
        self.params = list(params)
        self.relative_damping, self.solver = float(settings.damping), solver
        self.max_tries, self.dense_limit = settings.max_tries, settings.dense_limit
        self.stall_window, self.stall_decrease = settings.stall_window, settings.stall_decrease
        self.cg_iterations, self.cg_tolerance = settings.cg_iterations, cg_tolerance
        self.preconditioner, self.sketch_size = settings.preconditioner, settings.sketch_size
        self.dtype = dtype
        self.scaling = scaling
        self.line_search = settings.line_search
        require_int("probes", probes, minimum=1)
        self.probes = probes
        self.adapt_damping = settings.adapt_damping
        self.initial_mu: float | None = None
        self.mu: float | None = None  # set at the first iteration
        self.nu = 2.0  # the factor of mu at the next refusal
        self.iterations = self.evaluations = self.refusals = 0
        self.recent: list[float] = []
        # Of the last accepted step, to report: its solver, gain ratio and mu.
        self.last_solver, self.last_gain, self.last_damping = "", math.nan, math.nan
        self.last_length = math.nan
        self.last_ratio = math.nan  # its new loss over its iterate's (the plateau's measure)

    # ---- state ---------------------------------------------------------------------------

    @property
    def last_relative_damping(self) -> float:
        """The last accepted step's mu in the units of `damping`: relative to the largest
        diagonal entry of J^T J at the first iteration (NaN before any step)."""
        if not self.initial_mu:
            return self.last_damping  # 0 or NaN either way
        return self.relative_damping * self.last_damping / self.initial_mu

    def state_dict(self) -> dict[str, Any]:
        return {
            "mu": self.mu,
            "initial_mu": self.initial_mu,
            "nu": self.nu,
            **self._counters(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self._load_counters(state)
        self.mu, self.nu = state["mu"], state["nu"]
        self.initial_mu = state["initial_mu"]

    # ---- iterations ----------------------------------------------------------------------

    def step(self, evaluate: Evaluate) -> tuple[torch.Tensor, Any] | None:
        """One iteration: (the new loss, its info), or None when every try was refused."""
        matrix_free = self._matrix_free()
        rows, jacobian, _ = evaluate("products" if matrix_free else True)
        self.evaluations += 1
        r = rows.detach().to(self.dtype)
        J = jacobian if hasattr(jacobian, "rmv") else DenseJacobian(jacobian, self.dtype)
        g, loss = self._average(J.rmv(r), r.dot(r))
        probes = torch.Generator().manual_seed(self.evaluations)  # the same draws on resume
        diagonal = self._average(J.column_squares(self.probes, probes))[0]
        if self.mu is None:
            self.mu = self.relative_damping * diagonal.max().item()
            self.initial_mu = self.mu
        self.last_solver = "cg" if matrix_free else self._dense_solver(J.shape)
        normal = self._normal_matrix(J.matrix) if self.last_solver == "parameters" else None
        sketch = self._sketch(J, g) if self.last_solver == "cg" else None
        start = self._flat_params()
        for _ in range(self.max_tries + 1):
            delta = self._solve(J, r, g, normal, diagonal, sketch)
            if delta is None:  # the damped matrix was not positive definite: damp more
                self._refuse(diagonal)
                continue
            # J delta before the search moves the parameters (a matrix-free J's graph
            # computes at the values it was made at): the model's decrease at length t is
            # -(2 t g.delta + t^2 |J delta|^2).
            slope, curvature = g.dot(delta), self._average(J.mv(delta).square().sum())[0]
            length, new_loss, info = self._search(evaluate, start, delta, loss)
            if length > 0:
                predicted = -(2 * length * slope + length**2 * curvature)
                rho = ((loss - new_loss) / predicted).item()
                self.last_gain, self.last_damping, self.last_length = rho, self.mu, length
                self.last_ratio = (new_loss / loss).item()
                self._accept(rho, length)
                self.iterations += 1
                return new_loss.to(rows.dtype), info
            self._set_params(start)
            self._refuse(diagonal)
        return None

    def _search(self, evaluate, start, delta, loss):
        """(the step length taken, the loss there, its info); length 0 when none lowers the
        loss (the parameters are then left at the last length tried).

        Without a line search only the full step is tried. With one, every length of the grid
        1, 1/2, ..., 1/2^(line_search - 1) is tried and the lowest loss taken
        (`pinn.training.optim.grid_search`)."""

        def measure():
            new_rows, _, info = evaluate(False)
            self.evaluations += 1
            (new_loss,) = self._average(new_rows.detach().to(self.dtype).square().sum())
            return new_loss, info

        def move(length: float) -> None:
            self._set_params(start + length * delta)

        return best_length(move, measure, self.line_search, loss)

    def _accept(self, rho: float, length: float) -> None:
        """Move mu after an accepted step of gain ratio rho and length `length`.

        Plain Levenberg-Marquardt (a trust region): mu / 10 for rho > 0.75, mu for rho > 0.25,
        2 mu below. With a line search the step length does the trust region's work, so mu
        only falls back, by tenths, to where it started, after refusals raised it. With
        `adapt_damping` the length says how far off mu is: a short one (1/8 or less) means the
        step was long in directions the rows hardly fix, mu too small, so mu / length (x8,
        x16, ...); the full step means it may be too large, so mu / 4, down to where it
        started; 1/2 and 1/4 keep it."""
        if not self.line_search:
            self.mu *= 0.1 if rho > 0.75 else (1.0 if rho > 0.25 else 2.0)
        elif not self.adapt_damping:
            self.mu = max(self.mu * 0.1, self.initial_mu)
        elif length <= SHORT_STEP:
            self.mu /= length
        elif length == 1.0:
            self.mu = max(self.mu / 4, self.initial_mu)
        self.nu = 2.0

    def _refuse(self, diagonal: torch.Tensor) -> None:
        """Raise mu after a refused step (from a floor, should mu be 0)."""
        self.refusals += 1
        floor = torch.finfo(self.dtype).eps * max(diagonal.max().item(), 1e-300)
        self.mu = max(self.mu * self.nu, floor)
        self.nu *= 2

    # ---- the damped normal equations ----------------------------------------------------------

    def _matrix_free(self) -> bool:
        """Whether this iteration solves by conjugate gradients on Jacobian products: the
        setting "cg", or "auto" above `dense_limit` parameters (decided before evaluating,
        so no dense Jacobian is made for it)."""
        columns = sum(p.numel() for p in self.params)
        return self.solver == "cg" or (self.solver == "auto" and columns > self.dense_limit)

    def _dense_solver(self, shape: tuple[int, int]) -> str:
        """ "parameters" or "rows": the setting, or what "auto" picks for an (R, P) Jacobian."""
        rows, columns = shape
        if self.solver != "auto":
            return self.solver
        fewer_rows = self.world.size == 1 and rows < columns and self.scaling == "identity"
        return "rows" if fewer_rows else "parameters"

    def _normal_matrix(self, J: torch.Tensor) -> torch.Tensor:
        """(P, P) J^T J over every process's rows."""
        (normal,) = self._average(J.T @ J)
        return normal

    def _sketch(self, J, g: torch.Tensor) -> NystromSketch | None:
        """The Nyström sketch of J^T J for this Jacobian (with preconditioner "nystrom"): its
        `sketch_size` products averaged over the processes in one reduction, its draws seeded by
        the evaluation count (the same on every process, and on resume)."""
        if self.preconditioner != "nystrom":
            return None

        def normal_products(block: torch.Tensor) -> torch.Tensor:  # (P, s) -> (P, s)
            columns = torch.stack([J.rmv(J.mv(v)) for v in block.T.contiguous()], dim=1)
            return self._average(columns)[0]

        draws = torch.Generator().manual_seed(SKETCH_STREAM + self.evaluations)
        size, columns = self.sketch_size, J.shape[1]
        return NystromSketch.of(normal_products, size, columns, draws, self.dtype, g.device)

    def _solve(self, J, r, g, normal, diagonal, sketch=None) -> torch.Tensor | None:
        """(P,) the step for the current mu; None if the damped matrix is not positive definite."""
        mu, scale = self.mu, self._scale(diagonal)
        if self.last_solver == "cg":
            return conjugate_gradient(
                lambda v: self._average(J.rmv(J.mv(v)))[0] + mu * scale * v,
                -g,
                diagonal + mu * scale if sketch is None else sketch.inverse(mu),
                self.cg_iterations,
                self.cg_tolerance,
            )
        if self.last_solver == "rows":
            kernel = J.matrix @ J.matrix.T
            kernel.diagonal().add_(mu)
            y = cholesky_solve(kernel, -r)
            return None if y is None else J.rmv(y)
        damped = normal.clone()
        damped.diagonal().add_(mu * scale)
        return cholesky_solve(damped, -g)

    def _scale(self, diagonal: torch.Tensor) -> torch.Tensor | float:
        if self.scaling == "identity":
            return 1.0
        return diagonal.clamp_min(torch.finfo(self.dtype).eps * diagonal.max())

    def _average(self, *tensors: torch.Tensor) -> list[torch.Tensor]:
        """The tensors averaged over the processes (one all-reduce; as they are for one)."""
        tensors = [t.clone() if self.world.size > 1 else t for t in tensors]
        self.world.average_(tensors)
        return tensors
