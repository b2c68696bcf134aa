"""Training: the loop and its phases, optimisers, schedules, loss weights, checkpoints.

    fit(problem, model, TrainSettings(...), points)    Adam, then L-BFGS (pinn.training.loop)
    TrainSettings                                      how to train, checked when made
    LBFGS                                              pinn's L-BFGS (strong Wolfe line search)
    LossWeights, WEIGHTINGS                            fixed or adaptive (LRA) term weights
    save_checkpoint, load_checkpoint                   atomic checkpoint files
    HistoryCSV                                         history.csv, written as a run goes

This layer knows problems, geometry and derivatives; nothing below it imports it.
"""

from pinn.training.checkpoint import CHECKPOINT_NAME, load_checkpoint, save_checkpoint
from pinn.training.history import HISTORY_NAME, HistoryCSV
from pinn.training.lbfgs import LBFGS
from pinn.training.loop import FitResult, fit
from pinn.training.settings import TrainSettings
from pinn.training.weighting import WEIGHTINGS, LossWeights

__all__ = [
    "CHECKPOINT_NAME",
    "HISTORY_NAME",
    "WEIGHTINGS",
    "FitResult",
    "HistoryCSV",
    "LBFGS",
    "LossWeights",
    "TrainSettings",
    "fit",
    "load_checkpoint",
    "save_checkpoint",
]
