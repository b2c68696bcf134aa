"""What a PDE module declares, and the loss it makes.

    Problem, load_problem             the base class of a PDE module (problem)
    Dirichlet, Neumann, Robin,        boundary and initial conditions, one loss term each
      Periodic, Initial,                (conditions)
      BoundaryResidual, Condition
    Observations                      measured values of u (observations)
    Unknowns                          an inverse problem's coefficients (unknowns)
    QuantityTools                     what Problem.quantities(q) gets (quantities)
    ring_quadrature                   a quadrature rule around a disk, for q.integral (quantities)
    on_grid                           reference data on a tensor grid as points and values (grids)
    CausalSettings, CausalWeighting   trainer.causal: PDE residuals weighted by time (causal)
    PointWeightSettings, PointWeights trainer.point_weights: a weight per PDE point, from its
                                        residual (RBA, vRBA: point_weights)
    loss_terms, weighted_sum          the named mean-square terms of a batch (loss)
    boundary_counts                   boundary points per part, where conditions read them
                                        (boundary_points)

This layer knows geometry and derivatives; training and the run layer build on it.
"""

from pinn.problem.boundary_points import boundary_counts
from pinn.problem.causal import CausalSettings, CausalWeighting
from pinn.problem.conditions import (
    BoundaryResidual,
    Condition,
    Dirichlet,
    Initial,
    Neumann,
    Periodic,
    Robin,
)
from pinn.problem.grids import on_grid
from pinn.problem.loss import loss_terms, weighted_sum
from pinn.problem.observations import Observations
from pinn.problem.point_weights import PointWeights, PointWeightSettings
from pinn.problem.problem import Problem, check_reference, load_problem
from pinn.problem.quantities import QuantityTools, ring_quadrature
from pinn.problem.unknowns import Unknowns

__all__ = [
    "BoundaryResidual",
    "CausalSettings",
    "CausalWeighting",
    "Condition",
    "Dirichlet",
    "Initial",
    "Neumann",
    "Observations",
    "Periodic",
    "PointWeightSettings",
    "PointWeights",
    "Problem",
    "QuantityTools",
    "Robin",
    "Unknowns",
    "boundary_counts",
    "check_reference",
    "load_problem",
    "loss_terms",
    "on_grid",
    "ring_quadrature",
    "weighted_sum",
]
