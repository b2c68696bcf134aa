"""Networks built from torch's other layers and functions stay on the Taylor pass: activations
with rules of their own (tan, asin, log2, ...), reductions with rules (logsumexp, var,
amax, max, layer_norm, cumsum), and the rest traced through torch's decompositions of them
(ELU, LeakyReLU, Mish, SELU, softmax, Hardswish, ...), each against torch.func in float64.
"""

from __future__ import annotations

import pytest
import torch
from jet_checks import assert_jet_matches, torch_func_reference
from torch import nn
from torch.func import functional_call, grad, hessian, jacrev, vmap

from pinn.derivatives.taylor import taylor_forward, taylor_supported
from pinn.derivatives.univariate import taylor_derivatives, univariate_supported

DTYPE = torch.float64
TOL = {"rtol": 1e-10, "atol": 1e-10}

LAYERS = {
    "elu": nn.ELU,
    "leaky_relu": nn.LeakyReLU,
    "mish": nn.Mish,
    "hardtanh": nn.Hardtanh,
    "celu": nn.CELU,
    "selu": nn.SELU,
    "log_sigmoid": nn.LogSigmoid,
    "softmax": lambda: nn.Softmax(dim=-1),
    "log_softmax": lambda: nn.LogSoftmax(dim=-1),
    "softmin": lambda: nn.Softmin(dim=-1),
    "layer_norm": lambda: nn.LayerNorm(8, dtype=DTYPE),
    "relu6": nn.ReLU6,
    "hardswish": nn.Hardswish,
    "softsign": nn.Softsign,
    "tanhshrink": nn.Tanhshrink,
}

FUNCTIONS = {
    "tan": lambda x: torch.tan(x),
    "asin": lambda x: torch.asin(x / 2),
    "acos": lambda x: torch.acos(x / 2),
    "asinh": lambda x: torch.asinh(x),
    "acosh": lambda x: torch.acosh(x + 1.5),
    "atanh": lambda x: torch.atanh(x / 2),
    "log2": lambda x: torch.log2(x + 1),
    "log10": lambda x: torch.log10(x + 1),
    "exp2": lambda x: torch.exp2(x),
    "logsumexp": lambda x: torch.logsumexp(x * x, dim=1, keepdim=True),
    "logsumexp_squeezed": lambda x: torch.logsumexp(torch.sin(x), dim=1)[:, None],
    "var": lambda x: torch.sin(x).var(dim=1, keepdim=True),
    "var_dims": lambda x: torch.sin(x)[:, :, None].var(dim=(1, 2))[:, None],
    "std": lambda x: (x * x).std(dim=1, correction=0, keepdim=True),
    "var_mean": lambda x: torch.stack(torch.var_mean(torch.sin(x), dim=1), dim=1),
    "amax": lambda x: (x * x).amax(dim=1, keepdim=True),
    "amin": lambda x: torch.sin(x).amin(dim=1, keepdim=True),
    "max": lambda x: torch.cos(x).max(dim=1).values[:, None],
    "cumsum": lambda x: torch.sin(x).cumsum(dim=1),
    "lerp": lambda x: torch.lerp(x[:, :1], x[:, 1:] ** 2, 0.3),
    "addcmul": lambda x: torch.addcmul(x[:, :1], x[:, 1:2], x[:, 2:], value=0.5),
    "xlogy": lambda x: torch.special.xlogy(x[:, :1], x[:, 1:2] + 1),
    "logaddexp": lambda x: torch.logaddexp(x[:, :1], x[:, 1:2] ** 2),
    "sinc": lambda x: torch.sinc(x),
}


def network(layer: nn.Module, seed: int = 0) -> nn.Module:
    generator = torch.Generator().manual_seed(seed)
    model = nn.Sequential(nn.Linear(3, 8), layer, nn.Linear(8, 2)).to(DTYPE)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.copy_(torch.randn(parameter.shape, generator=generator, dtype=DTYPE))
    return model


