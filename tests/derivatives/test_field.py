"""Field: the lazy, caching view of a network's derivatives that residuals ask from."""

from __future__ import annotations

import gc
import warnings

import pytest
import torch
from torch import nn
from torch.func import jacrev, vmap

from pinn.derivatives.field import Field
from pinn.errors import ConfigError, PinnError
from pinn.nn.mlp import MLP

TOL = {"atol": 1e-10, "rtol": 1e-10}
NAMES = ("x", "y", "z")
N_POINTS = 20


def random_mlp(d: int, m: int, generator: torch.Generator, activation: str = "tanh") -> nn.Module:
    model = MLP(d, m, width=8, depth=2, activation=activation, generator=generator).double()
    with torch.no_grad():
        for layer in model:
            if isinstance(layer, nn.Linear):
                layer.bias.copy_(0.5 * torch.randn(layer.bias.shape, generator=generator))
    return model


def wave_model(d: int, m: int, generator: torch.Generator):
    """A pointwise callable with strong mixed terms: sin(x @ A) * exp(-|x|^2)."""
    waves = torch.randn(d, m, generator=generator, dtype=torch.float64)

    def f(x: torch.Tensor) -> torch.Tensor:
        return torch.sin(x @ waves + 0.3) * torch.exp(-(x * x).sum(dim=1, keepdim=True))

    return f


def make_model(kind: str, d: int, m: int, generator: torch.Generator):
    return wave_model(d, m, generator) if kind == "waves" else random_mlp(d, m, generator, kind)


def points(n: int, d: int, generator: torch.Generator) -> torch.Tensor:
    return 0.8 * torch.randn(n, d, generator=generator, dtype=torch.float64)


def per_point(f):
    return lambda xi: f(xi.unsqueeze(0)).reshape(-1)


