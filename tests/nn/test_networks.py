"""The networks the config offers: chosen by model.name or model=<group>, their options (exact
periodicity, weight factorisation, PirateNet's start), a class of one's own by import path, and
bad settings refused in one line."""

from __future__ import annotations

import math

import pytest
import torch
from omegaconf import OmegaConf
from torch.func import hessian, jacrev, vmap

from pinn import compose_config, train
from pinn.config.schema import check_config
from pinn.errors import ConfigError
from pinn.nn import (
    MLP,
    FactorizedLinear,
    ModifiedMLP,
    PeriodicEmbedding,
    PirateNet,
    register_network,
)
from pinn.nn import registry as pinn_registry
from pinn.problem.problem import load_problem
from pinn.run.build import build_model

DTYPE = torch.float64
NETWORKS = {"mlp": MLP, "modified_mlp": ModifiedMLP, "pirate": PirateNet}


def model_of(overrides: list[str], problem: str = "heat") -> torch.nn.Module:
    cfg = compose_config([f"problem={problem}", *overrides])
    loaded = load_problem(cfg.problem.target, OmegaConf.to_container(cfg.problem.params))
    return build_model(loaded, check_config(cfg).model, cfg.seed).to(DTYPE)


def derivatives(model: torch.nn.Module, x: torch.Tensor):
    def single(point):
        return model(point[None])[0]

    return model(x), vmap(jacrev(single))(x), vmap(hessian(single))(x)


@pytest.mark.parametrize("name", NETWORKS)
def test_the_group_and_the_name_choose_the_network(name):
    by_group = model_of([f"model={name}", "model.width=8"])
    by_name = model_of([f"model.name={name}", "model.width=8"])
    for model in (by_group, by_name):
        assert isinstance(model.network, NETWORKS[name])  # inside heat's hard constraint
    for a, b in zip(by_group.state_dict().values(), by_name.state_dict().values()):
        assert torch.equal(a, b)  # the same seed, the same network


@pytest.mark.parametrize("name", NETWORKS)
def test_a_periodic_coordinate_is_periodic_to_every_derivative(name):
    """heat's x in [-1, 1] with period 2: u, its gradient and Hessian agree at x and x + 2, and
    not at x + 1 (the network is not constant in x)."""
    model = model_of(
        [f"model={name}", "model.width=8", "model.periodic={x: 2.0}", "model.periodic_harmonics=2"]
        + ["model.fourier_features=4", "model.factorize=true"]
    ).network
    x = torch.rand(7, 2, generator=torch.Generator().manual_seed(0), dtype=DTYPE)
    shift = torch.tensor([2.0, 0.0], dtype=DTYPE)
    at_x, shifted = derivatives(model, x), derivatives(model, x + shift)
    for a, b in zip(at_x, shifted):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-10)
    assert (model(x) - model(x + shift / 2)).abs().max() > 1e-3


def test_the_periodic_embedding_follows_its_formula():
    embedding = PeriodicEmbedding(3, {1: 0.5}, harmonics=2).to(DTYPE)
    x = torch.rand(5, 3, generator=torch.Generator().manual_seed(1), dtype=DTYPE)
    w = 2 * math.pi / 0.5
    angles = torch.stack([w * x[:, 1], 2 * w * x[:, 1]], dim=1)
    expected = torch.cat([x[:, [0, 2]], torch.cos(angles), torch.sin(angles)], dim=1)
    assert embedding.out_dim == 6
    torch.testing.assert_close(embedding(x), expected)


def test_a_factorised_layer_starts_as_the_weight_it_factorises():
    generator = torch.Generator().manual_seed(2)
    layer = FactorizedLinear(300, 400, mean=1.0, std=0.1).to(DTYPE)
    weight = torch.randn(400, 300, generator=generator, dtype=DTYPE)
    layer.factorize_(weight, generator)
    x = torch.rand(6, 300, generator=generator, dtype=DTYPE)
    torch.testing.assert_close(layer(x), x @ weight.T)
    assert abs(layer.log_scale.mean().item() - 1.0) < 0.03
    assert abs(layer.log_scale.std().item() - 0.1) < 0.02
    # Both factors are trained: the loss has a gradient in each.
    layer(x).square().sum().backward()
    assert layer.log_scale.grad.abs().max() > 0 and layer.direction.grad.abs().max() > 0


