"""The traced Taylor pass on networks it was not written for, and on every network the config
offers with every option (periodic embedding, Fourier features, weight factorisation), against
torch.func in float64.

Every network runs with and without a hard constraint u = g + B N, for d = 1, 2, 3, 10 inputs
and one or three outputs: value, gradient, diagonal Hessian, Laplacian, full Hessian (mixed
terms), and the parameter gradients of a loss built on them.
"""

from __future__ import annotations

import pytest
import torch
from jet_checks import assert_jet_matches
from jet_checks import torch_func_reference as reference
from residual_mlp import ResidualMLP
from torch.func import functional_call, grad, hessian, jacrev, vmap

from pinn.derivatives.taylor import taylor_forward, taylor_laplacian, taylor_supported
from pinn.nn import InputOptions, ModifiedMLP, PirateNet
from pinn.nn.constraints import HardConstraint
from pinn.nn.mlp import MLP

DTYPE = torch.float64
TOL = {"rtol": 1e-10, "atol": 1e-10}
DIMS = [1, 2, 3, 10]


def build(kind: str, d: int, m: int, constrained: bool, seed: int = 0) -> torch.nn.Module:
    generator = torch.Generator().manual_seed(seed)
    box = InputOptions(lower=[-1.0] * d, upper=[2.0] * d)
    networks = {
        "mlp": lambda: MLP(d, m, 12, 2, "tanh", box, generator=generator),
        "fourier": lambda: MLP(
            d, m, 12, 2, "gelu", inputs=InputOptions(fourier_features=4), generator=generator
        ),
        "residual": lambda: ResidualMLP(d, m, 12, 2, "sin", generator=generator),
        "modified": lambda: ModifiedMLP(d, m, 12, 2, "silu", generator=generator),
        # The config's networks with every option: periodic in x_0, Fourier features, factorised.
        "mlp_options": lambda: MLP(d, m, 12, 2, "tanh", OPTIONS(d), generator=generator),
        "modified_options": lambda: ModifiedMLP(
            d, m, 12, 2, "tanh", OPTIONS(d), generator=generator
        ),
        "pirate": lambda: PirateNet(d, m, 12, 2, "tanh", generator=generator),
        "pirate_options": lambda: PirateNet(d, m, 12, 2, "tanh", OPTIONS(d), generator=generator),
    }
    network = networks[kind]().to(DTYPE)
    with torch.no_grad():  # random biases too, so no derivative vanishes by symmetry
        for parameter in network.parameters():
            parameter.add_(0.3 * torch.randn(parameter.shape, generator=generator, dtype=DTYPE))
    return HardConstraint(network, transform) if constrained else network


def OPTIONS(d: int) -> InputOptions:
    """Box rescaling, x_0 periodic (period 3, two harmonics), 3 Fourier features, factorised
    dense layers; frequencies kept moderate, so that the loss's scale leaves 1e-10 meaningful."""
    return InputOptions(
        lower=[-1.0] * d,
        upper=[2.0] * d,
        periodic={0: 3.0},
        harmonics=2,
        fourier_features=3,
        fourier_scale=0.2,
        factorize=(0.0, 0.3),
    )


KINDS = ["mlp", "fourier", "residual", "modified", "mlp_options", "modified_options", "pirate"]
KINDS += ["pirate_options"]


def transform(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """g and B with nonzero first and second derivatives in every input, B = 0 on x_0 = 0, 1."""
    g = torch.sin(x[:, 0]) + (x * x).sum(dim=1) / 2
    b = x[:, 0] * (1 - x[:, 0]) * torch.exp(x.mean(dim=1))
    return g, b


def close(actual, expected):
    torch.testing.assert_close(actual, expected, **TOL)


@pytest.mark.parametrize("constrained", [False, True], ids=["free", "hard"])
@pytest.mark.parametrize("m", [1, 3])
@pytest.mark.parametrize("d", DIMS)
@pytest.mark.parametrize("kind", KINDS)
def test_every_derivative_matches_torch_func(kind, d, m, constrained):
    model = build(kind, d, m, constrained)
    x = torch.rand(5, d, generator=torch.Generator().manual_seed(1), dtype=DTYPE)
    assert taylor_supported(model, x) == (True, "")  # carried whole: no operation falls back
    assert_jet_matches(model, x, *reference(model, x))


@pytest.mark.parametrize("constrained", [False, True], ids=["free", "hard"])
@pytest.mark.parametrize("d", [2, 10])
@pytest.mark.parametrize("kind", KINDS)
def test_parameter_gradients_of_a_residual_loss_match_torch_func(kind, d, constrained):
    """loss = mean((Δu_0 + u_0 ∂_0 u_1 + ∂_0∂_1 u_1)²): Laplacian, gradient and a mixed term."""
    model = build(kind, d, 2, constrained)
    x = torch.rand(6, d, generator=torch.Generator().manual_seed(2), dtype=DTYPE)

    def loss_of(value, gradient, full):
        laplacian = full[:, 0].diagonal(dim1=-2, dim2=-1).sum(-1)
        residual = laplacian + value[:, 0] * gradient[:, 1, 0] + full[:, 1, 0, 1]
        return (residual**2).mean()

    jet = taylor_forward(model, x, list(range(d)), "full")
    parameters = dict(model.named_parameters())
    actual = torch.autograd.grad(loss_of(*jet), list(parameters.values()), allow_unused=True)

    def reference_loss(params):
        def single(point):
            return functional_call(model, params, (point[None],))[0]

        value = functional_call(model, params, (x,))
        return loss_of(value, vmap(jacrev(single))(x), vmap(hessian(single))(x))

    expected = grad(reference_loss)(parameters)
    for (name, parameter), got in zip(parameters.items(), actual):
        got = torch.zeros_like(parameter) if got is None else got
        torch.testing.assert_close(got, expected[name], **TOL, msg=name)


def test_one_trace_serves_every_batch_of_the_same_shape():
    """Weights changed in place and fresh points: still exact, without tracing again."""
    model = build("modified", 3, 2, constrained=True)
    generator = torch.Generator().manual_seed(3)
    calls = [0]
    original = model.network.forward

    def counted(x):
        calls[0] += 1
        return original(x)

    model.network.forward = counted
    taylor_laplacian(model, torch.rand(8, 3, generator=generator, dtype=DTYPE))
    assert calls[0] > 0  # traced (and probed) once
    for _ in range(2):
        with torch.no_grad():
            for parameter in model.parameters():
                parameter.mul_(1.1)
        x = torch.rand(8, 3, generator=generator, dtype=DTYPE)
        before = calls[0]
        laplacian = taylor_laplacian(model, x).laplacian
        assert calls[0] == before  # the traced graph ran, not the module's forward
        close(laplacian, reference(model, x)[2].diagonal(dim1=-2, dim2=-1).sum(-1))


def test_masks_constants_and_detached_values_carry_no_derivative():
    def model(x):
        picked = torch.where(x[:, :1] > 0.5, torch.sin(3 * x[:, :1]), x[:, 1:] ** 3)
        return picked * torch.ones_like(x[:, :1]) + torch.zeros_like(x[:, 1:]) + x.detach()[:, :1]

    x = torch.rand(16, 2, generator=torch.Generator().manual_seed(4), dtype=DTYPE)
    value, gradient, full = reference(model, x)
    jet = taylor_forward(model, x, [0, 1], "full")
    close(jet.value, value)
    close(jet.first, gradient)
    close(jet.second, full)
