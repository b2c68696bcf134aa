"""Training: the loop and its phases, optimisers, strategies, checkpoints.

    fit(problem, model, TrainSettings(...), points)    its phases in turn (loop)
    Callback                                           called by fit at each history row,
                                                       checkpoint, phase change, the end
    TrainSettings                                      how to train, checked when made
    AdamSettings, LBFGSSettings, GaussNewtonSettings,  the phases' settings blocks
      BFGSSettings, KFACSettings
    PHASES                                             the registered phases, by name
    RunState, FitResult                                a run's state (what a checkpoint
                                                       holds), what fit returns
    World, rank_seed                                   data-parallel processes (distributed)
    save_checkpoint, load_checkpoint                   atomic checkpoint files (checkpoints)
    HistoryCSV, HistoryFile                            history.csv, written as a run goes

Folders: phases/ (one module per phase, each reading top to bottom; parts: what they call),
optim/ (the optimisers' algebra: the quasi-Newton iterations and their line search, L-BFGS,
dense self-scaled BFGS, Levenberg-Marquardt, KFAC and its Kronecker solves, damped solves,
Jacobian products, schedules), rows/ (the loss as residual rows and their Jacobian, for
Gauss-Newton, and their Kronecker factors per layer, for KFAC),
strategies/ (loss weighting, time-marching). Beside them, the parts a phase calls at its
cadence: step_loss (the loss of a batch, eager or compiled), recording (history rows, progress),
checkpoints (the files, and when and who writes them), divergence (non-finite losses),
interrupts (Ctrl-C and SIGTERM stop at a step boundary), distributed (reductions over
processes), budgets (a resumed run's changed budgets), compiling (trainer.compile).

This layer knows problems, evaluation, geometry and derivatives; nothing below it imports it.
"""

from pinn.training.callbacks import Callback
from pinn.training.checkpoints import CHECKPOINT_NAME, load_checkpoint, save_checkpoint
from pinn.training.distributed import World, rank_seed
from pinn.training.history import HISTORY_NAME, HistoryCSV, HistoryFile
from pinn.training.loop import fit
from pinn.training.optim.bfgs import BFGS
from pinn.training.optim.lbfgs import LBFGS
from pinn.training.optim.levenberg_marquardt import LevenbergMarquardt
from pinn.training.phases import (
    PHASES,
    AdamSettings,
    BFGSSettings,
    GaussNewtonSettings,
    KFACSettings,
    LBFGSSettings,
)
from pinn.training.rows.residual_rows import ResidualRows, Rows
from pinn.training.settings import TrainSettings
from pinn.training.state import FitResult, RunState
from pinn.training.strategies.weighting import WEIGHTINGS, LossWeights

__all__ = [
    "PHASES",
    "AdamSettings",
    "LBFGSSettings",
    "GaussNewtonSettings",
    "BFGSSettings",
    "KFACSettings",
    "CHECKPOINT_NAME",
    "HISTORY_NAME",
    "WEIGHTINGS",
    "Callback",
    "FitResult",
    "HistoryCSV",
    "HistoryFile",
    "BFGS",
    "LBFGS",
    "LevenbergMarquardt",
    "LossWeights",
    "ResidualRows",
    "Rows",
    "RunState",
    "TrainSettings",
    "World",
    "fit",
    "load_checkpoint",
    "rank_seed",
    "save_checkpoint",
]
