"""Training strategies: how a run spreads its effort over terms and time.

    LossWeights, WEIGHTINGS   fixed or adaptive (LRA) loss weights (weighting)
    march, WindowSettings     time-marching: one network per time window, trained in turn
                              (time_marching)

Causal weighting in time is part of the loss itself (`pinn.problem.causal`). Nothing is
imported here: time-marching runs whole fits, so it sits above the loop that weighting serves.
"""
