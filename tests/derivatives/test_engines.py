"""Engines: selection, planning from recorded requests, and agreement between every path."""

import logging

import pytest
import torch
from torch import nn

from pinn import MLP, ConfigError
from pinn.derivatives.engines import Engine, FunctorchField, TaylorField, resolve_engine
from pinn.derivatives.field import Field, Requests
from pinn.nn import InputOptions

TOL = {"atol": 1e-10, "rtol": 1e-10}
NAMES = ("x", "y", "t")


def mlp(generator, d=3, m=1, activation="tanh", fourier_features=0):
    return MLP(
        d,
        m,
        width=12,
        depth=2,
        activation=activation,
        inputs=InputOptions(lower=[-1.0] * d, upper=[2.0] * d, fourier_features=fourier_features),
        generator=generator,
    ).double()


def everything(u: Field) -> dict[str, torch.Tensor]:
    """What a time-dependent residual with a mixed term might ask for."""
    return {
        "u": u(),
        "u_t": u.d("t"),
        "u_xx": u.d2("x"),
        "u_xy": u.d2("x", "y"),
        "lap": u.laplacian(),
        "grad": u.grad(),
        "hess": u.hessian(),
    }


class Wave(nn.Module):
    """A pointwise model with an operation Taylor mode has no rule for: autograd under auto."""

    def __init__(self, generator):
        super().__init__()
        self.a = nn.Parameter(torch.randn(3, 4, generator=generator, dtype=torch.float64))

    def forward(self, x):
        return torch.special.erfcx(x @ self.a).sum(dim=1, keepdim=True)


def test_auto_picks_taylor_for_an_mlp_and_autograd_otherwise(generator):
    probe = torch.rand(2, 3, dtype=torch.float64)
    assert resolve_engine("auto", mlp(generator), probe)[0] == "taylor"
    name, why = resolve_engine("auto", Wave(generator), probe)
    assert name == "autograd" and "aten.special_erfcx" in why and "test_engines.py" in why


def test_unknown_engine_and_taylor_on_an_unsupported_model_are_refused(generator):
    with pytest.raises(ConfigError, match="auto, taylor, autograd, functorch"):
        resolve_engine("jax", mlp(generator), None)
    with pytest.raises(ConfigError, match="engine=taylor cannot run this model"):
        resolve_engine("taylor", Wave(generator), torch.rand(2, 3, dtype=torch.float64))


def test_engine_says_once_which_path_runs(generator, caplog, pinn_messages):
    with caplog.at_level(logging.INFO, logger="pinn"):
        Engine("auto", mlp(generator), torch.rand(2, 3, dtype=torch.float64))
    assert pinn_messages() == [
        "residual engine: taylor (auto: every operation of the model has a Taylor rule)"
    ]


@pytest.mark.parametrize("fourier_features", [0, 5])
@pytest.mark.parametrize("name", ["auto", "taylor", "autograd", "functorch"])
def test_every_engine_agrees_with_autograd_on_every_request(name, fourier_features, generator):
    model = mlp(generator, fourier_features=fourier_features)
    engine = Engine(name, model, announce=False)
    x = torch.rand(20, 3, generator=generator, dtype=torch.float64)
    expected = everything(Field(model, x, NAMES))
    first = engine.field(x, NAMES, ("u",), "interior")
    everything(first)  # the first field of a site records what is asked
    second = engine.field(x, NAMES, ("u",), "interior")
    for key, value in everything(second).items():
        torch.testing.assert_close(value, expected[key], **TOL, msg=key)


def test_the_second_field_is_one_planned_taylor_pass(generator, grad_calls):
    model = mlp(generator)
    engine = Engine("taylor", model, announce=False)
    x = torch.rand(10, 3, generator=generator, dtype=torch.float64)
    recorder = engine.field(x, NAMES, ("u",), "interior")
    assert type(recorder) is Field
    recorder.d("t"), recorder.d2("x")
    assert recorder.requests == Requests(first={2}, diagonal={0})

    grad_calls[0] = 0
    planned = engine.field(x, NAMES, ("u",), "interior")
    assert isinstance(planned, TaylorField)
    u_t, u_xx = planned.d("t"), planned.d2("x")
    assert grad_calls[0] == 0  # both came from the forward pass
    torch.testing.assert_close(u_t, recorder.d("t"), **TOL)
    torch.testing.assert_close(u_xx, recorder.d2("x"), **TOL)
    # Something the plan did not foresee still comes out right, through autograd.
    torch.testing.assert_close(planned.d2("y"), recorder.d2("y"), **TOL)
    assert grad_calls[0] > 0


