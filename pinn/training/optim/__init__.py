"""The optimisers' algebra, apart from the phases that run them (`pinn.training.phases`).

    LBFGS                         pinn's L-BFGS with a strong Wolfe line search (lbfgs)
    LevenbergMarquardt            damped Gauss-Newton steps on residual rows
                                  (levenberg_marquardt)
    cholesky_solve,               the damped normal equations, dense or matrix-free
      conjugate_gradient            (damped_solves)
    DenseJacobian,                a Jacobian as a matrix, or as products J v and J^T u
      MatrixFreeJacobian            (jacobian_products)
    on_plateau                    the stopping rule on a plateau of the loss (plateau)
    adam_schedule                 Adam's learning-rate schedules (schedules)

Nothing here knows problems: an optimiser sees parameters, a loss and its rows.
"""

from pinn.training.optim.lbfgs import LBFGS
from pinn.training.optim.levenberg_marquardt import LevenbergMarquardt

__all__ = ["LBFGS", "LevenbergMarquardt"]
