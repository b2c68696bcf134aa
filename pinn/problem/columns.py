"""The bookkeeping columns of a history row, beside which a row holds the loss terms, the
unknowns and the loss weights. No unknown may take one of these names (each unknown is a
column too), and plots tell the loss terms from them."""

STEP, PHASE, LOSS, LR, REL_L2, TIME_S = "step", "phase", "loss", "lr", "rel_l2", "time_s"
WINDOW = "window"  # a time-marching run's time window (`pinn.training.strategies.time_marching`)
BOOKKEEPING = (STEP, PHASE, LOSS, LR, REL_L2, TIME_S, WINDOW)

# A quantity of interest's column: `q_<name>` (`pinn.problem.quantities`), never a loss term.
QUANTITY_PREFIX = "q_"
# The causal weights' summary columns, `causal_min_weight` and `causal_mean_weight`
# (`pinn.problem.causal`), never loss terms either.
CAUSAL_PREFIX = "causal_"
# The point weights' summary columns, `attention_mean_weight` and `attention_max_weight`
# (`pinn.problem.point_weights`: residual-based attention), never loss terms either.
ATTENTION_PREFIX = "attention_"
# The Gauss-Newton phase's columns, `gn_length` (the step length its line search took) and
# `gn_damping` (the damping of that step, in the units of trainer.gauss_newton.damping), never
# loss terms either.
GAUSS_NEWTON_PREFIX = "gn_"
