"""Training: the loop and its phases, optimisers, schedules, loss weights, checkpoints.

    fit(problem, model, TrainSettings(...), points)    its phases in turn (pinn.training.loop)
    Callback                                           called by fit at each history row,
                                                       checkpoint, phase change, the end
    TrainSettings                                      how to train, checked when made
    AdamSettings, LBFGSSettings                        the phases' settings blocks
    PHASES                                             the registered phases, by name
    RunState, FitResult                                a run's state (what a checkpoint
                                                       holds), what fit returns
    World, rank_seed                                   data-parallel processes (torchrun)
    LBFGS                                              pinn's L-BFGS (strong Wolfe line search)
    LevenbergMarquardt, ResidualRows                   damped Gauss-Newton on the loss's
                                                       residual rows and their Jacobian
    LossWeights, WEIGHTINGS                            fixed or adaptive (LRA) term weights
    save_checkpoint, load_checkpoint                   atomic checkpoint files
    HistoryCSV, HistoryFile                            history.csv, written as a run goes

Inside: state (RunState), phases (a package: one module per phase, each reading top to bottom,
and parts: what they call, and the final loss), and the parts
they call at their cadence: step_loss (the loss of a batch, eager or compiled), recording
(history rows, progress), checkpointing (when and who writes), divergence (non-finite losses),
interrupts (Ctrl-C and SIGTERM stop at a step boundary), distributed (reductions over processes).

This layer knows problems, geometry and derivatives; nothing below it imports it.
"""

from pinn.training.callbacks import Callback
from pinn.training.checkpoints import CHECKPOINT_NAME, load_checkpoint, save_checkpoint
from pinn.training.distributed import World, rank_seed
from pinn.training.history import HISTORY_NAME, HistoryCSV, HistoryFile
from pinn.training.loop import fit
from pinn.training.optim.lbfgs import LBFGS
from pinn.training.optim.levenberg_marquardt import LevenbergMarquardt
from pinn.training.phases import PHASES, AdamSettings, GaussNewtonSettings, LBFGSSettings
from pinn.training.rows.residual_rows import ResidualRows, Rows
from pinn.training.settings import TrainSettings
from pinn.training.state import FitResult, RunState
from pinn.training.strategies.weighting import WEIGHTINGS, LossWeights

__all__ = [
    "PHASES",
    "AdamSettings",
    "LBFGSSettings",
    "GaussNewtonSettings",
    "CHECKPOINT_NAME",
    "HISTORY_NAME",
    "WEIGHTINGS",
    "Callback",
    "FitResult",
    "HistoryCSV",
    "HistoryFile",
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
