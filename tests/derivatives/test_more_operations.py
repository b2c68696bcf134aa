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
from torch.nn.attention import SDPBackend, sdpa_kernel

import pinn
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
    "bilinear": lambda: Bilinear(8),
    # torch's decomposition of rms_norm writes in place (add_): traced again, functionalized
    **({"rms_norm": lambda: nn.RMSNorm(8, dtype=DTYPE)} if hasattr(nn, "RMSNorm") else {}),
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
    "atan2": lambda x: torch.atan2(x[:, :1] - 0.5, x[:, 1:] - 0.5),  # every quadrant
    "atan2_of_constant": lambda x: torch.atan2(torch.full_like(x, -0.3), x - 0.5),
    "atan2_over_constant": lambda x: torch.atan2(torch.sin(x), torch.full_like(x, -0.3)),
    "hypot": lambda x: torch.hypot(x[:, :1] - 0.5, torch.sin(x[:, 1:])),
    "norm_1": lambda x: torch.linalg.vector_norm(x - 0.5, ord=1, dim=1, keepdim=True),
    "norm_3": lambda x: torch.linalg.vector_norm(x - 0.5, ord=3, dim=1, keepdim=True),
    "norm_minus_1": lambda x: torch.linalg.vector_norm(x, ord=-1.5, dim=1, keepdim=True),
    "norm_inf": lambda x: torch.linalg.vector_norm(x - 0.5, ord=float("inf"), dim=1)[:, None],
    "norm_minus_inf": lambda x: torch.linalg.norm(x - 0.5, ord=-float("inf"), dim=1)[:, None],
    "conv1d": lambda x: torch.tanh(CONVOLUTION(x[:, None, :])).flatten(1),
    "pad": lambda x: torch.nn.functional.pad(torch.sin(x), (1, 2), value=0.3) * x[:, :1],
    "avg_pool": lambda x: torch.nn.functional.avg_pool1d(torch.sin(x)[:, None], 2, 1).flatten(1),
    "avg_pool2d": lambda x: torch.nn.functional.avg_pool2d(
        torch.sin(x[:, None, :, None] * x[:, None, None, :]), 2, 1
    ).flatten(1),
}


class Bilinear(nn.Module):
    """nn.Bilinear of the features and their sines: (N, w) -> (N, w)."""

    def __init__(self, width: int):
        super().__init__()
        self.layer = nn.Bilinear(width, width, width, dtype=DTYPE)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return self.layer(h, torch.sin(h))


def _convolution() -> nn.Module:
    """Two channels of width 2 over the coordinates, padded, strided: (N, 1, 3) -> (N, 2, 2)."""
    layer = nn.Conv1d(1, 2, kernel_size=2, stride=2, padding=1, dtype=DTYPE)
    generator = torch.Generator().manual_seed(3)
    with torch.no_grad():
        for parameter in layer.parameters():
            parameter.copy_(torch.randn(parameter.shape, generator=generator, dtype=DTYPE))
    return layer


CONVOLUTION = _convolution()


def randomised(model: nn.Module, seed: int = 0) -> nn.Module:
    """`model` in float64, every parameter drawn from N(0, 1) by a generator of `seed`."""
    model = model.to(DTYPE)
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.copy_(torch.randn(parameter.shape, generator=generator, dtype=DTYPE))
    return model


def network(layer: nn.Module, seed: int = 0) -> nn.Module:
    return randomised(nn.Sequential(nn.Linear(3, 8), layer, nn.Linear(8, 2)), seed)


def points() -> torch.Tensor:
    """(9, 3) points in (0.1, 0.9)³: inside every function's domain, no ties."""
    return 0.1 + 0.8 * torch.rand(9, 3, generator=torch.Generator().manual_seed(1), dtype=DTYPE)


def check(model, x: torch.Tensor) -> None:
    assert taylor_supported(model, x) == (True, "")  # carried whole: no fallback
    assert_jet_matches(model, x, *torch_func_reference(model, x))


@pytest.mark.parametrize("name", LAYERS)
def test_layers_are_carried_and_match_torch_func(name):
    check(network(LAYERS[name]()), points())