def points() -> torch.Tensor:
    """(9, 3) points in (0.1, 0.9)³: inside every function's domain, no ties."""
    return 0.1 + 0.8 * torch.rand(9, 3, generator=torch.Generator().manual_seed(1), dtype=DTYPE)


def check(model, x: torch.Tensor) -> None:
    assert taylor_supported(model, x) == (True, "")  # carried whole: no fallback
    assert_jet_matches(model, x, *torch_func_reference(model, x))


@pytest.mark.parametrize("name", LAYERS)
def test_layers_are_carried_and_match_torch_func(name):
    check(network(LAYERS[name]()), points())


@pytest.mark.parametrize("name", FUNCTIONS)
def test_functions_are_carried_and_match_torch_func(name):
    check(FUNCTIONS[name], points())


@pytest.mark.parametrize("name", ["layer_norm", "softmax", "mish"])
def test_parameter_gradients_through_them_match_torch_func(name):
    """loss = mean((Δu_0 + u_1 ∂_0 u_0)²), through the layer, against torch.func."""
    model, x = network(LAYERS[name](), seed=2), points()

    def loss_of(value, gradient, diagonal):
        return ((diagonal[:, 0].sum(-1) + value[:, 1] * gradient[:, 0, 0]) ** 2).mean()

    parameters = dict(model.named_parameters())
    jet = taylor_forward(model, x, [0, 1, 2], "diagonal")
    actual = torch.autograd.grad(loss_of(*jet), list(parameters.values()))

    def reference_loss(params):
        def single(point):
            return functional_call(model, params, (point[None],))[0]

        full = vmap(hessian(single))(x)
        value = functional_call(model, params, (x,))
        return loss_of(value, vmap(jacrev(single))(x), full.diagonal(dim1=-2, dim2=-1))

    expected = grad(reference_loss)(parameters)
    for (name_, _), got in zip(parameters.items(), actual):
        torch.testing.assert_close(got, expected[name_], **TOL, msg=name_)


def third_derivative(model, x: torch.Tensor, i: int) -> torch.Tensor:
    """(N, m) ∂³u/∂x_i³ by nested torch.func.jacrev."""

    def along(t, point):
        shifted = point.clone()
        shifted[i] = shifted[i] + t
        return model(shifted[None])[0]

    def third(point):
        zero = point.new_zeros(())
        return jacrev(jacrev(jacrev(along)))(zero, point)

    return vmap(third)(x)


def layer_norm_written_out(model: nn.Sequential):
    """The layer_norm network with the normalisation written out: torch 2.13's own third
    derivatives of native_layer_norm (nested jacrev or jacfwd) are wrong, so the reference
    differentiates this instead (the same function to rounding, checked)."""
    first, norm, last = model

    def written(x):
        centred = first(x) - first(x).mean(dim=1, keepdim=True)
        variance = (centred * centred).mean(dim=1, keepdim=True)
        return last(centred * torch.rsqrt(variance + norm.eps) * norm.weight + norm.bias)

    return written


@pytest.mark.parametrize("name", [*LAYERS, *FUNCTIONS])
def test_third_derivatives_where_the_univariate_pass_carries_them(name):
    """Order 3 by the univariate pass where every operation has a rule of every order, else
    refused with the operation named (the engine then uses nested forward mode)."""
    model = network(LAYERS[name]()) if name in LAYERS else FUNCTIONS[name]
    x = points()
    supported, reason = univariate_supported(model, x)
    if not supported:
        assert "has no rule for derivatives of order 3" in reason
        return
    reference = layer_norm_written_out(model) if name == "layer_norm" else model
    torch.testing.assert_close(reference(x), model(x), **TOL)
    series = taylor_derivatives(model, x, 1, 3)
    torch.testing.assert_close(series.derivatives[..., 2], third_derivative(reference, x, 1), **TOL)
