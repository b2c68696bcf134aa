"""The networks `model.name` chooses from, by name: pinn's own, and any registered after.

    NETWORKS["mlp"]                       MLP
    register_network("siren", Siren)      model.name=siren from then on

A registered network takes the options every pinn network takes (`pinn.nn.mlp.MLP`'s
arguments: in_dim, out_dim, width, depth, activation, the input options and generator). A class
that takes only its own keyword arguments needs no registration: `model.name=module.Class`
with `model.params` (`pinn.run.build.own_network`).
"""

from __future__ import annotations

from torch import nn

from pinn.errors import ConfigError
from pinn.nn.mlp import MLP
from pinn.nn.modified_mlp import ModifiedMLP
from pinn.nn.pirate import PirateNet

NETWORKS: dict[str, type[nn.Module]] = {
    "mlp": MLP,
    "modified_mlp": ModifiedMLP,
    "pirate": PirateNet,
}


def register_network(name: str, network: type[nn.Module]) -> None:
    """Make `network` choosable as `model.name=<name>`, with every option of pinn's networks.

    Raises:
        ConfigError: the name is taken, has a dot (a dotted name is a class's import path), or
            `network` is no torch.nn.Module subclass.
    """
    if not (isinstance(network, type) and issubclass(network, nn.Module)):
        raise ConfigError(f"register_network({name!r}, ...): {network!r} is no nn.Module class")
    if not name.isidentifier():
        raise ConfigError(
            f"register_network({name!r}, ...): a network's name is a Python identifier (a "
            "dotted name is a class's import path, model.name=module.Class)"
        )
    if name in NETWORKS:
        raise ConfigError(f"register_network: {name!r} is taken by {NETWORKS[name].__name__}")
    NETWORKS[name] = network
