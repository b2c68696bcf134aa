"""Forward Taylor mode against torch.func in float64: values, derivatives, parameter gradients."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from torch import nn
from torch.func import functional_call, grad, hessian, jacrev, vmap

import pinn.derivatives.rules
from pinn.derivatives.taylor import (
    TaylorModeUnsupported,
    taylor_forward,
    taylor_hessian,
    taylor_hessian_diag,
    taylor_laplacian,
    taylor_supported,
)
from pinn.nn import InputOptions
from pinn.nn.embeddings import FourierFeatures, Rescale
from pinn.nn.mlp import MLP, Sin

DTYPE = torch.float64
TOLERANCE = {"rtol": 1e-10, "atol": 1e-10}

ACTIVATIONS: dict[str, Callable[[], nn.Module]] = {
    "tanh": nn.Tanh,
    "sin": Sin,
    "sigmoid": nn.Sigmoid,
    "softplus": nn.Softplus,
    # beta z crosses the threshold inside the data: both branches of torch's softplus run.
    "softplus_beta2_threshold1": lambda: nn.Softplus(beta=2.0, threshold=1.0),
    "silu": nn.SiLU,
    "gelu": nn.GELU,
    "gelu_tanh": lambda: nn.GELU(approximate="tanh"),
}
FRONTS = ["plain", "rescale", "fourier", "rescale+fourier"]


@pytest.fixture
def generator() -> torch.Generator:
    return torch.Generator().manual_seed(1234)


def make_model(
    activation: str, front: str, dim: int, out_dim: int, generator: torch.Generator
) -> nn.Sequential:
    """A small random float64 network: [Rescale] [FourierFeatures] Linear σ (Linear σ) Linear."""
    layers: list[nn.Module] = []
    width_in = dim
    if "rescale" in front:
        lower = -1 - torch.rand(dim, generator=generator, dtype=DTYPE)
        layers.append(Rescale(lower.tolist(), (lower + 2.5).tolist()))
    if "fourier" in front:
        embedding = FourierFeatures(dim, 3, 0.3, include_input=True, generator=generator)
        layers.append(embedding)
        width_in = embedding.out_dim
    act = ACTIVATIONS[activation]
    hidden = nn.Sequential(nn.Linear(10, 10), act())  # nested on purpose
    layers += [nn.Linear(width_in, 10), act(), hidden, nn.Linear(10, out_dim)]
    model = nn.Sequential(*layers).to(DTYPE)
    with torch.no_grad():  # random biases too, so no derivative vanishes by symmetry
        for parameter in model.parameters():
            fan_in = parameter.shape[-1] if parameter.ndim == 2 else 2
            draw = torch.randn(parameter.shape, generator=generator, dtype=DTYPE)
            parameter.copy_(draw * 1.5 / fan_in**0.5)
    return model


def points(n: int, dim: int, generator: torch.Generator) -> torch.Tensor:
    return 2 * torch.rand(n, dim, generator=generator, dtype=DTYPE) - 1


def reference(model: nn.Module, x: torch.Tensor):
    """value (N, m), Jacobian (N, m, d) and Hessian (N, m, d, d) by torch.func."""

    def single(point: torch.Tensor) -> torch.Tensor:
        return model(point[None])[0]

    return model(x), vmap(jacrev(single))(x), vmap(hessian(single))(x)


def close(actual: torch.Tensor, expected: torch.Tensor) -> None:
    torch.testing.assert_close(actual, expected, **TOLERANCE)


def diagonal(hess: torch.Tensor) -> torch.Tensor:
    return hess.diagonal(dim1=-2, dim2=-1)


# ---- derivatives against torch.func -------------------------------------------------------


@pytest.mark.parametrize("out_dim", [1, 2])
@pytest.mark.parametrize("dim", [1, 2, 3, 10])
@pytest.mark.parametrize("front", FRONTS)
@pytest.mark.parametrize("activation", ACTIVATIONS)
def test_all_inputs_match_torch_func(activation, front, dim, out_dim, generator):
    model = make_model(activation, front, dim, out_dim, generator)
    x = points(16, dim, generator)
    value, jac, hess = reference(model, x)

    diag = taylor_hessian_diag(model, x)
    close(diag.value, value)
    close(diag.gradient, jac)
    close(diag.hessian_diag, diagonal(hess))
    lap = taylor_laplacian(model, x)
    close(lap.gradient, jac)
    close(lap.laplacian, diagonal(hess).sum(-1))
    full = taylor_hessian(model, x)
    close(full.gradient, jac)
    close(full.hessian, hess)


@pytest.mark.parametrize("dim", [2, 3, 10])
@pytest.mark.parametrize("activation", ["tanh", "softplus_beta2_threshold1", "gelu_tanh"])
def test_a_subset_of_inputs_matches_torch_func(activation, dim, generator):
    model = make_model(activation, "rescale+fourier", dim, 2, generator)
    x = points(16, dim, generator)
    _, jac, hess = reference(model, x)
    inputs = [dim - 1, 0]  # out of order on purpose
    subset = hess[..., inputs, :][..., inputs]

    diag = taylor_hessian_diag(model, x, inputs)
    close(diag.gradient, jac[..., inputs])
    close(diag.hessian_diag, diagonal(subset))
    close(taylor_laplacian(model, x, inputs).laplacian, diagonal(subset).sum(-1))
    close(taylor_laplacian(model, x, inputs).gradient, jac)
    full = taylor_hessian(model, x, inputs)
    close(full.gradient, jac[..., inputs])
    close(full.hessian, subset)


@pytest.mark.parametrize("per_point", [False, True])
@pytest.mark.parametrize("front", FRONTS)
@pytest.mark.parametrize("activation", ["sin", "silu", "gelu"])
def test_arbitrary_directions_match_torch_func(activation, front, per_point, generator):
    model = make_model(activation, front, 3, 2, generator)
    x = points(16, 3, generator)
    _, jac, hess = reference(model, x)
    shape = (16, 4, 3) if per_point else (4, 3)
    directions = torch.randn(shape, generator=generator, dtype=DTYPE)
    v = directions.expand(16, 4, 3)  # (N, k, d) either way
    quadratic = torch.einsum("nkd,nmde,nle->nmkl", v, hess, v)  # v_k^T H v_l: (N, m, k, k)
    weights = torch.randn(4, generator=generator, dtype=DTYPE)

    def second(mode: str, **kwargs) -> torch.Tensor:
        return taylor_forward(model, x, directions, mode, **kwargs).second

    close(taylor_forward(model, x, directions, "none").first, torch.einsum("nmd,nkd->nmk", jac, v))
    close(second("diagonal"), diagonal(quadratic))
    close(second("full"), quadratic)
    close(second("collapsed", weights=weights), diagonal(quadratic) @ weights)
    close(second("pairs", pairs=[(0, 3), (2, 1), (1, 1)]), quadratic[..., [0, 2, 1], [3, 1, 1]])
    assert second("none").shape == (16, 2, 0)


def test_per_point_input_indices_match_torch_func(generator):
    model = make_model("tanh", "rescale", 5, 2, generator)
    x = points(16, 5, generator)
    _, jac, hess = reference(model, x)
    chosen = torch.rand(16, 5, generator=generator).argsort(dim=1)[:, :3]
    jet = taylor_forward(model, x, chosen, "diagonal")
    close(jet.first, jac.gather(2, chosen[:, None].expand(-1, 2, -1)))
    close(jet.second, diagonal(hess).gather(2, chosen[:, None].expand(-1, 2, -1)))


def test_pinn_mlp_with_its_rescale_matches_torch_func(generator):
    model = MLP(
        3,
        2,
        width=12,
        depth=3,
        activation="tanh",
        inputs=InputOptions(lower=[0, -1, 2], upper=[1, 1, 5]),
    )
    model = model.to(DTYPE)
    x = points(16, 3, generator)
    _, jac, hess = reference(model, x)
    full = taylor_hessian(model, x)
    close(full.gradient, jac)
    close(full.hessian, hess)


def test_affine_only_model_has_zero_second_derivatives(generator):
    model = nn.Sequential(nn.Linear(3, 4), nn.Identity(), nn.Linear(4, 2)).to(DTYPE)
    x = points(8, 3, generator)
    value, jac, _ = reference(model, x)
    full = taylor_hessian(model, x)
    close(full.value, value)
    close(full.gradient, jac)
    assert torch.equal(full.hessian, torch.zeros(8, 2, 3, 3, dtype=DTYPE))


def test_collapsed_mode_carries_one_second_order_row(generator, monkeypatch):
    model = make_model("tanh", "fourier", 10, 1, generator)
    x = points(16, 10, generator)
    row_counts = []
    chain = pinn.derivatives.rules.chain

    def recording_chain(*args):
        terms = chain(*args)
        row_counts.append(terms.second.shape[0])
        return terms

    monkeypatch.setattr(pinn.derivatives.rules, "chain", recording_chain)
    taylor_laplacian(model, x)
    assert row_counts and set(row_counts) == {1}


# ---- gradients with respect to the parameters ---------------------------------------------


def parameter_gradients(model: nn.Module, loss: torch.Tensor) -> list[torch.Tensor]:
    """Zeros for parameters the loss ignores (a Laplacian ignores the output bias)."""
    parameters = list(model.parameters())
    grads = torch.autograd.grad(loss, parameters, allow_unused=True)
    return [torch.zeros_like(p) if g is None else g for p, g in zip(parameters, grads)]


def reference_gradients(model: nn.Module, x: torch.Tensor, residual) -> list[torch.Tensor]:
    """d loss / d parameters with torch.func alone: grad over vmap(jacrev), vmap(hessian)."""

    def loss(params: dict[str, torch.Tensor]) -> torch.Tensor:
        def single(point: torch.Tensor) -> torch.Tensor:
            return functional_call(model, params, (point[None],))[0]

        value = functional_call(model, params, (x,))
        return residual(value, vmap(jacrev(single))(x), vmap(hessian(single))(x))

    grads = grad(loss)(dict(model.named_parameters()))
    return [grads[name] for name, _ in model.named_parameters()]


@pytest.mark.parametrize("front", FRONTS)
@pytest.mark.parametrize("activation", ACTIVATIONS)
def test_laplacian_residual_loss_gradient_matches_torch_func(activation, front, generator):
    model = make_model(activation, front, 3, 1, generator)
    x = points(16, 3, generator)
    source = torch.sin(x).prod(dim=1, keepdim=True)

    def residual(value, jac, hess):
        return ((diagonal(hess).sum(-1) + source) ** 2).mean()

    loss = ((taylor_laplacian(model, x).laplacian + source) ** 2).mean()
    for actual, expected in zip(
        parameter_gradients(model, loss), reference_gradients(model, x, residual)
    ):
        close(actual, expected)


@pytest.mark.parametrize("activation", ["tanh", "softplus_beta2_threshold1", "gelu_tanh"])
def test_mixed_term_loss_gradient_matches_torch_func(activation, generator):
    model = make_model(activation, "rescale+fourier", 2, 2, generator)
    x = points(16, 2, generator)

    def residual(value, jac, hess):
        u_xy, u_x = hess[:, 0, 0, 1], jac[:, 1, 0]
        return ((u_xy + value[:, 0] * u_x - hess[:, 1, 1, 1]) ** 2).mean()

    value, jac, hess = taylor_hessian(model, x)
    loss = residual(value, jac, hess)
    for actual, expected in zip(
        parameter_gradients(model, loss), reference_gradients(model, x, residual)
    ):
        close(actual, expected)


# ---- support and errors -------------------------------------------------------------------


class Branching(nn.Module):
    """A forward that reads its points' values in Python: no graph can stand for it."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x[:, :1] if x.sum() > 0 else -x[:, :1]


