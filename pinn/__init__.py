"""pinn: physics-informed neural networks on PyTorch.

The public surface, flat: what a problem module, a notebook or a script calls. Each name comes
from its layer's own face (`pinn.geometry`, `pinn.derivatives`, `pinn.nn`, `pinn.problem`,
`pinn.evaluation`, `pinn.training`, `pinn.plots`, `pinn.outputs`, `pinn.run`), where the
parts behind it live too.
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
from pinn.derivatives.field import Field
from pinn.derivatives.stochastic import LaplacianEstimator, stochastic_laplacian
from pinn.derivatives.taylor import taylor_supported
from pinn.errors import (
    CheckpointError,
    ConfigError,
    NotPointwiseError,
    OutputError,
    PinnError,
    RunDirectoryError,
    TrainingDiverged,
    TrainingInterrupted,
    require_int,
    require_positive,
)
from pinn.evaluation import Validator, evaluation_points, fresh_loss
from pinn.geometry import (
    Ball,
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
)
from pinn.nn import (
    MLP,
    FactorizedLinear,
    FourierFeatures,
    HardConstraint,
    InputOptions,
    ModifiedMLP,
    PeriodicEmbedding,
    PirateNet,
    register_network,
)
from pinn.problem import (
    BoundaryResidual,
    CausalSettings,
    Condition,
    Dirichlet,
    Initial,
    Neumann,
    Observations,
    Periodic,
    PointWeightSettings,
    Problem,
    Robin,
    boundary_counts,
    load_problem,
    on_grid,
    ring_quadrature,
)
from pinn.syncs import count_syncs
from pinn.training import (
    AdamSettings,
    BFGSSettings,
    Callback,
    FitResult,
    GaussNewtonSettings,
    HistoryFile,
    KFACSettings,
    LBFGSSettings,
    TrainSettings,
    fit,
    load_checkpoint,
    save_checkpoint,
)

# The run layer (Hydra), the plots (matplotlib) and the TensorBoard logger, imported on first
# use: a script or notebook that only trains does not wait for them.
_ON_FIRST_USE = {
    "compose_config": "pinn.config",
    "train": "pinn.run.train",
    "load_run": "pinn.run.load",
    "plot_loss": "pinn.plots",
    "plot_solution": "pinn.plots",
    "solution_figure": "pinn.plots",
    "TensorBoardLogger": "pinn.outputs.tensorboard",
}
# Subpackages that `pinn.<name>` reaches after a plain `import pinn`.
_SUBPACKAGES = ("config", "outputs", "plots", "run")

__all__ = [
    "__version__",
    # problems: the class a PDE module subclasses, its conditions and data
    "Problem",
    "Condition",
    "Dirichlet",
    "Neumann",
    "Robin",
    "Periodic",
    "Initial",
    "BoundaryResidual",
    "Observations",
    "load_problem",
    "on_grid",
    "ring_quadrature",
    # domains and their points
    "Domain",
    "Box",
    "Disk",
    "Ball",
    "Polygon",
    "SpaceTime",
    "Union",
    "Intersection",
    "Difference",
    "PointSampler",
    "boundary_counts",
    "Refinement",
    # derivatives
    "Field",
    "gradient",
    "hessian_diag",
    "laplacian",
    "hessian",
    "derivative",
    "stochastic_laplacian",
    "LaplacianEstimator",
    "register_elementwise",
    "register_taylor_rule",
    "taylor_supported",
    "check_pointwise",
    # networks
    "MLP",
    "ModifiedMLP",
    "PirateNet",
    "HardConstraint",
    "InputOptions",
    "FourierFeatures",
    "PeriodicEmbedding",
    "FactorizedLinear",
    "register_network",
    # training
    "fit",
    "FitResult",
    "TrainSettings",
    "AdamSettings",
    "LBFGSSettings",
    "GaussNewtonSettings",
    "BFGSSettings",
    "KFACSettings",
    "CausalSettings",
    "PointWeightSettings",
    "Callback",
    "HistoryFile",
    "load_checkpoint",
    "save_checkpoint",
    "count_syncs",
    # evaluation, runs, figures
    "Validator",
    "evaluation_points",
    "fresh_loss",
    "train",
    "compose_config",
    "load_run",
    "plot_solution",
    "plot_loss",
    "solution_figure",
    "TensorBoardLogger",
    # errors
    "PinnError",
    "ConfigError",
    "CheckpointError",
    "OutputError",
    "RunDirectoryError",
    "NotPointwiseError",
    "TrainingDiverged",
    "TrainingInterrupted",
    # checks for a problem's constructor arguments, refusing a bad one in one line
    "require_int",
    "require_positive",
]


def __getattr__(name: str):
    if name in _ON_FIRST_USE:
        return getattr(importlib.import_module(_ON_FIRST_USE[name]), name)
    if name in _SUBPACKAGES:
        return importlib.import_module(f"pinn.{name}")
    raise AttributeError(f"module 'pinn' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_ON_FIRST_USE) | set(_SUBPACKAGES))