def reference(f, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(N, m, d) gradients and (N, m, d, d) Hessians by torch.func."""
    return vmap(jacrev(per_point(f)))(x), vmap(torch.func.hessian(per_point(f)))(x)


# ---- agreement with torch.func ------------------------------------------------------------


@pytest.mark.parametrize("kind", ["tanh", "sin", "gelu", "waves"])
@pytest.mark.parametrize("d", [1, 2, 3])
def test_field_derivatives_match_torch_func(kind, d, generator):
    model = make_model(kind, d, 1, generator)
    x = points(N_POINTS, d, generator)
    grads, hessians = reference(model, x)
    u = Field(model, x, input_names=NAMES[:d])

    torch.testing.assert_close(u(), model(x)[:, 0], **TOL)
    torch.testing.assert_close(u.grad(), grads[:, 0], **TOL)
    torch.testing.assert_close(u.hessian(), hessians[:, 0], **TOL)
    torch.testing.assert_close(u.hessian_diag(), hessians[:, 0].diagonal(dim1=-2, dim2=-1), **TOL)
    torch.testing.assert_close(
        u.laplacian(), hessians[:, 0].diagonal(dim1=-2, dim2=-1).sum(-1), **TOL
    )
    for i, name in enumerate(NAMES[:d]):
        torch.testing.assert_close(u.d(name), grads[:, 0, i], **TOL)
        torch.testing.assert_close(u.d2(name), hessians[:, 0, i, i], **TOL)
        for j, other in enumerate(NAMES[:d]):
            torch.testing.assert_close(u.d2(name, other), hessians[:, 0, i, j], **TOL)
    assert u.grad().shape == (N_POINTS, d)
    assert u.hessian().shape == (N_POINTS, d, d)
    assert u.laplacian().shape == (N_POINTS,)
    assert u.d("x").shape == u.d2("x").shape == u().shape == (N_POINTS,)


def test_mixed_derivatives_are_really_mixed(generator):
    """Guards the test above: the mixed terms checked are far from zero and not the diagonal."""
    model = wave_model(2, 1, generator)
    u = Field(model, points(N_POINTS, 2, generator), input_names=("x", "y"))
    assert u.d2("x", "y").abs().amax() > 0.1
    assert not torch.allclose(u.d2("x", "y"), u.d2("x"))
    torch.testing.assert_close(u.d2("x", "y"), u.d2("y", "x"), **TOL)


def test_names_and_indices_give_the_same_derivatives(generator):
    model = make_model("waves", 3, 2, generator)
    x = points(N_POINTS, 3, generator)
    u = Field(model, x, input_names=("t", "x", "y"), output_names=("p", "q"))
    assert torch.equal(u.d("x", out="q"), u.d(1, out=1))
    assert torch.equal(u.d2("t", "y", out="p"), u.d2(0, 2, out=0))
    assert torch.equal(u.laplacian("q"), u.laplacian(1))
    assert torch.equal(u("p"), u(0))
    assert torch.equal(u.grad("q")[:, 2], u.d("y", "q"))


def test_default_names(generator):
    model = random_mlp(3, 2, generator)
    u = Field(model, points(4, 3, generator))
    assert u.input_names == ("x0", "x1", "x2")
    assert u.output_names == ("u0", "u1")
    assert u.dim == 3
    assert torch.equal(u.d("x1", out="u1"), u.d(1, out=1))


# ---- laziness and caching -----------------------------------------------------------------


def test_no_derivative_is_computed_until_asked(generator, grad_calls):
    model = random_mlp(2, 1, generator)
    u = Field(model, points(N_POINTS, 2, generator), input_names=("x", "y"))
    u()
    assert grad_calls[0] == 0


def test_repeated_requests_reuse_the_cache(generator, grad_calls):
    model = random_mlp(2, 1, generator)
    u = Field(model, points(N_POINTS, 2, generator), input_names=("x", "y"))

    first = u.d("x")
    assert grad_calls[0] == 1
    assert torch.equal(u.d("x"), first)
    u.d("y")
    u.grad()
    assert grad_calls[0] == 1  # one pass gives the whole gradient

    second = u.d2("x")
    assert grad_calls[0] == 2  # one more pass: the x row of the Hessian
    assert torch.equal(u.d2("x"), second)
    u.d2("x", "y")
    assert grad_calls[0] == 2  # d2u/dxdy is in the row already built
    u.d2("y", "x")
    assert grad_calls[0] == 2  # the Hessian is symmetric: d2u/dydx is d2u/dxdy
    u.d2("y")
    assert grad_calls[0] == 3  # the y row
    u.laplacian()
    u.hessian()
    u.hessian_diag()
    assert grad_calls[0] == 3  # 1 + d passes in all


def test_second_derivative_first_shares_the_gradient_pass(generator, grad_calls):
    model = random_mlp(3, 1, generator)
    u = Field(model, points(N_POINTS, 3, generator), input_names=NAMES)
    u.d2("z")
    assert grad_calls[0] == 2  # gradient, then the z row
    u.d("x")
    u.d("z")
    assert grad_calls[0] == 2
    u.laplacian()
    assert grad_calls[0] == 4  # the x and y rows only


@pytest.mark.parametrize("d", [1, 2, 5])
def test_laplacian_costs_one_plus_d_passes(d, generator, grad_calls):
    model = random_mlp(d, 1, generator)
    u = Field(model, points(N_POINTS, d, generator))
    u.laplacian()
    assert grad_calls[0] == 1 + d
    u.laplacian()
    u.hessian()
    assert grad_calls[0] == 1 + d


def test_each_output_has_its_own_cache(generator, grad_calls):
    model = random_mlp(2, 2, generator)
    u = Field(model, points(N_POINTS, 2, generator), output_names=("u", "v"))
    u.d(0, out="u")
    u.d(0, out="v")
    assert grad_calls[0] == 2
    u.d(1, out="u")
    u.d(1, out=1)
    assert grad_calls[0] == 2
    assert not torch.allclose(u.grad("u"), u.grad("v"))


# ---- several outputs ----------------------------------------------------------------------


def test_two_outputs_need_out_and_work_with_it(generator):
    model = make_model("waves", 2, 2, generator)
    x = points(N_POINTS, 2, generator)
    grads, hessians = reference(model, x)
    u = Field(model, x, input_names=("x", "y"), output_names=("u", "v"))

    calls = [
        lambda: u(),
        lambda: u.d("x"),
        lambda: u.d2("x"),
        lambda: u.d2("x", "y"),
        lambda: u.grad(),
        lambda: u.hessian_diag(),
        lambda: u.laplacian(),
        lambda: u.hessian(),
    ]
    for call in calls:
        with pytest.raises(ValueError, match="2 outputs") as info:
            call()
        assert "'u'" in str(info.value) and "'v'" in str(info.value)

    torch.testing.assert_close(u("v"), model(x)[:, 1], **TOL)
    torch.testing.assert_close(u.d("x", out="v"), grads[:, 1, 0], **TOL)
    torch.testing.assert_close(u.d2("y", out="v"), hessians[:, 1, 1, 1], **TOL)
    torch.testing.assert_close(u.d2("x", "y", out="v"), hessians[:, 1, 0, 1], **TOL)
    torch.testing.assert_close(u.grad(out="v"), grads[:, 1], **TOL)
    torch.testing.assert_close(u.hessian(out="v"), hessians[:, 1], **TOL)
    torch.testing.assert_close(
        u.laplacian(out="v"), hessians[:, 1].diagonal(dim1=-2, dim2=-1).sum(-1), **TOL
    )
    torch.testing.assert_close(
        u.laplacian(out=0), hessians[:, 0].diagonal(dim1=-2, dim2=-1).sum(-1), **TOL
    )


# ---- errors -------------------------------------------------------------------------------


def test_unknown_names_raise_key_error_listing_the_names(generator):
    model = random_mlp(2, 2, generator)
    u = Field(model, points(4, 2, generator), input_names=("x", "y"), output_names=("u", "v"))
    with pytest.raises(KeyError) as info:
        u.d("z", out="u")
    assert "'z'" in str(info.value) and "'x'" in str(info.value) and "'y'" in str(info.value)
    with pytest.raises(KeyError) as info:
        u.d2("x", "t", out="u")
    assert "'t'" in str(info.value) and "'x'" in str(info.value)
    with pytest.raises(KeyError) as info:
        u.laplacian(out="w")
    assert str(info.value) == "unknown output 'w'; the outputs are ['u', 'v']"  # unquoted
    assert isinstance(info.value, PinnError)  # reported in one line by the command line


def test_a_field_of_several_outputs_asked_without_a_name_says_how_to_name_one(generator):
    u = Field(random_mlp(2, 3, generator), points(4, 2, generator), ("x", "y"), ("u", "v", "p"))
    with pytest.raises(ConfigError) as refused:  # a PinnError: the command line's one line
        u.laplacian()
    message = str(refused.value)
    assert "3 outputs ['u', 'v', 'p']" in message and "out='u' in a condition" in message
    assert "u.d2('x', out='u')" in message  # a second derivative names its output by keyword


def test_an_output_passed_to_d2_as_a_coordinate_names_the_out_keyword(generator):
    u = Field(random_mlp(2, 2, generator), points(4, 2, generator), ("x", "y"), ("u", "v"))
    with pytest.raises(ConfigError) as refused:
        u.d2("x", "v")
    assert str(refused.value) == (
        "u.d2('x', 'v'): 'v' is an output, not a coordinate; the second derivative of 'v' is "
        "u.d2('x', out='v') (a second positional name is the mixed derivative's other "
        "coordinate: u.d2('x', 'y', out='v'))"
    )
    torch.testing.assert_close(u.d2("x", out="v"), u.d2("x", "x", "v"))  # the way it says


def test_indices_out_of_range_raise_index_error(generator):
    u = Field(random_mlp(2, 1, generator), points(4, 2, generator))
    with pytest.raises(IndexError, match="input index 2"):
        u.d(2)
    with pytest.raises(IndexError, match="input index -1"):
        u.d2(-1)
    with pytest.raises(IndexError, match="output index 1"):
        u.laplacian(1)


def test_model_returning_a_vector_is_one_output(generator):
    model = random_mlp(2, 1, generator)

    def flat(x):
        return model(x).squeeze(1)

    x = points(N_POINTS, 2, generator)
    u = Field(flat, x, input_names=("x", "y"))
    reference_field = Field(model, x, input_names=("x", "y"))
    assert u.values.shape == (N_POINTS, 1)
    assert u.output_names == ("u0",)
    assert u().shape == (N_POINTS,)
    torch.testing.assert_close(u.laplacian(), reference_field.laplacian(), **TOL)
    torch.testing.assert_close(u.d2("x", "y"), reference_field.d2("x", "y"), **TOL)


@pytest.mark.parametrize("shape", [(8,), (8, 2, 1), (), (2, 4, 2)])
def test_wrongly_shaped_points_raise_value_error(shape, generator):
    model = random_mlp(2, 1, generator)
    with pytest.raises(ValueError, match=r"\(N, d\)"):
        Field(model, torch.zeros(shape, dtype=torch.float64))


@pytest.mark.parametrize(
    "bad_model",
    [
        lambda x: x.sum(dim=0, keepdim=True),  # (1, d): one row for N points
        lambda x: x.unsqueeze(2),  # (N, d, 1)
        lambda x: x.sum(),  # a scalar
    ],
)
def test_wrongly_shaped_outputs_raise_value_error(bad_model, generator):
    with pytest.raises(ValueError, match=r"\(N, m\)"):
        Field(bad_model, points(8, 2, generator))


def test_wrong_number_of_names_raises_value_error(generator):
    model = random_mlp(2, 2, generator)
    x = points(4, 2, generator)
    with pytest.raises(ValueError, match="2 input names"):
        Field(model, x, input_names=("x", "y", "z"))
    with pytest.raises(ValueError, match="2 output names"):
        Field(model, x, output_names=("u",))


# ---- gradients flow to the parameters, not to the caller's points ------------------------


def test_derivatives_stay_differentiable_in_the_parameters(generator):
    model = random_mlp(2, 1, generator)
    x = points(N_POINTS, 2, generator)
    u = Field(model, x, input_names=("x", "y"))
    loss = ((u.laplacian() + u.d("x") * u.d2("x", "y") + 1) ** 2).mean()
    first_weight = model[0].weight
    (weight_grad,) = torch.autograd.grad(loss, first_weight)
    assert weight_grad.abs().amax() > 1e-6

    # The same loss through torch.func, as a function of that one weight.
    def loss_of(weight):
        def f(z):
            return torch.func.functional_call(model, {"0.weight": weight}, (z,))

        grads, hessians = reference(f, x)
        laplacian = hessians[:, 0].diagonal(dim1=-2, dim2=-1).sum(-1)
        return ((laplacian + grads[:, 0, 0] * hessians[:, 0, 0, 1] + 1) ** 2).mean()

    torch.testing.assert_close(weight_grad, torch.func.grad(loss_of)(first_weight), **TOL)


def test_field_does_not_modify_the_callers_points(generator):
    model = random_mlp(2, 1, generator)
    x = points(N_POINTS, 2, generator)
    copy = x.clone()
    u = Field(model, x)
    u.laplacian().sum().backward()
    assert not x.requires_grad
    assert x.grad is None
    assert torch.equal(x, copy)


def test_laplacian_in_high_dimension_holds_the_diagonal_not_every_row(generator):
    # Holding d Hessian rows of (N, d) (or views into them) would keep N d² numbers alive: the
    # full Hessian's memory. What the field keeps is measured as the storage of every live tensor.
    n, d = 6, 20
    model = MLP(d, 1, width=8, depth=2, generator=generator).double()
    u = Field(model, torch.rand(n, d, generator=generator, dtype=torch.float64))
    before = live_tensor_bytes()
    laplacian = u.laplacian()
    held = live_tensor_bytes() - before
    assert laplacian.shape == (n,)
    assert held < 4 * n * d * 8  # a few (N, d) float64 arrays; d rows would be 20 of them


def live_tensor_bytes() -> int:
    """Bytes of the storages of every tensor Python can reach (each storage counted once)."""
    gc.collect()
    storages = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # isinstance on torch's deprecated aliases warns
        for obj in gc.get_objects():
            if isinstance(obj, torch.Tensor):
                storage = obj.untyped_storage()
                storages[storage.data_ptr()] = storage.nbytes()
    return sum(storages.values())