@pytest.mark.parametrize(
    ("model", "culprit"),
    [
        (nn.Sequential(nn.Linear(2, 4), nn.GroupNorm(2, 4), nn.Linear(4, 1)), "group_norm"),
        (
            nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3), nn.Linear(3, 1)),
            "batch_norm",
        ),
        (lambda x: torch.special.erfcx(x[:, :1] * x[:, 1:]), "aten.special_erfcx"),
        (Branching(), "could not be traced"),
    ],
)
def test_unsupported_models_are_named_so_callers_can_fall_back(model, culprit):
    x = torch.rand(3, 2)
    supported, reason = taylor_supported(model, x)
    assert not supported
    assert culprit in reason and "autograd" in reason
    with pytest.raises(TaylorModeUnsupported, match="autograd"):
        taylor_forward(model, x, [0, 1])


class Doubled(nn.Sequential):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return 2 * super().forward(x)


def test_supported_models_say_so():
    x = torch.rand(3, 2)
    assert taylor_supported(MLP(2, 1, activation="gelu"), x) == (True, "")
    assert taylor_supported(nn.Sequential(FourierFeatures(2, 3), nn.Linear(6, 1)), x)[0]
    assert taylor_supported(Doubled(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1)), x)[0]
    assert taylor_supported(lambda x: x.sum(dim=1, keepdim=True), x)[0]


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"directions": torch.zeros(2, 4)}, ValueError, r"shape \(k, 3\)"),
        ({"directions": torch.zeros(5, 2, 3)}, ValueError, r"\(8, k, 3\)"),
        ({"directions": [0, 3]}, IndexError, r"0\.\.2"),
        ({"directions": [0, 1], "second": "hessian"}, ValueError, "choose one of"),
        ({"directions": [0, 1], "weights": torch.ones(2)}, ValueError, "collapsed"),
        ({"directions": [0, 1], "second": "pairs"}, ValueError, "needs pairs"),
        ({"directions": [0, 1], "second": "pairs", "pairs": [(0, 2)]}, IndexError, "direction"),
        (
            {"directions": [0, 1], "second": "collapsed", "weights": torch.ones(3)},
            ValueError,
            "(2,)",
        ),
        ({"directions": torch.zeros(0, dtype=torch.long)}, ValueError, "at least one"),
    ],
)
def test_bad_arguments_say_what_was_expected(kwargs, error, message, generator):
    model = make_model("tanh", "plain", 3, 1, generator)
    with pytest.raises(error, match=message):
        taylor_forward(model, points(8, 3, generator), **kwargs)


def test_bad_inputs_are_refused(generator):
    model = make_model("tanh", "plain", 3, 1, generator)
    x = points(8, 3, generator)
    with pytest.raises(ValueError, match="repeat"):
        taylor_hessian_diag(model, x, [1, 1])
    with pytest.raises(IndexError, match="input"):
        taylor_laplacian(model, x, [5])
    with pytest.raises(ValueError, match=r"shape \(N, d\)"):
        taylor_laplacian(model, x[0])
