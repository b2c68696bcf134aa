"""A problem's loss as residual rows and their Jacobian: what Gauss-Newton steps on.

ResidualRows, Rows        the loss as rows r with loss = sum(r**2), and J = dr/dtheta
                          (residual_rows)
row_jacobian              J from one recorded pass of the field (row_jacobian)
point_quantities          the derivatives at each point a residual asked for, by
                          autograd or the Taylor pass (point_quantities)
"""

from pinn.training.rows.residual_rows import ResidualRows, Rows

__all__ = ["ResidualRows", "Rows"]
