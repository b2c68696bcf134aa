"""pinn: physics-informed neural networks on PyTorch.

The public surface, flat: everything a problem module, a notebook or the CLI uses.
"""

import importlib

from pinn._version import __version__
from pinn.derivatives import (
    check_pointwise,
    derivative,
    gradient,
    hessian,
    hessian_diag,
    laplacian,
    register_elementwise,
    register_taylor_rule,
)
from pinn.derivatives.engines import ENGINES, Engine
from pinn.derivatives.field import Field
from pinn.derivatives.stochastic import LaplacianEstimator, stochastic_laplacian
from pinn.derivatives.taylor import (
    TaylorModeUnsupported,
    taylor_forward,
    taylor_hessian,
    taylor_hessian_diag,
    taylor_laplacian,
    taylor_supported,
)
from pinn.errors import (
    CheckpointError,
    ConfigError,
    NotPointwiseError,
    OutputError,
    PinnError,
    RunDirectoryError,
    TrainingDiverged,
    TrainingInterrupted,
)
from pinn.evaluation.fresh_loss import fresh_loss
from pinn.evaluation.validation import Validator, evaluation_points
from pinn.geometry import (
    REFINEMENTS,
    SAMPLING_METHODS,
    Ball,
    Batch,
    BoundaryPoints,
    Box,
    Difference,
    Disk,
    Domain,
    Intersection,
    PointSampler,
    Polygon,
    Refinement,
    SpaceTime,
    Union,
    residual_magnitude,
)
from pinn.nn import (
    MLP,
    FactorizedLinear,
    FourierFeatures,
    HardConstraint,
    ModifiedMLP,
    PeriodicEmbedding,
    PirateNet,
    ResidualMLP,
)
from pinn.problem import (
    CausalSettings,
    Condition,
    Dirichlet,
    Initial,
    Neumann,
    Observations,
    Periodic,
    Problem,
    QuantityTools,
    Robin,
    Unknowns,
    load_problem,
    loss_terms,
    on_grid,
    ring_quadrature,
    weighted_sum,
)
from pinn.training import (
    WEIGHTINGS,
    AdamSettings,
    Callback,
    FitResult,
    GaussNewtonSettings,
    LBFGSSettings,
    LossWeights,
    TrainSettings,
    fit,
    load_checkpoint,
    save_checkpoint,
)

__all__ = [
    "__version__",
    "register_elementwise",
    "register_taylor_rule",
    "Union",
    "SpaceTime",
    "SAMPLING_METHODS",
    "Polygon",
    "QuantityTools",
    "ring_quadrature",
    "Intersection",
    "Domain",
    "Disk",
    "Difference",
    "Ball",
    "ENGINES",
    "MLP",
    "ModifiedMLP",
    "PirateNet",
    "ResidualMLP",
    "FactorizedLinear",
    "PeriodicEmbedding",
    "Engine",
    "FourierFeatures",
    "HardConstraint",
    "LossWeights",
    "REFINEMENTS",
    "Refinement",
    "WEIGHTINGS",
    "TaylorModeUnsupported",
    "TensorBoardLogger",
    "Batch",
    "BoundaryPoints",
    "Box",
    "Callback",
    "CheckpointError",
    "Condition",
    "ConfigError",
    "Dirichlet",
    "Field",
    "FitResult",
    "Initial",
    "Neumann",
    "NotPointwiseError",
    "Observations",
    "OutputError",
    "Periodic",
    "PinnError",
    "PointSampler",
    "Problem",
    "Robin",
    "RunDirectoryError",
    "TrainSettings",
    "AdamSettings",
    "LBFGSSettings",
    "GaussNewtonSettings",
    "CausalSettings",
    "TrainingDiverged",
    "TrainingInterrupted",
    "Unknowns",
    "Validator",
    "check_pointwise",
    "compose_config",
    "derivative",
    "evaluation_points",
    "fit",
    "fresh_loss",
    "gradient",
    "hessian",
    "hessian_diag",
    "laplacian",
    "load_checkpoint",
    "load_problem",
    "load_run",
    "loss_terms",
    "on_grid",
    "plot_loss",
    "plot_solution",
    "solution_figure",
    "residual_magnitude",
    "save_checkpoint",
    "stochastic_laplacian",
    "LaplacianEstimator",
    "taylor_forward",
    "taylor_hessian",
    "taylor_hessian_diag",
    "taylor_laplacian",
    "taylor_supported",
    "train",
    "weighted_sum",
]

# The run layer (Hydra) and the plots (matplotlib), imported on first use: a script or notebook
# that only trains does not wait for them.
_ON_FIRST_USE = {
    "compose_config": "pinn.run.train",
    "train": "pinn.run.train",
    "load_run": "pinn.run.load",
    "plot_loss": "pinn.plots.solution",
    "plot_solution": "pinn.plots.solution",
    "solution_figure": "pinn.plots.solution",
    "TensorBoardLogger": "pinn.outputs.tensorboard",
}


def __getattr__(name: str):
    if name in _ON_FIRST_USE:
        return getattr(importlib.import_module(_ON_FIRST_USE[name]), name)
    if name in (
        "experiment",
        "plots",
    ):  # `pinn.plots.solution.solution_figure(...)` after `import pinn`
        return importlib.import_module(f"pinn.{name}")
    raise AttributeError(f"module 'pinn' has no attribute {name!r}")
