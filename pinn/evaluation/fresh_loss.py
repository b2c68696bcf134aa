"""The loss at fresh points: does a trained model solve the PDE between its training points?

A second-order phase (Gauss-Newton above all) can drive the loss down on the points it trains
on alone, more so with few residual rows per parameter: the training loss then says nothing of
the PDE between them. The same terms at points the run never saw do. `fresh_loss` draws a batch
of the training batch's size uniformly from a fixed seed (the same points for every run of one
problem) and weighs its terms as training does, without causal or point weights.

It is a figure to read, not a verdict: a solution steep in a small region (the cavity's lid
corners) leaves fresh points there a residual far above the training loss even when the
solution is accurate elsewhere (README, "Settings for a hard problem").
"""

from __future__ import annotations

from collections.abc import Mapping

import torch
from torch import nn

from pinn.derivatives.engines import Engine
from pinn.geometry import PointSampler
from pinn.nn.placement import placement
from pinn.problem.loss import loss_terms, weighted_sum
from pinn.problem.problem import Problem

FRESH_SEED = 1_000_003  # apart from every run's own sampling seed (seed + 1 per rank)


def fresh_loss(
    problem: Problem,
    model: nn.Module,
    n_interior: int,
    n_boundary: int | Mapping[str, int],
    weights: Mapping[str, float],
    engine: str = "auto",
) -> float:
    """The weighted loss (sum of weights[k] x mean square of term k) of `model` at
    `n_interior` interior and `n_boundary` boundary points (a count over every part, or
    {part: count} as training draws them, `pinn.boundary_counts`) drawn uniformly from FRESH_SEED,
    in the model's dtype and on its device, derivatives by `engine` (exact Laplacians)."""
    dtype, device = placement(model)
    generator = torch.Generator().manual_seed(FRESH_SEED)
    points = PointSampler(
        problem.domain, n_interior, n_boundary, "uniform", generator, dtype, device
    )
    with torch.enable_grad():
        terms = loss_terms(problem, model, points.draw(), Engine(engine, model, announce=False))
        return weighted_sum(terms, weights).item()
