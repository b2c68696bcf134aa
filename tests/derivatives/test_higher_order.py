"""Derivatives of any order along one input, u.d("x", order=k), on every engine, against
torch.func (nested jacfwd over jacrev, under vmap) in float64: pinn's networks (MLP with tanh
and sin, modified MLP, PirateNet, periodic embedding with Fourier features, a hard
constraint), one and three outputs, orders 1..4 along each input; parameter gradients of a loss
on u_xxx against autograd's; the plan through a checkpoint; the fallback where the univariate
Taylor pass has no rule, and what it means for compiling."""

from __future__ import annotations

import pytest
import torch
from torch.func import jacfwd, jacrev, vmap

import pinn
from pinn.derivatives.elementwise_higher import HIGHER_RULES, higher_rule
from pinn.derivatives.engines import Engine, FunctorchField, TaylorField
from pinn.derivatives.field import Field, Requests
from pinn.derivatives.univariate import taylor_derivatives, univariate_supported
from pinn.nn import MLP, InputOptions, ModifiedMLP
from pinn.nn.constraints import HardConstraint
from pinn.nn.pirate import PirateNet

DTYPE = torch.float64
TOL = {"rtol": 1e-10, "atol": 1e-10}
ENGINES = ["autograd", "taylor", "functorch", "auto"]
NAMES = ("x", "t")
ORDERS = [1, 2, 3, 4]


def periodic_fourier(d: int, m: int, generator: torch.Generator) -> torch.nn.Module:
    """x periodic (period 3, two harmonics) and 3 Fourier features of moderate scale."""
    options = InputOptions(periodic={0: 3.0}, harmonics=2, fourier_features=3, fourier_scale=0.2)
    return MLP(d, m, 8, 2, "tanh", options, generator=generator)


NETWORKS = {
    "mlp_tanh": lambda d, m, g: MLP(d, m, 8, 2, "tanh", generator=g),
    "mlp_sin": lambda d, m, g: MLP(d, m, 8, 2, "sin", generator=g),
    "modified": lambda d, m, g: ModifiedMLP(d, m, 8, 2, "tanh", generator=g),
    "pirate": lambda d, m, g: PirateNet(d, m, 8, 1, "tanh", generator=g),
    "periodic_fourier": periodic_fourier,
    "hard": lambda d, m, g: HardConstraint(MLP(d, m, 8, 2, "tanh", generator=g), transform),
}