def test_a_pirate_net_starts_as_a_linear_function_of_its_embedding():
    """Every skip weight α starts at 0: without Fourier features the initial network is affine
    in x (zero Hessian); after α moves, it is not."""
    network = PirateNet(2, 1, width=8, depth=2, generator=torch.Generator().manual_seed(3))
    network = network.to(DTYPE)
    x = torch.rand(5, 2, generator=torch.Generator().manual_seed(4), dtype=DTYPE)
    assert derivatives(network, x)[2].abs().max() < 1e-12
    with torch.no_grad():
        for block in network.blocks:
            block.alpha.fill_(0.5)
    assert derivatives(network, x)[2].abs().max() > 1e-3


OWN_NETWORK = """
import torch


class Siren(torch.nn.Module):
    def __init__(self, in_dim, out_dim, width=16, omega=3.0):
        super().__init__()
        self.omega = omega
        self.first = torch.nn.Linear(in_dim, width)
        self.last = torch.nn.Linear(width, out_dim)

    def forward(self, x):
        return self.last(torch.sin(self.omega * self.first(x)))


class Wrong(torch.nn.Module):
    def __init__(self, in_dim, out_dim):
        super().__init__()
        self.layer = torch.nn.Linear(in_dim, out_dim + 1)

    def forward(self, x):
        return self.layer(x)
"""


@pytest.fixture
def own_networks(tmp_path, monkeypatch):
    (tmp_path / "my_nets.py").write_text(OWN_NETWORK)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield
    import sys

    sys.modules.pop("my_nets", None)


def test_a_network_class_of_ones_own_is_named_by_its_import_path(own_networks):
    before = torch.random.get_rng_state()
    model = model_of(["model.name=my_nets.Siren", "+model.params.width=5"])
    assert torch.equal(torch.random.get_rng_state(), before)  # the caller's random state kept
    assert type(model.network).__name__ == "Siren" and model.network.first.out_features == 5
    again = model_of(["model.name=my_nets.Siren", "+model.params.width=5"])
    assert torch.equal(model.network.first.weight, again.network.first.weight)  # seeded
    other_seed = model_of(["model.name=my_nets.Siren", "+model.params.width=5", "seed=1"])
    assert not torch.equal(model.network.first.weight, other_seed.network.first.weight)
    x = torch.rand(4, 2, dtype=DTYPE)
    assert model(x).shape == (4, 1)


def test_options_of_pinns_networks_given_to_ones_own_are_warned_of(own_networks, pinn_messages):
    """model.width=64 does not reach a class of one's own (model.params does): said, and so is
    the width the problem's yaml recommends for pinn's networks (heat: 20); none, where every
    option is at its default."""
    model_of(["model.name=my_nets.Siren", "model.width=64", "model.activation=sin"])
    model_of(["model.name=my_nets.Siren", "+model.params.width=64"])
    model_of(["model.name=my_nets.Siren", "+model.params.width=64"], problem="lshape")
    warned = [m for m in pinn_messages() if "have no effect" in m]
    assert len(warned) == 2 and "model.width=64, model.activation='sin'" in warned[0]
    assert "model.params" in warned[0] and warned[1].startswith("model.width=20 have")


def test_a_hard_constraint_that_breaks_the_periodicity_is_warned_of(pinn_messages):
    """kdv: u = cos πx + t N with x periodic (period 2): periodic, nothing said. heat:
    u = sin πx + t(1 - x²) N, whose B's slope differs at x = ±1 (a kink in u); and kdv with a
    period that is not cos πx's: said, with the order and size of the difference."""
    model_of([], problem="kdv")
    assert not [m for m in pinn_messages() if "model.periodic" in m]
    model_of(["model.periodic={x: 2.0}"], problem="heat")
    model_of(["model.periodic={x: 1.5}"], problem="kdv")
    warned = [m for m in pinn_messages() if "model.periodic" in m]
    assert len(warned) == 2
    # dB/dx = -2xt: 2t at x = -1, -2t at x = 1, 4t apart (t up to 1 at the 64 points)
    assert "order 1 in x of g or B differ by up to 3.99 between x = -1 and x = 1" in warned[0]
    assert "the values of g or B differ by up to 1 between x = -1 and x = 0.5" in warned[1]


