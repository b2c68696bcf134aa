"""Networks: pointwise models (N, d) -> (N, m), their input embeddings and hard constraints.

    MLP, ModifiedMLP, ResidualMLP     the networks (mlp, modified_mlp, residual_mlp)
    FourierFeatures                   random Fourier features of the input (embeddings)
    HardConstraint                    u = g + B N: a Dirichlet condition held exactly

This layer knows nothing of problems, derivatives or training.
"""

from pinn.nn.constraints import HardConstraint
from pinn.nn.embeddings import FourierFeatures
from pinn.nn.mlp import ACTIVATIONS, MLP
from pinn.nn.modified_mlp import ModifiedMLP
from pinn.nn.residual_mlp import ResidualMLP

__all__ = ["ACTIVATIONS", "MLP", "FourierFeatures", "HardConstraint", "ModifiedMLP", "ResidualMLP"]
