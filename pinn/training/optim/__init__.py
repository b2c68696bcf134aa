"""The optimisers' algebra, apart from the phases that run them (`pinn.training.phases`).

    QuasiNewton                   the iterations L-BFGS and BFGS share: a strong Wolfe line
                                  search (line_search), the loss or its sqrt or log minimised
                                  (quasi_newton)
    LBFGS                         pinn's L-BFGS: a limited memory of curvature pairs (lbfgs)
    BFGS                          a dense float64 inverse Hessian, plain or self-scaled
                                  updates (bfgs)
    LevenbergMarquardt            damped Gauss-Newton steps on residual rows
                                  (levenberg_marquardt; the iterations it shares with KFAC:
                                  row_steps; their line search: grid_search)
    KFAC                          Gauss-Newton steps with Kronecker-factored curvature per
                                  Linear layer (kfac; its layers in the Taylor pass:
                                  kfac_layers; its averaged factors and preconditioner:
                                  kfac_curvature; the solves: kronecker)
    cholesky_solve,               the damped normal equations, dense or matrix-free
      conjugate_gradient            (damped_solves)
    NystromSketch                 the conjugate gradients' randomised Nyström preconditioner
                                  (nystrom)
    DenseJacobian,                a Jacobian as a matrix, or as products J v and J^T u
      MatrixFreeJacobian            (jacobian_products)
    on_plateau                    the stopping rule on a plateau of the loss (plateau)
    adam_schedule                 Adam's learning-rate schedules (schedules)

Nothing here knows problems: an optimiser sees parameters, a loss and its rows.
"""

from pinn.training.optim.bfgs import BFGS
from pinn.training.optim.lbfgs import LBFGS
from pinn.training.optim.levenberg_marquardt import LevenbergMarquardt
from pinn.training.optim.quasi_newton import QuasiNewton

__all__ = ["BFGS", "LBFGS", "LevenbergMarquardt", "QuasiNewton"]