@pytest.mark.parametrize(
    "overrides, words",
    [
        (["model.name=resnet"], ["model.name='resnet' is unknown", "mlp, modified_mlp, pirate"]),
        (["model.name=no_such_module.Net"], ["model.name='no_such_module.Net'", "no module"]),
        (["model.name=my_nets.Nope"], ["no torch.nn.Module subclass named 'Nope'"]),
        (["model.name=my_nets.Wrong"], ["maps points of shape (2, 2) to (2, 2)", "(N, 1)"]),
        (["model.name=my_nets.Siren", "+model.params.widht=5"], ["did you mean model.params.wid"]),
        (["+model.params.width=5"], ["model.params={'width': 5} is for a network class"]),
        (["model.periodic={y: 2.0}"], ["'y', which is not a coordinate", "x, t"]),
        (["model.periodic={x: -1.0}"], ["model.periodic.x must be its period"]),
        (["model.periodic={x: true}"], ["model.periodic.x must be a number", "'True'"]),
        (
            ["model.factorize=true", "model.factorize_mean=true"],
            ["factorize_mean must be a number"],
        ),
        (["model.periodic_harmonics=0"], ["model.periodic_harmonics"]),
        (["model.factorize=true", "model.factorize_std=-1.0"], ["factorize_std must be >= 0"]),
    ],
)
def test_bad_network_settings_are_refused_naming_the_key(own_networks, overrides, words):
    with pytest.raises(ConfigError) as error:
        model_of(overrides)
    for word in words:
        assert word in str(error.value)


@pytest.mark.parametrize("name", ["modified_mlp", "pirate"])
def test_a_run_trains_the_chosen_network(name, tmp_path):
    cfg = compose_config(
        ["problem=poisson", f"model={name}", "model.width=8", "model.depth=2"]
        + ["trainer.phases=[adam]", "trainer.adam.steps=60", "trainer.progress=false"]
        + ["trainer.log_every=10", "problem.n_interior=200"]
    )
    metrics = train(cfg, tmp_path)
    lines = (tmp_path / "history.csv").read_text().splitlines()
    first_loss = float(lines[1].split(",")[2])
    assert metrics["final_loss"] < 0.5 * first_loss


class Doubled(MLP):
    """A network of one's own with every pinn network's options: twice an MLP."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return 2 * super().forward(x)


def test_a_registered_network_is_chosen_by_name_with_every_option(monkeypatch):
    monkeypatch.setitem(pinn_registry.NETWORKS, "doubled", Doubled)  # removed after the test
    doubled = model_of(["model.name=doubled", "model.width=8", "model.periodic={x: 2.0}"])
    plain = model_of(["model.name=mlp", "model.width=8", "model.periodic={x: 2.0}"])
    assert type(doubled.network) is Doubled
    x = torch.rand(5, 2, generator=torch.Generator().manual_seed(0), dtype=DTYPE)
    torch.testing.assert_close(doubled.network(x), 2 * plain.network(x))  # the same seed


def test_register_network_refuses_a_taken_or_dotted_name_and_a_non_module(monkeypatch):
    monkeypatch.setattr(pinn_registry, "NETWORKS", dict(pinn_registry.NETWORKS))
    with pytest.raises(ConfigError, match="'mlp' is taken by MLP"):
        register_network("mlp", Doubled)
    with pytest.raises(ConfigError, match="import path"):
        register_network("my.net", Doubled)
    with pytest.raises(ConfigError, match="no nn.Module class"):
        register_network("fn", lambda x: x)
    register_network("doubled", Doubled)
    assert pinn_registry.NETWORKS["doubled"] is Doubled