def transform(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """g and B with nonzero derivatives of every order in every input."""
    g = torch.sin(x[:, 0]) + x[:, 1] ** 3 / 6
    b = x[:, 0] * (1 - x[:, 0]) * torch.exp(x.mean(dim=1))
    return g, b


def build(kind: str, m: int, seed: int = 0) -> torch.nn.Module:
    generator = torch.Generator().manual_seed(seed)
    network = NETWORKS[kind](len(NAMES), m, generator).to(DTYPE)
    with torch.no_grad():  # random biases and skip weights, so no derivative vanishes
        for parameter in network.parameters():
            parameter.add_(0.3 * torch.randn(parameter.shape, generator=generator, dtype=DTYPE))
    return network


def points(n: int = 6, seed: int = 1) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    return torch.rand(n, len(NAMES), generator=generator, dtype=DTYPE)


def reference(model, x: torch.Tensor, i: int, order: int) -> torch.Tensor:
    """(N, m) d^order u / dx_i^order by torch.func (`references`)."""
    return references(model, x, i, order)[order]


def references(model, x: torch.Tensor, i: int, order: int) -> list[torch.Tensor]:
    """[(N, m)] d^n u / dx_i^n for n = 0..order by torch.func: the model on the line
    x + s e_i through each point, differentiated in s by jacrev, then by jacfwd, each level
    handing the lower orders on as aux, under vmap."""
    unit = torch.zeros_like(x[0])
    unit[i] = 1.0

    def on_line(s: torch.Tensor, point: torch.Tensor) -> tuple[torch.Tensor, list]:
        value = model((point + s * unit)[None]).reshape(-1)
        return value, [value]

    derivative = on_line
    for level in range(order):
        derivative = with_lower_orders(derivative, jacrev if level == 0 else jacfwd)
    top, lower = vmap(derivative, in_dims=(None, 0))(x.new_zeros(()), x)
    return [*lower[:-1], top]


def with_lower_orders(f, transform):
    """s -> (df/ds, [the lower orders..., df/ds]) for f: s -> (top order, [lower orders])."""

    def derivative(s: torch.Tensor, point: torch.Tensor) -> tuple[torch.Tensor, list]:
        top, lower = transform(f, has_aux=True)(s, point)
        return top, [*lower, top]

    return derivative


def planned_field(engine: Engine, x: torch.Tensor, ask) -> Field:
    """The engine's field after a first one recorded what `ask(field)` asks (a second step)."""
    ask(engine.field(x, NAMES, outputs(engine), "interior"))
    return engine.field(x, NAMES, outputs(engine), "interior")


def outputs(engine: Engine) -> tuple[str, ...]:
    m = engine.model(points(1)).shape[1]
    return tuple(f"u{k}" for k in range(m))


def every_order(u: Field) -> dict[tuple[int, int, int], torch.Tensor]:
    """{(output, input, order): (N,)} for orders 1..4 along every input."""
    m = u.values.shape[1]
    return {
        (k, i, n): u.d(NAMES[i], k, order=n)
        for k in range(m)
        for i in range(len(NAMES))
        for n in ORDERS
    }


# ---- agreement with torch.func ------------------------------------------------------------


@pytest.mark.parametrize("m", [1, 3])
@pytest.mark.parametrize("kind", list(NETWORKS))
def test_every_order_along_every_input_matches_torch_func(kind, m):
    model, x = build(kind, m), points()
    expected = {
        (i, n): derivative
        for i in range(len(NAMES))
        for n, derivative in enumerate(references(model, x, i, max(ORDERS)))
    }
    for engine_name in ENGINES:
        engine = Engine(engine_name, model, x[:2], announce=False)
        u = planned_field(engine, x, every_order)
        if engine_name in ("taylor", "auto"):
            assert isinstance(u, TaylorField) and {n for _, n in u.plan.higher} == {3, 4}
        for (k, i, n), got in every_order(u).items():
            torch.testing.assert_close(got, expected[(i, n)][:, k], **TOL, msg=engine_name)


@pytest.mark.parametrize("engine_name", ["taylor", "functorch"])
def test_a_residual_along_one_input_is_served_as_asked(engine_name):
    """KdV-like u_t + u u_x + u_xxx: first derivatives in two inputs and u_xxx; and a plan
    entirely along x (one univariate pass serves the values too)."""
    model, x = build("mlp_tanh", 1), points()
    engine = Engine(engine_name, model, x[:2], announce=False)

    def kdv(u: Field) -> torch.Tensor:
        return u.d("t") + u() * u.d("x") + u.d("x", order=3)

    expected = kdv(Field(model, x, NAMES))
    torch.testing.assert_close(kdv(planned_field(engine, x, kdv)), expected, **TOL)

    def along_x(u: Field) -> torch.Tensor:
        return u() + u.d("x") + u.d("x", order=2) + u.d("x", order=4)

    engine = Engine(engine_name, model, x[:2], announce=False)
    u = planned_field(engine, x, along_x)
    torch.testing.assert_close(along_x(u), along_x(Field(model, x, NAMES)), **TOL)
    torch.testing.assert_close(u.d("x", order=3), reference(model, x, 0, 3)[:, 0], **TOL)


@pytest.mark.parametrize("activation", ["tanh", "sin", "sigmoid", "softplus", "silu", "gelu"])
def test_the_univariate_pass_carries_every_activation_to_order_five(activation):
    generator = torch.Generator().manual_seed(2)
    model = MLP(2, 2, 8, 2, activation, generator=generator).to(DTYPE)
    x = points()
    series = taylor_derivatives(model, x, 1, 5)
    for n in range(1, 6):
        torch.testing.assert_close(series.derivatives[..., n - 1], reference(model, x, 1, n), **TOL)


INVERSES = {  # arguments inside each function's domain for points in [0, 1)²
    "tan": lambda a, b: torch.tan(a - b),
    "atan": lambda a, b: torch.atan(3 * a - 2 * b),
    "asin": lambda a, b: torch.asin(0.9 * a - 0.5 * b),
    "acos": lambda a, b: torch.acos(0.5 * b - 0.9 * a),
    "asinh": lambda a, b: torch.asinh(4 * a - 3 * b),
    "acosh": lambda a, b: torch.acosh(1.1 + a + b * b),
    "atanh": lambda a, b: torch.atanh(0.9 * a - 0.5 * b),
    "log2": lambda a, b: torch.log2(0.5 + a * b),
    "log10": lambda a, b: torch.log10(0.5 + a - b * b),
    "exp2": lambda a, b: torch.exp2(2 * a - b),
    "atan2": lambda a, b: torch.atan2(a - 0.5, b - 0.5),
}


@pytest.mark.parametrize("name", INVERSES)
def test_inverse_functions_are_carried_to_order_six(name):
    """Their slopes are powers of quadratics (atan' = 1 / (1 + z²)): the rule expands the
    slope along the line, so every order checks that expansion against torch.func."""

    def model(x):
        return INVERSES[name](x[:, :1], x[:, 1:])

    x = points(seed=4)
    assert univariate_supported(model, x) == (True, "")
    series = taylor_derivatives(model, x, 0, 6)
    expected = references(model, x, 0, 6)
    for n in range(1, 7):
        torch.testing.assert_close(series.derivatives[..., n - 1], expected[n], **TOL)


def elementwise_zoo(x: torch.Tensor) -> torch.Tensor:
    """Every elementwise function with derivatives of every order, and products, quotients,
    powers and where: (N, 2) -> (N, 3)."""
    a, b = x[:, 0], x[:, 1]
    positive = 1.5 + a * a + b
    parts = [
        torch.exp(a) * torch.cos(b) / positive + torch.log(positive) * torch.sqrt(positive),
        torch.rsqrt(positive) + torch.log1p(b * b) - torch.expm1(a) * torch.erf(b) + positive**2.5,
        torch.sinh(a) * torch.cosh(b) + torch.nn.functional.gelu(a - b, approximate="tanh")
        + torch.where(a > 0.5, a**3, torch.relu(b) * b) + torch.abs(a - 2) * a,
    ]  # fmt: skip
    return torch.stack(parts, dim=1)


@pytest.mark.parametrize("i", [0, 1])
def test_the_univariate_pass_carries_every_elementwise_rule(i):
    x = points(seed=3)
    series = taylor_derivatives(elementwise_zoo, x, i, 4)
    for n in range(1, 5):
        torch.testing.assert_close(
            series.derivatives[..., n - 1], reference(elementwise_zoo, x, i, n), **TOL
        )


# ---- parameter gradients ------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["mlp_sin", "periodic_fourier", "hard"])
@pytest.mark.parametrize("engine_name", ["taylor", "functorch", "auto"])
def test_parameter_gradients_of_a_third_order_loss_match_autograd(engine_name, kind):
    model, x = build(kind, 1), points()

    def loss(u: Field) -> torch.Tensor:
        residual = u.d("t") + u() * u.d("x") + u.d("x", order=3) + 0.1 * u.d("t", order=3)
        return (residual**2).mean()

    def gradients(name: str) -> list[torch.Tensor]:
        u = planned_field(Engine(name, model, x[:2], announce=False), x, loss)
        return torch.autograd.grad(loss(u), list(model.parameters()), allow_unused=True)

    for got, expected in zip(gradients(engine_name), gradients("autograd"), strict=True):
        torch.testing.assert_close(got, expected, **TOL)


# ---- plans, fallbacks and compiling -------------------------------------------------------


def test_the_plan_round_trips_through_the_engine_state():
    model, x = build("mlp_tanh", 1), points()
    engine = Engine("taylor", model, x[:2], announce=False)
    engine.field(x, NAMES, ("u",), "interior").d("x", order=3)
    state = engine.state_dict()
    assert state["plans"]["interior"]["higher"] == [[0, 3]]
    resumed = Engine("taylor", model, x[:2], announce=False)
    resumed.load_state_dict(state)
    u = resumed.field(x, NAMES, ("u",), "interior")
    assert isinstance(u, TaylorField) and u.plan == Requests(higher={(0, 3)})
    torch.testing.assert_close(u.d("x", order=3), reference(model, x, 0, 3)[:, 0], **TOL)
    older = {**state, "plans": {"interior": dict(state["plans"]["interior"])}}
    del older["plans"]["interior"]["higher"]  # a checkpoint from before orders >= 3
    resumed.load_state_dict(older)
    assert resumed.field(x, NAMES, ("u",), "interior").plan == Requests()


class Squashed(torch.nn.Module):
    """A network whose activation, erfinv(tanh / 2), has first and second Taylor rules and no
    higher ones while the `erfinv_to_order_two` fixture is on."""

    def __init__(self):
        super().__init__()
        generator = torch.Generator().manual_seed(4)
        self.inner = torch.nn.Linear(2, 8).to(DTYPE)
        self.outer = torch.nn.Linear(8, 1).to(DTYPE)
        with torch.no_grad():
            for parameter in self.parameters():
                parameter.copy_(torch.randn(parameter.shape, generator=generator))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.outer(torch.erfinv(0.5 * torch.tanh(self.inner(x))))


def test_a_model_without_higher_rules_falls_back_and_blocks_compiling(erfinv_to_order_two):
    model, x = Squashed(), points()
    assert higher_rule(torch.ops.aten.erfinv.default) is None
    supported, why = univariate_supported(model, x)
    assert not supported and "aten.erfinv" in why
    engine = Engine("auto", model, x[:2], announce=False)

    def ask(u: Field) -> torch.Tensor:
        return u() + u.d("t") + u.d("x", order=3)

    u = planned_field(engine, x, ask)
    assert engine.name == "taylor" and isinstance(u, TaylorField)
    assert not u.x.requires_grad or u._autograd is None  # no autograd fallback field
    torch.testing.assert_close(u.d("x", order=3), reference(model, x, 0, 3)[:, 0], **TOL)
    assert u._autograd is None
    blockers = engine.compile_blockers()
    assert any("order >= 3" in b and "aten.erfinv" in b for b in blockers)
    loss = ask(u).square().mean()
    expected = ask(Field(model, x, NAMES)).square().mean()
    for got, want in zip(
        torch.autograd.grad(loss, list(model.parameters())),
        torch.autograd.grad(expected, list(model.parameters())),
        strict=True,
    ):
        torch.testing.assert_close(got, want, **TOL)


def test_a_supported_model_does_not_block_compiling_for_higher_orders():
    model, x = build("mlp_tanh", 1), points()
    engine = Engine("taylor", model, x[:2], announce=False)
    planned_field(engine, x, lambda u: u.d("x", order=3))
    assert engine.compile_blockers() == []


def test_a_higher_rule_is_dropped_when_its_function_is_registered_anew():
    op = torch.ops.aten.tanh.default
    saved_rule = pinn.derivatives.elementwise.ELEMENTWISE_RULES[op]
    saved_higher = HIGHER_RULES[op]
    try:
        pinn.register_elementwise(op, lambda z: saved_rule(z))  # a new σ rule: no higher one
        assert higher_rule(op) is None
        pinn.register_elementwise(op, lambda z: saved_rule(z), higher=saved_higher[1])
        assert higher_rule(op) is saved_higher[1]
    finally:
        pinn.derivatives.elementwise.ELEMENTWISE_RULES[op] = saved_rule
        HIGHER_RULES[op] = saved_higher


# ---- the public function, and bad orders --------------------------------------------------


@pytest.mark.parametrize("engine_name", ENGINES)
def test_the_public_derivative_function(engine_name):
    model, x = build("modified", 3), points()
    expected = references(model, x, 1, max(ORDERS))
    for order in ORDERS:
        got = pinn.derivative(model, x, 1, order, engine=engine_name)
        torch.testing.assert_close(got, expected[order], **TOL)


@pytest.mark.parametrize("order", [0, -1, 1.5, "3", True, None])
def test_a_bad_order_is_refused(order):
    model, x = build("mlp_tanh", 1), points()
    for u in (Field(model, x, NAMES), FunctorchField(model, x, NAMES)):
        with pytest.raises(ValueError, match="order must be an int >= 1"):
            u.d("x", order=order)
    with pytest.raises(ValueError, match="order must be an int >= 1"):
        pinn.derivative(model, x, 0, order)
