"""The residual engine's public functions against torch.func, in float64 to 1e-10."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.func import functional_call, jacrev, vmap

import pinn.derivatives as derivatives
from pinn.derivatives import check_pointwise, gradient, hessian, hessian_diag, laplacian
from pinn.errors import NotPointwiseError, PinnError
from pinn.nn import InputOptions
from pinn.nn.mlp import MLP

TOL = {"atol": 1e-10, "rtol": 1e-10}
DIMS = (1, 2, 3, 5)
OUTS = (1, 2)
ENGINES = ("auto", "taylor", "autograd", "functorch")
ACTIVATIONS = ("tanh", "sin", "softplus", "gelu", "silu", "sigmoid")
N_POINTS = 24


# ---- models -------------------------------------------------------------------------------


def random_mlp(
    d: int, m: int, activation: str, generator: torch.Generator, width: int = 8
) -> nn.Module:
    """A float64 MLP with Xavier weights and random (not zero) biases."""
    model = MLP(d, m, width=width, depth=2, activation=activation, generator=generator).double()
    with torch.no_grad():
        for layer in model:
            if isinstance(layer, nn.Linear):
                layer.bias.copy_(0.5 * torch.randn(layer.bias.shape, generator=generator))
    return model


class GaussianWaves(nn.Module):
    """u_k(x) = sin(x @ A + b)_k * exp(-s |x|^2) * (1 + c_k x_0 x_{d-1}): not an MLP."""

    def __init__(self, d: int, m: int, generator: torch.Generator):
        super().__init__()
        self.waves = nn.Parameter(torch.randn(d, m, generator=generator, dtype=torch.float64))
        self.phase = nn.Parameter(torch.randn(m, generator=generator, dtype=torch.float64))
        self.decay = nn.Parameter(torch.tensor(0.7, dtype=torch.float64))
        self.coupling = nn.Parameter(torch.randn(m, generator=generator, dtype=torch.float64))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        envelope = torch.exp(-self.decay * (x * x).sum(dim=1, keepdim=True))
        product = 1 + self.coupling * (x[:, :1] * x[:, -1:])
        return torch.sin(x @ self.waves + self.phase) * envelope * product


class ResidualNet(nn.Module):
    """Skip connections and a LayerNorm (pointwise: it normalises each row on its own)."""

    def __init__(self, d: int, m: int, generator: torch.Generator, width: int = 8):
        super().__init__()
        self.lift = nn.Linear(d, width)
        self.blocks = nn.ModuleList(nn.Linear(width, width) for _ in range(2))
        self.norm = nn.LayerNorm(width)
        self.head = nn.Linear(width, m)
        self.skip = nn.Linear(d, m, bias=False)
        with torch.no_grad():
            for p in self.parameters():
                p.copy_(0.6 * torch.randn(p.shape, generator=generator))
        self.double()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.tanh(self.lift(x))
        for block in self.blocks:
            h = h + torch.sin(block(h))
        return self.head(torch.tanh(self.norm(h))) + self.skip(x) ** 2


def make_model(kind: str, d: int, m: int, generator: torch.Generator) -> nn.Module:
    if kind == "waves":
        return GaussianWaves(d, m, generator)
    if kind == "resnet":
        return ResidualNet(d, m, generator)
    return random_mlp(d, m, kind, generator)


def points(n: int, d: int, generator: torch.Generator, dtype=torch.float64) -> torch.Tensor:
    return 0.8 * torch.randn(n, d, generator=generator, dtype=dtype)


# ---- torch.func references ----------------------------------------------------------------


def per_point(f):
    """The (d,) -> (m,) function of one point, for torch.func."""
    return lambda xi: f(xi.unsqueeze(0)).reshape(-1)


def reference_gradient(f, x: torch.Tensor) -> torch.Tensor:
    return vmap(jacrev(per_point(f)))(x)


def reference_hessian(f, x: torch.Tensor) -> torch.Tensor:
    return vmap(torch.func.hessian(per_point(f)))(x)


def reference_all(f, x: torch.Tensor) -> dict[str, torch.Tensor]:
    full = reference_hessian(f, x)
    diag = full.diagonal(dim1=-2, dim2=-1)
    return {
        "gradient": reference_gradient(f, x),
        "hessian_diag": diag,
        "laplacian": diag.sum(dim=-1),
        "hessian": full,
    }


def engine_all(f, x: torch.Tensor, engine: str = "auto") -> dict[str, torch.Tensor]:
    return {
        "gradient": gradient(f, x, engine=engine),
        "hessian_diag": hessian_diag(f, x, engine=engine),
        "laplacian": laplacian(f, x, engine=engine),
        "hessian": hessian(f, x, engine=engine),
    }


def assert_matches_reference(f, x: torch.Tensor, m: int, engine: str = "auto") -> None:
    n, d = x.shape
    expected_shapes = {
        "gradient": (n, m, d),
        "hessian_diag": (n, m, d),
        "laplacian": (n, m),
        "hessian": (n, m, d, d),
    }
    actual = engine_all(f, x, engine)
    expected = reference_all(f, x)
    for name, shape in expected_shapes.items():
        assert actual[name].shape == shape, name
        assert actual[name].dtype == x.dtype, name
        torch.testing.assert_close(actual[name], expected[name], **TOL, msg=name)


# ---- agreement with torch.func ------------------------------------------------------------


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("activation", ACTIVATIONS)
@pytest.mark.parametrize("m", OUTS)
@pytest.mark.parametrize("d", DIMS)
def test_mlp_derivatives_match_torch_func(d, m, activation, engine, generator):
    model = random_mlp(d, m, activation, generator)
    x = points(N_POINTS, d, generator)
    assert_matches_reference(model, x, m, engine)


@pytest.mark.parametrize("engine", ["auto", "autograd", "functorch"])
@pytest.mark.parametrize("kind", ["waves", "resnet"])
@pytest.mark.parametrize("m", OUTS)
@pytest.mark.parametrize("d", DIMS)
def test_non_mlp_pointwise_model_derivatives_match_torch_func(kind, d, m, engine, generator):
    model = make_model(kind, d, m, generator)
    x = points(N_POINTS, d, generator)
    assert_matches_reference(model, x, m, engine)


def test_reference_is_not_trivially_zero(generator):
    """Guards the comparisons above: the second derivatives checked are far from zero."""
    model = make_model("waves", 3, 2, generator)
    x = points(N_POINTS, 3, generator)
    full = hessian(model, x)
    assert full.abs().amax() > 0.1
    off_diagonal = full - torch.diag_embed(full.diagonal(dim1=-2, dim2=-1))
    assert off_diagonal.abs().amax() > 0.1


def test_lambda_model_matches_closed_form(generator):
    def f(x):
        return torch.stack([x[:, 0] ** 2 * x[:, 1], torch.sin(x[:, 1]) * x[:, 0]], dim=1)

    x = points(N_POINTS, 2, generator)
    x0, x1 = x[:, 0], x[:, 1]
    zeros = torch.zeros_like(x0)
    expected_gradient = torch.stack(
        [
            torch.stack([2 * x0 * x1, x0**2], dim=1),
            torch.stack([torch.sin(x1), x0 * torch.cos(x1)], dim=1),
        ],
        dim=1,
    )
    expected_hessian = torch.stack(
        [
            torch.stack([torch.stack([2 * x1, 2 * x0], 1), torch.stack([2 * x0, zeros], 1)], 1),
            torch.stack(
                [
                    torch.stack([zeros, torch.cos(x1)], 1),
                    torch.stack([torch.cos(x1), -x0 * torch.sin(x1)], 1),
                ],
                1,
            ),
        ],
        dim=1,
    )
    torch.testing.assert_close(gradient(f, x), expected_gradient, **TOL)
    torch.testing.assert_close(hessian(f, x), expected_hessian, **TOL)
    torch.testing.assert_close(
        laplacian(f, x), expected_hessian.diagonal(dim1=-2, dim2=-1).sum(-1), **TOL
    )
    assert_matches_reference(f, x, 2)


@pytest.mark.parametrize("d", [2, 3])
def test_model_ignoring_an_input_has_zero_derivatives_in_it(d, generator):
    inner = random_mlp(1, 2, "tanh", generator)

    def f(x):
        return inner(x[:, :1])  # the other inputs are ignored

    x = points(N_POINTS, d, generator)
    grads, full = gradient(f, x), hessian(f, x)
    assert torch.equal(grads[:, :, 1:], torch.zeros_like(grads[:, :, 1:]))
    assert torch.equal(full[:, :, 1:, :], torch.zeros_like(full[:, :, 1:, :]))
    assert torch.equal(full[:, :, :, 1:], torch.zeros_like(full[:, :, :, 1:]))
    assert grads[:, :, 0].abs().amax() > 1e-3
    assert_matches_reference(f, x, 2)


def test_model_ignoring_a_trailing_column_entirely(generator):
    """x[:, 1] never reaches the output, not even through a slice of x."""
    inner = random_mlp(1, 1, "sin", generator)
    x = points(N_POINTS, 2, generator)

    def f(z):
        return inner(z.narrow(1, 0, 1)) * 1.0

    torch.testing.assert_close(hessian_diag(f, x)[:, 0, 1], torch.zeros(N_POINTS, dtype=x.dtype))
    assert_matches_reference(f, x, 1)


def test_affine_and_constant_models_have_zero_second_derivatives(generator):
    weights = torch.randn(3, 2, generator=generator, dtype=torch.float64)
    x = points(N_POINTS, 3, generator)

    def affine(z):
        return z @ weights + 1.0

    expected_gradient = weights.T.expand(N_POINTS, 2, 3)
    torch.testing.assert_close(gradient(affine, x), expected_gradient, **TOL)
    assert torch.equal(hessian(affine, x), torch.zeros(N_POINTS, 2, 3, 3, dtype=x.dtype))
    assert torch.equal(laplacian(affine, x), torch.zeros(N_POINTS, 2, dtype=x.dtype))

    offset = nn.Parameter(torch.tensor([1.5], dtype=torch.float64))

    def constant(z):  # depends on a parameter, not on z
        return offset.expand(z.shape[0], 1)

    assert torch.equal(gradient(constant, x), torch.zeros(N_POINTS, 1, 3, dtype=x.dtype))
    assert torch.equal(hessian(constant, x), torch.zeros(N_POINTS, 1, 3, 3, dtype=x.dtype))


def test_model_returning_a_vector_counts_as_one_output(generator):
    model = random_mlp(2, 1, "tanh", generator)

    def f(x):
        return model(x)[:, 0]

    x = points(N_POINTS, 2, generator)
    assert gradient(f, x).shape == (N_POINTS, 1, 2)
    assert laplacian(f, x).shape == (N_POINTS, 1)
    torch.testing.assert_close(laplacian(f, x), laplacian(model, x), **TOL)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(
    ("model", "got"),
    [
        (lambda x: x.sum(), r"got \(\)"),
        (lambda x: x[:, :, None] * x[:, None, :], r"got \(5, 2, 2\)"),
        (lambda x: (x, x), r"one tensor, got 2 outputs|got tuple"),
    ],
)
def test_a_model_of_the_wrong_output_shape_is_refused_saying_what_it_gave(model, got, engine):
    x = torch.rand(5, 2, dtype=torch.float64)
    with pytest.raises(ValueError, match=got):
        laplacian(model, x, engine=engine)


def test_single_point_batch(generator):
    model = random_mlp(3, 2, "tanh", generator)
    x = points(1, 3, generator)
    assert_matches_reference(model, x, 2)


def test_hessian_diag_is_the_diagonal_of_the_hessian_and_hessian_is_symmetric(generator):
    model = random_mlp(3, 2, "softplus", generator)
    x = points(N_POINTS, 3, generator)
    full = hessian(model, x)
    torch.testing.assert_close(
        hessian_diag(model, x), full.diagonal(dim1=-2, dim2=-1), atol=1e-14, rtol=0
    )
    torch.testing.assert_close(full, full.transpose(-1, -2), **TOL)


@pytest.mark.parametrize("activation", ["tanh", "gelu"])
def test_float32_models_match_torch_func_to_float32_precision(activation, generator):
    model = MLP(2, 2, width=8, depth=2, activation=activation, generator=generator)
    x = points(N_POINTS, 2, generator, dtype=torch.float32)
    expected = reference_all(model, x)
    for name, value in engine_all(model, x).items():
        assert value.dtype == torch.float32
        torch.testing.assert_close(value, expected[name], atol=1e-5, rtol=1e-4, msg=name)


def test_float32_mlp_with_input_rescaling(generator):
    model = MLP(
        2,
        1,
        width=8,
        depth=2,
        inputs=InputOptions(lower=[0.0, 0.0], upper=[1.0, 2.0]),
        generator=generator,
    )
    x = torch.rand(N_POINTS, 2, generator=generator)
    assert gradient(model, x).dtype == torch.float32


def test_mlp_with_input_rescaling_in_float64(generator):
    model = MLP(
        2,
        1,
        width=8,
        depth=2,
        inputs=InputOptions(lower=[0.0, -1.0], upper=[1.0, 3.0]),
        generator=generator,
    )
    model = model.double()
    x = points(N_POINTS, 2, generator)
    assert_matches_reference(model, x, 1)


# ---- differentiable in the parameters -----------------------------------------------------


def _loss_from_engine(kind: str, model, x: torch.Tensor, engine: str) -> torch.Tensor:
    if kind == "laplacian":
        return ((laplacian(model, x, engine) + 1) ** 2).mean()
    if kind == "gradient":
        return (gradient(model, x, engine) ** 2).sum(dim=-1).mean()
    if kind == "hessian_diag":
        return (hessian_diag(model, x, engine) * x.unsqueeze(1)).sum(dim=-1).pow(2).mean()
    return _mixed_term_loss(hessian(model, x, engine))


def _mixed_term_loss(full: torch.Tensor) -> torch.Tensor:
    """A loss weighting every entry of the (N, m, d, d) Hessians differently."""
    d = full.shape[-1]
    index = torch.arange(d, dtype=full.dtype)
    weights = 1 + index.unsqueeze(1) + 2 * index.unsqueeze(0)
    return ((full * weights).sum(dim=(-1, -2)) + 0.5).pow(2).mean()


def _loss_from_torch_func(kind: str, model, params, buffers, x: torch.Tensor) -> torch.Tensor:
    def f(z):
        return functional_call(model, (params, buffers), (z,))

    if kind == "gradient":
        return (reference_gradient(f, x) ** 2).sum(dim=-1).mean()
    full = reference_hessian(f, x)
    diag = full.diagonal(dim1=-2, dim2=-1)
    if kind == "laplacian":
        return ((diag.sum(dim=-1) + 1) ** 2).mean()
    if kind == "hessian_diag":
        return (diag * x.unsqueeze(1)).sum(dim=-1).pow(2).mean()
    return _mixed_term_loss(full)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("loss_kind", ["laplacian", "gradient", "hessian_diag", "hessian"])
@pytest.mark.parametrize(
    ("model_kind", "d", "m"),
    [("tanh", 2, 1), ("sin", 3, 2), ("gelu", 1, 1), ("softplus", 5, 1), ("waves", 2, 2)],
)
def test_parameter_gradients_of_a_loss_match_torch_func(
    loss_kind, model_kind, d, m, engine, generator
):
    if engine == "taylor" and model_kind == "waves":
        pytest.skip("forward Taylor mode does not carry this hand-written module")
    model = make_model(model_kind, d, m, generator)
    x = points(16, d, generator)
    params = dict(model.named_parameters())
    buffers = dict(model.named_buffers())

    loss = _loss_from_engine(loss_kind, model, x, engine)
    assert loss.requires_grad
    # The last bias never reaches a derivative: its gradient is zero, not missing.
    actual = torch.autograd.grad(
        loss, list(params.values()), allow_unused=True, materialize_grads=True
    )

    expected_loss = _loss_from_torch_func(loss_kind, model, params, buffers, x)
    expected = torch.func.grad(lambda p: _loss_from_torch_func(loss_kind, model, p, buffers, x))(
        params
    )
    torch.testing.assert_close(loss, expected_loss, **TOL)
    for (name, _), got in zip(params.items(), actual):
        torch.testing.assert_close(got, expected[name], **TOL, msg=name)
    assert any(g.abs().amax() > 1e-6 for g in actual)


# ---- cost: the diagonal never builds the full Hessian -------------------------------------


def _forbid_torch_func(monkeypatch) -> None:
    def refuse(*args, **kwargs):
        raise AssertionError("the lazy engine must not use torch.func here")

    for name in ("hessian", "jacrev", "jacfwd", "vmap"):
        monkeypatch.setattr(torch.func, name, refuse)


@pytest.mark.parametrize("function", ["hessian_diag", "laplacian", "hessian", "gradient"])
@pytest.mark.parametrize("m", OUTS)
@pytest.mark.parametrize("d", DIMS)
def test_backward_pass_count(function, d, m, generator, monkeypatch, grad_calls):
    model = random_mlp(d, m, "tanh", generator)
    x = points(16, d, generator)
    _forbid_torch_func(monkeypatch)
    getattr(derivatives, function)(model, x, engine="autograd")
    # One pass for each output's gradient, then one per input dimension for its second
    # derivatives: 1 + d per output, never d * d.
    expected = m if function == "gradient" else m * (1 + d)
    assert grad_calls[0] == expected


# ---- pointwise checks ---------------------------------------------------------------------


def batchnorm_model(generator: torch.Generator, **batchnorm_kwargs) -> nn.Module:
    model = nn.Sequential(
        nn.Linear(2, 6), nn.BatchNorm1d(6, **batchnorm_kwargs), nn.Tanh(), nn.Linear(6, 1)
    ).double()
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=generator))
    return model


@pytest.mark.parametrize("function", [gradient, hessian_diag, laplacian, hessian])
def test_batchnorm_in_training_mode_is_refused_by_name(function, generator):
    model = batchnorm_model(generator).train()
    x = points(16, 2, generator)
    with pytest.raises(NotPointwiseError, match=r"\(BatchNorm1d\)") as info:
        function(model, x)
    assert isinstance(info.value, PinnError)
    assert "LayerNorm" in str(info.value)  # says how to fix it


def test_batchnorm_is_refused_without_points_and_through_a_bound_method(generator):
    model = batchnorm_model(generator).train()
    with pytest.raises(NotPointwiseError, match="BatchNorm1d"):
        check_pointwise(model)
    with pytest.raises(NotPointwiseError, match="BatchNorm1d"):
        check_pointwise(model.forward, points(8, 2, generator))


def test_batchnorm_in_eval_mode_is_accepted_and_correct(generator):
    model = batchnorm_model(generator)
    with torch.no_grad():  # give it non-trivial running statistics
        for _ in range(3):
            model(points(32, 2, generator) + 1.0)
    model.eval()
    x = points(N_POINTS, 2, generator)
    check_pointwise(model, x)
    assert_matches_reference(model, x, 1)


def test_batchnorm_without_running_stats_is_refused_even_in_eval_mode(generator):
    model = batchnorm_model(generator, track_running_stats=False).eval()
    # Named from the layer itself, before any point is evaluated.
    with pytest.raises(NotPointwiseError, match=r"\(BatchNorm1d\) mixes the points"):
        check_pointwise(model)
    with pytest.raises(NotPointwiseError, match=r"\(BatchNorm1d\)"):
        laplacian(model, points(16, 2, generator))


def test_wrapped_batchnorm_model_is_caught_numerically(generator):
    model = batchnorm_model(generator).train()
    with pytest.raises(NotPointwiseError, match="not pointwise"):
        check_pointwise(lambda z: model(z), points(16, 2, generator))


def test_batch_coupling_callable_is_refused(generator):
    def centred(x):
        return x - x.mean(dim=0)

    x = points(16, 3, generator)
    with pytest.raises(NotPointwiseError, match="not pointwise"):
        check_pointwise(centred, x)
    with pytest.raises(NotPointwiseError):
        laplacian(centred, x)


def test_dropout_in_training_mode_is_refused_and_accepted_in_eval(generator):
    model = nn.Sequential(nn.Linear(2, 16), nn.Tanh(), nn.Dropout(0.5), nn.Linear(16, 1))
    model = model.double()
    x = points(16, 2, generator)
    model.train()
    with pytest.raises(NotPointwiseError):
        check_pointwise(model, x)
    model.eval()
    check_pointwise(model, x)
    assert gradient(model, x).shape == (16, 1, 2)


@pytest.mark.parametrize("kind", ["tanh", "waves", "resnet"])
def test_pointwise_models_pass_the_check(kind, generator):
    model = make_model(kind, 3, 2, generator)
    x = points(16, 3, generator)
    assert check_pointwise(model, x) is None
    assert check_pointwise(lambda z: model(z) * 2, x) is None
    assert check_pointwise(model) is None