class Recurrent(nn.Module):
    """A GRU reading the coordinates as a sequence: (N, 3) -> (N, 2). Its decomposition writes
    in place, and vmap cannot run it, so the reference goes point by point."""

    def __init__(self):
        super().__init__()
        self.cell = nn.GRU(1, 4, batch_first=True)
        self.out = nn.Linear(4, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        states, _ = self.cell(x[:, :, None])
        return self.out(states[:, -1])


def test_a_recurrent_network_is_carried_and_matches_torch_func_point_by_point():
    model, x = randomised(Recurrent(), seed=5), points()

    def at(point: torch.Tensor) -> torch.Tensor:
        return model(point[None])[0]

    gradient = torch.stack([jacrev(at)(point) for point in x])
    full = torch.stack([hessian(at)(point) for point in x])
    assert taylor_supported(model, x) == (True, "")
    assert_jet_matches(model, x, model(x), gradient, full)


class Attention(nn.Module):
    """A transformer encoder layer over the coordinates as tokens: (N, 3) -> (N, 2). The Taylor
    pass carries its attention through torch's decomposition (matmuls, softmax), where
    autograd cannot differentiate the CPU's fused attention twice."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Linear(1, 8)
        self.layer = nn.TransformerEncoderLayer(8, 2, 16, 0.0, batch_first=True)
        self.out = nn.Linear(8, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(self.layer(self.embed(x[:, :, None]))).mean(dim=1)


def test_a_transformer_layer_is_carried_and_matches_torch_func():
    model, x = randomised(Attention(), seed=6).eval(), points()
    assert taylor_supported(model, x) == (True, "")
    # the reference through the attention's plain formula, which torch.func differentiates
    with sdpa_kernel(SDPBackend.MATH):
        reference = torch_func_reference(model, x)
    assert_jet_matches(model, x, *reference)


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


# ---- torch.cdist: no second derivative in torch, so against the distances written out -----

CENTRES = torch.tensor([[0.2, 0.7, 0.4], [0.9, 0.1, 0.5], [0.5, 0.5, -0.3]], dtype=DTYPE)

CDIST = {  # name: (the model with torch.cdist, the same written out)
    "to_centres": (
        lambda x: torch.exp(-(torch.cdist(x, CENTRES) ** 2)),
        lambda x: torch.exp(-((x[:, None, :] - CENTRES) ** 2).sum(-1)),
    ),
    "p3": (
        lambda x: torch.cdist(x, CENTRES, p=3.0),
        lambda x: ((x[:, None, :] - CENTRES).abs() ** 3).sum(-1) ** (1 / 3),
    ),
    "both_vary": (
        lambda x: torch.cdist(x[:, None, :2], torch.sin(x[:, None, 1:])).flatten(1),
        lambda x: ((x[:, :2] - torch.sin(x[:, 1:])) ** 2).sum(-1, keepdim=True).sqrt(),
    ),
}


@pytest.mark.parametrize("n", [9, 40])  # torch computes 25 points or more by a matrix product
@pytest.mark.parametrize("name", CDIST)
def test_cdist_is_carried_to_every_order(name, n):
    """torch.cdist's own backward has no derivative, so nothing but the Taylor pass gives a
    network of radial basis functions its Laplacian."""
    model, written = CDIST[name]
    x = 0.1 + 0.8 * torch.rand(n, 3, generator=torch.Generator().manual_seed(1), dtype=DTYPE)
    torch.testing.assert_close(model(x), written(x), **TOL)
    assert taylor_supported(model, x) == (True, "")
    assert_jet_matches(model, x, *torch_func_reference(written, x))
    series = taylor_derivatives(model, x, 2, 3)
    torch.testing.assert_close(series.derivatives[..., 2], third_derivative(written, x, 2), **TOL)


# ---- rules that refuse their arguments: found before any pass, so "auto" falls back ---------


def test_a_rule_refusing_its_arguments_makes_the_model_unsupported():
    """The norm's rule refuses order 0 (a count of nonzero entries) when it sees that
    argument: the model is refused when traced, the rule named, and the engine "auto" gets
    every derivative from autograd instead of failing in the middle of a pass."""

    def model(x):
        return torch.sin(x) * torch.linalg.vector_norm(x - 0.5, ord=0, dim=1, keepdim=True)

    x = points()
    supported, reason = taylor_supported(model, x)
    assert not supported and "linalg_vector_norm with ord=0" in reason and "autograd" in reason
    assert univariate_supported(model, x)[0] is False
    value, gradient_, full = torch_func_reference(model, x)
    torch.testing.assert_close(pinn.laplacian(model, x), full.diagonal(0, -2, -1).sum(-1), **TOL)
    torch.testing.assert_close(pinn.gradient(model, x), gradient_, **TOL)


def test_a_function_without_series_inside_a_rule_is_found_before_the_univariate_pass():
    """atan2's rule goes through atan: with atan's rule replaced by one to order 2 only, the
    univariate pass would fail half way; it is refused up front, and order 3 comes from
    nested forward mode."""
    from pinn.derivatives.elementwise import ELEMENTWISE_RULES

    op = torch.ops.aten.atan.default
    saved = ELEMENTWISE_RULES[op]
    try:
        pinn.register_elementwise(op, lambda z: saved(z))  # the same σ, no higher rule
        x = points()

        def model(x):  # a new one: traced graphs are kept per model
            return torch.atan2(x[:, :1] - 0.5, x[:, 1:] - 0.5)

        assert taylor_supported(model, x) == (True, "")
        supported, reason = univariate_supported(model, x)
        assert not supported and "aten.atan.default" in reason
        got = pinn.derivative(model, x, 1, order=3)
        torch.testing.assert_close(got, third_derivative(model, x, 1), **TOL)
    finally:
        ELEMENTWISE_RULES[op] = saved  # its higher rule, kept with the σ rule it extends, is back
    assert univariate_supported(lambda x: torch.atan2(x[:, :1], x[:, 1:] + 1), x)[0]
