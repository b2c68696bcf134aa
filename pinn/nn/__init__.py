"""Networks: pointwise models (N, d) -> (N, m), their input embeddings and hard constraints.

    MLP, ModifiedMLP, PirateNet               the networks (mlp, modified_mlp, pirate)
    NETWORKS, register_network                model.name's choices, by name (registry)
    InputOptions                              the input options every network takes (options)
    FourierFeatures, PeriodicEmbedding        input embeddings (embeddings)
    FactorizedLinear                          random weight factorisation of a dense layer
    HardConstraint                            u = g + B N: a Dirichlet condition held exactly
    TimeWindows                               one network per time window (time-marching)

This layer knows nothing of problems, derivatives or training.
"""

from pinn.nn.constraints import HardConstraint
from pinn.nn.embeddings import FourierFeatures, PeriodicEmbedding
from pinn.nn.factorized import FactorizedLinear
from pinn.nn.mlp import ACTIVATIONS, MLP
from pinn.nn.modified_mlp import ModifiedMLP
from pinn.nn.options import InputOptions
from pinn.nn.pirate import PirateNet
from pinn.nn.registry import NETWORKS, register_network
from pinn.nn.time_windows import TimeWindows

__all__ = [
    "ACTIVATIONS",
    "MLP",
    "NETWORKS",
    "FactorizedLinear",
    "FourierFeatures",
    "HardConstraint",
    "InputOptions",
    "ModifiedMLP",
    "PeriodicEmbedding",
    "PirateNet",
    "TimeWindows",
    "register_network",
]
