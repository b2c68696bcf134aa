"""The Gauss-Newton phase: Levenberg-Marquardt (`pinn.training.optim.levenberg_marquardt`) on the
last points drawn (or redrawn every `resample_every` iterations, refined by residual every
`refine_every`: `Phase.redraw_if_due`), the loss written as a sum of
squares of residual rows (`pinn.training.rows.residual_rows`), a history row per iteration,
stopping early when no damping lowers the loss or on a plateau."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pinn.errors import ConfigError, is_finite_number, require_int
from pinn.problem.columns import GAUSS_NEWTON_PREFIX
from pinn.settings import setting
from pinn.training.optim.levenberg_marquardt import PRECONDITIONERS, SOLVERS, LevenbergMarquardt
from pinn.training.phases.base import Phase, check_stop_keys
from pinn.training.rows.residual_rows import ResidualRows

if TYPE_CHECKING:
    from pinn.training.phases.parts import Parts
    from pinn.training.state import RunState


@dataclass
class GaussNewtonSettings:
    """The block `trainer.gauss_newton`.

    Attributes:
        steps: accepted Levenberg-Marquardt iterations (>= 0).
        damping: the first damping mu, relative to the largest diagonal entry of J^T J (> 0;
            raised when no step lowers the loss, back down after).
        line_search: step lengths tried along each step, 1, 1/2, ..., 1/2^(n-1), the best
            taken (0: plain Levenberg-Marquardt, mu adapting as a trust region's radius).
        solver: "auto", "parameters" (Cholesky of the P x P normal equations), "rows"
            (Cholesky of the R x R ones, when there are fewer rows than parameters; one
            process only) or "cg" (conjugate gradients on Jacobian products: no Jacobian,
            P x P or R x R matrix is formed).
        max_tries: refused steps in a row, each damping more, before the phase stops (>= 1).
        stall_window, stall_decrease: stop once the last `stall_window` iterations together
            lowered the loss by less than `stall_decrease` of it (a window of 0 = never), each
            measured by its own decrease: under causal weights, recomputed at each iterate, the
            loss may rise between iterates while every step lowers it.
        dense_limit: "auto" solves by conjugate gradients above this many parameters.
        cg_iterations: the most Jacobian products (each about two backward passes of the
            rows) one conjugate-gradient solve takes.
        preconditioner: the conjugate gradients' (solver "cg", or "auto" when it goes
            matrix-free): "jacobi" (a Hutchinson estimate of diag(J^T J)) or "nystrom" (a
            randomised rank-`sketch_size` Nyström approximation of J^T J, Frangella, Tropp &
            Udell 2023: `pinn.training.optim.nystrom`), for a J^T J ill-conditioned along
            directions that mix the parameters, as a PINN's is.
        sketch_size: "nystrom": the products J^T (J omega) its sketch takes per Jacobian (cut to
            the parameters' count), and the sketch's rank.
        resample_every: iterations between redraws of the training points (0 = never), so
            that the steps fit new points rather than the same ones (measured on the cylinder,
            README "Gauss-Newton": no lower fresh loss there). Each iteration's line search
            compares losses on its own points; the plateau rule judges each step by its own
            ratio, so a redraw does not look like progress or its lack.
        refine_every: iterations between refinements of the points by their residual
            (`refinement.method`, rar or rad; 0 = never). The damping is kept across a redraw
            or refinement, and across an update of the point weights (`trainer.point_weights`,
            made at the Jacobian's evaluation: each line search compares one loss).
        adapt_damping: move the damping by the step length the line search takes (raised
            after 1/8 or less, lowered after a full step, not below `damping`) instead of
            holding it at `damping` between refusals. After Adam the held damping of 1e-8
            gives steps hundreds of times too long, along directions the rows hardly fix (J's
            singular values fall from 1e1 to 1e-8 within its first hundred on `lshape`), and
            the search crawls at lengths 1/256-1/2048; raised by the length, the damping
            reaches that of useful steps within a few iterations: the loss 95x lower after 20
            iterations on `annulus` (held: 3 % lower), 11x on `lshape` (held: 0.5 %). Not the
            default: where the held run's crawl ends, its full steps converge faster, and on
            `annulus` (1000 points) 150 iterations end at rel_l2 8.8e-5 adapted, 9.7e-6 held.
    """

    steps: int = setting(100, "accepted iterations (0 = none)")
    damping: float = setting(
        1e-8,
        "first damping, relative to the largest diagonal entry of J^T J (raised on refusals; "
        "0: undamped Gauss-Newton)",
    )
    line_search: int = setting(
        12,
        "step lengths 1, 1/2, ..., 1/2^(n-1) tried along each step, the best taken (0 = plain LM)",
    )
    solver: str = setting(
        "auto", "auto, parameters (P x P Cholesky), rows (R x R, when R < P) or cg (matrix-free)"
    )
    max_tries: int = setting(10, "refused steps in a row (each damping more) before it stops")
    stall_window: int = setting(20, "stop once this many iterations together ...")
    stall_decrease: float = setting(
        1e-3, "... lowered the loss by less than this fraction (window 0 = never)"
    )
    dense_limit: int = setting(6000, "auto: conjugate gradients above this many parameters")
    cg_iterations: int = setting(
        500, "cg: the most Jacobian products (about 2 backward passes each) per solve"
    )
    preconditioner: str = setting(
        "jacobi", "cg: jacobi (Hutchinson diagonal) or nystrom (randomised low-rank sketch)"
    )
    sketch_size: int = setting(50, "nystrom: products J^T J omega per Jacobian (the sketch's rank)")
    resample_every: int = setting(
        0, "iterations between redraws of the training points (0 = never)"
    )
    refine_every: int = setting(
        0, "iterations between refinements of the points by residual (refinement.method; 0 = never)"
    )
    adapt_damping: bool = setting(
        False, "true: damping x 1/length after a step of 1/8 or less, / 4 after a full one"
    )

    def __post_init__(self) -> None:
        check_stop_keys("gauss_newton", self)
        require_int("trainer.gauss_newton.line_search", self.line_search, minimum=0)
        require_int("trainer.gauss_newton.max_tries", self.max_tries, minimum=1)
        require_int("trainer.gauss_newton.dense_limit", self.dense_limit, minimum=1)
        require_int("trainer.gauss_newton.cg_iterations", self.cg_iterations, minimum=1)
        require_int("trainer.gauss_newton.sketch_size", self.sketch_size, minimum=1)
        if not (is_finite_number(self.damping) and self.damping >= 0):
            raise ConfigError(
                f"trainer.gauss_newton.damping must be a finite number >= 0, got {self.damping!r}"
            )
        if not isinstance(self.adapt_damping, bool):
            raise ConfigError(
                f"trainer.gauss_newton.adapt_damping must be true or false, "
                f"got {self.adapt_damping!r}"
            )
        if self.solver not in SOLVERS:
            raise ConfigError(
                f"trainer.gauss_newton.solver must be one of {', '.join(SOLVERS)}, "
                f"got {self.solver!r}"
            )
        self._check_preconditioner()

    def _check_preconditioner(self) -> None:
        if self.preconditioner not in PRECONDITIONERS:
            raise ConfigError(
                f"trainer.gauss_newton.preconditioner must be one of {', '.join(PRECONDITIONERS)}, "
                f"got {self.preconditioner!r}"
            )
        if self.preconditioner == "nystrom" and self.solver in ("parameters", "rows"):
            raise ConfigError(
                f"trainer.gauss_newton.preconditioner=nystrom preconditions the conjugate "
                f"gradients, which solver={self.solver} does not take: use solver=cg (or auto, "
                f"which takes them above dense_limit parameters), or drop the preconditioner"
            )


class GaussNewtonPhase(Phase):
    """Levenberg-Marquardt for what is left of `settings.steps`, in chunks of
    `trainer.log_every` iterations with a checkpoint maybe between them."""

    name = "gauss_newton"
    title = "Gauss-Newton"
    settings_type = GaussNewtonSettings
    deterministic = True
    budget_free = True

    def __init__(self, settings: GaussNewtonSettings):
        super().__init__(settings)
        self.optimizer: LevenbergMarquardt | None = None

    def run(self, state: RunState, parts: Parts, saved: dict[str, Any] | None) -> None:
        settings = self.settings
        optimizer = LevenbergMarquardt(
            state.parameters,  # the Jacobian's columns: the network's, then the unknowns
            settings,
            world=state.world,
        )
        if saved is not None:  # mu, the next refusal's factor, the recent losses
            optimizer.load_state_dict(saved["optimizer"])
        self.optimizer = optimizer
        causal = state.causal  # the PDE rows causally weighted (pinn.problem.causal), or None
        rows_of = ResidualRows(
            parts.loss.problem,
            state.model,
            state.engine,
            self._weights(state),
            causal=causal,
            point_weights=state.point_weights,  # updated where asked, at the Jacobian's rows
        )

        def evaluate(jacobian: bool):
            fresh = bool(jacobian)  # the Jacobian's evaluation: fresh causal weights
            rows, info = self.rows_at_iterate(causal, fresh, lambda: rows_of(state.batch, jacobian))
            return rows.values, rows.jacobian, info

        def columns() -> dict[str, float]:
            return {
                GAUSS_NEWTON_PREFIX + "length": optimizer.last_length,
                GAUSS_NEWTON_PREFIX + "damping": optimizer.last_relative_damping,
            }

        self.run_row_steps(state, parts, optimizer, evaluate, columns)

    @staticmethod
    def _weights(state: RunState) -> dict[str, float]:
        """The loss weights as they stand (fixed, or where LRA left them during Adam)."""
        return state.weights.current()

    def state_dict(self) -> dict[str, Any] | None:
        return None if self.optimizer is None else {"optimizer": self.optimizer.state_dict()}
