"""A small Poisson PINN as the Gauss-Newton tests evaluate it: rows, Jacobian, terms."""

import torch

from pinn.derivatives.engines import Engine
from pinn.geometry import PointSampler
from pinn.nn import MLP, HardConstraint
from pinn.problems.poisson import Poisson
from pinn.training.rows.residual_rows import ResidualRows


def small_pinn(generator, n_points=300, width=20, depth=3):
    """(problem, model, batch, engine, evaluate) of Poisson with a hard boundary, an MLP of
    `depth` tanh layers of `width` (20x3: 921 parameters) and `n_points` Sobol points, float64;
    evaluate(jacobian) -> (rows (R,), J: the (R, P) matrix, a matrix-free one or None, terms)."""
    problem = Poisson()
    network = MLP(2, 1, width=width, depth=depth, generator=generator).double()
    model = HardConstraint(network, problem.hard_constraint)
    points = PointSampler(problem.domain, n_points, 4, "sobol", generator, dtype=torch.float64)
    batch = points.draw()
    engine = Engine("taylor", model, probe=batch.interior[:2], announce=False)
    rows_of = ResidualRows(problem, model, engine)

    def evaluate(jacobian):
        rows = rows_of(batch, jacobian)
        return rows.values, rows.jacobian, rows.terms

    return problem, model, batch, engine, evaluate
