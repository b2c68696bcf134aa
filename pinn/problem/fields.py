"""The field a problem's residual, conditions and quantities see: the network's values and
derivatives at points, by the problem's input and output names."""

from __future__ import annotations

import torch

from pinn.derivatives.engines import Engine
from pinn.derivatives.field import Field


def problem_field(engine: Engine, problem, points: torch.Tensor, site: str) -> Field:
    """The field of the engine's network at the (N, d) points for the residual site `site`,
    as the problem's residual and conditions see it: its inputs and outputs by name, its
    `laplacian()` over `problem.laplacian_inputs` (space alone on a SpaceTime)."""
    return engine.field(points, problem.inputs, problem.outputs, site, problem.laplacian_inputs)
