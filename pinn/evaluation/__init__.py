"""Evaluation: how wrong a trained model is, measured with torch alone.

    Validator, evaluation_points      errors against the exact solution or reference data
                                      (validation)
    fresh_loss                        the loss at points the run never trained on (fresh_loss)

This layer knows problems, geometry and derivatives; training reports with it (rel_l2 in the
history) and the run layer writes what it measures. It imports neither matplotlib nor Hydra.
"""

from pinn.evaluation.fresh_loss import fresh_loss
from pinn.evaluation.validation import Validator, can_validate, evaluation_points, predict

__all__ = ["Validator", "can_validate", "evaluation_points", "fresh_loss", "predict"]