@pytest.mark.parametrize(
    "plan",
    [
        Requests(),
        Requests(first={0}),
        Requests(laplacian=True),
        Requests(diagonal={1}),
        Requests(first={2}, diagonal={0, 1}),
        Requests(mixed={(0, 1)}),
    ],
)
def test_taylor_field_fills_exactly_its_plan_correctly(plan, generator, grad_calls):
    model = mlp(generator, m=2)
    x = torch.rand(15, 3, generator=generator, dtype=torch.float64)
    reference = Field(model, x, NAMES, ("u", "v"))
    taylor = TaylorField(model, x, NAMES, ("u", "v"), plan=plan)
    torch.testing.assert_close(taylor.values, reference.values, **TOL)
    # Every planned derivative comes from the forward pass: no autograd call.
    grad_calls[0] = 0
    got = {}
    for out in ("u", "v"):
        for i in plan.first:
            got[out, "d", i] = taylor.d(i, out)
        if plan.laplacian:
            got[out, "laplacian"] = taylor.laplacian(out)
        for j in plan.diagonal:
            got[out, "d2", j] = taylor.d2(j, out=out)
        for i, j in plan.mixed:
            got[out, "d2", i, j] = taylor.d2(i, j, out)
    assert grad_calls[0] == 0
    for (out, kind, *at), value in got.items():
        if kind == "d":
            expected = reference.d(at[0], out)
        elif kind == "laplacian":
            expected = reference.laplacian(out)
        else:
            expected = reference.d2(at[0], out=out) if len(at) == 1 else reference.d2(*at, out)
        torch.testing.assert_close(value, expected, **TOL, msg=f"{out} {kind} {at}")


def test_functorch_field_builds_the_full_hessian_once(generator, monkeypatch):
    model = mlp(generator)
    x = torch.rand(8, 3, generator=generator, dtype=torch.float64)
    u = FunctorchField(model, x, NAMES)
    calls = []
    original = torch.func.vmap
    monkeypatch.setattr(torch.func, "vmap", lambda *a, **k: calls.append(1) or original(*a, **k))
    u.laplacian(), u.d2("x", "t"), u.hessian()
    assert len(calls) == 1
    torch.testing.assert_close(u.hessian(), Field(model, x, NAMES).hessian(), **TOL)


@pytest.mark.parametrize("name", ["auto", "taylor", "autograd", "functorch"])
def test_parameter_gradients_through_a_planned_residual_match(name, generator):
    model = mlp(generator)
    x = torch.rand(12, 3, generator=generator, dtype=torch.float64)

    def loss(u):
        return (u.d("t") - u.d2("x") - 0.3 * u.d2("x", "y") + u() ** 2).square().mean()

    expected = torch.autograd.grad(
        loss(Field(model, x, NAMES)), list(model.parameters()), materialize_grads=True
    )
    engine = Engine(name, model, announce=False)
    loss(engine.field(x, NAMES, ("u",), "interior"))
    got = torch.autograd.grad(
        loss(engine.field(x, NAMES, ("u",), "interior")),
        list(model.parameters()),
        materialize_grads=True,
    )
    for g, e in zip(got, expected):
        torch.testing.assert_close(g, e, **TOL)


def test_a_request_the_plan_missed_still_comes_out_right(generator):
    """Plan: the Laplacian only. Asking u_x and u_xy afterwards falls back to autograd."""
    model = MLP(2, 1, 8, 2, "tanh", generator=generator).double()
    x = torch.rand(5, 2, generator=generator, dtype=torch.float64)
    field = TaylorField(model, x, plan=Requests(laplacian=True))
    single = lambda p: model(p[None])[0, 0]  # noqa: E731
    full = torch.func.vmap(torch.func.hessian(single))(x)
    slope = torch.func.vmap(torch.func.grad(single))(x)
    torch.testing.assert_close(field.laplacian(), full.diagonal(dim1=1, dim2=2).sum(1))
    torch.testing.assert_close(field.d(0), slope[:, 0], rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(field.d2(0, 1), full[:, 0, 1], rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(field.d2(1), full[:, 1, 1], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", ["auto", "taylor", "autograd", "functorch"])
def test_derivatives_of_an_expression_of_u_are_right_on_every_engine(name, generator):
    """∂x(k(u) u_x) with k = 1 + u², against k'(u) u_x² + k(u) u_xx by torch.func."""
    model = mlp(generator)
    x = torch.rand(9, 3, generator=generator, dtype=torch.float64)
    single = lambda p: model(p[None])[0, 0]  # noqa: E731
    u = model(x)[:, 0]
    u_x = torch.func.vmap(torch.func.grad(single))(x)[:, 0]
    u_xx = torch.func.vmap(torch.func.hessian(single))(x)[:, 0, 0]
    expected = 2 * u * u_x**2 + (1 + u**2) * u_xx

    def flux_divergence(field):
        return field.derivative((1 + field() ** 2) * field.d("x"), "x")

    engine = Engine(name, model, announce=False)
    for _ in range(3):  # records, then the planned steps
        got = flux_divergence(engine.field(x, NAMES, ("u",), "interior"))
        torch.testing.assert_close(got, expected, **TOL)


def test_a_taylor_field_refuses_to_differentiate_its_numbers(generator):
    model = mlp(generator)
    x = torch.rand(4, 3, generator=generator, dtype=torch.float64)
    field = TaylorField(model, x, NAMES, plan=Requests(first={0}))
    with pytest.raises(ValueError, match="switches the site to autograd"):
        field.derivative(field() * field.d("x"), "x")
