"""Hard constraints u = g + B N: exact on the boundary, differentiated right on every engine."""

from __future__ import annotations

import pytest
import torch
from torch.func import hessian, jacrev, vmap

from pinn import ConfigError, gradient, hessian_diag, laplacian, stochastic_laplacian
from pinn import hessian as engine_hessian
from pinn.derivatives.taylor import taylor_forward, taylor_supported
from pinn.nn.constraints import HardConstraint, constrain
from pinn.nn.mlp import MLP

DTYPE = torch.float64
TOL = {"rtol": 1e-10, "atol": 1e-10}
ENGINES = ("taylor", "autograd", "functorch")


def network(d: int, m: int, generator: torch.Generator) -> MLP:
    return MLP(d, m, 8, 2, "tanh", generator=generator).to(DTYPE)


def transform_of(kind: str, m: int):
    """(g, B) functions with nonzero first and second derivatives in every input."""

    def transform(x: torch.Tensor):
        g = torch.sin(x[:, 0]) * x[:, -1] ** 2 + x.sum(dim=1)
        b = x[:, 0] * (1 - x[:, 0]) * torch.exp(x.prod(dim=1))
        if kind == "columns":  # (N, m): a different factor per output
            scales = torch.arange(1, m + 1, dtype=x.dtype)
            return g[:, None] * scales, b[:, None] + scales
        if kind == "one_column":
            return g[:, None], b[:, None]
        return g, b

    return transform


def per_point(f):
    return lambda xi: f(xi[None]).reshape(-1)


def reference(model, x):
    """gradient (N, m, d) and Hessian (N, m, d, d) of the constrained model by torch.func."""
    return vmap(jacrev(per_point(model)))(x), vmap(hessian(per_point(model)))(x)


@pytest.mark.parametrize("kind", ["vector", "one_column", "columns"])
@pytest.mark.parametrize("m", [1, 2])
@pytest.mark.parametrize("d", [1, 2, 3])
@pytest.mark.parametrize("engine", ENGINES)
def test_every_engine_differentiates_through_the_constraint(engine, d, m, kind, generator):
    model = HardConstraint(network(d, m, generator), transform_of(kind, m))
    x = torch.rand(7, d, generator=generator, dtype=DTYPE)
    expected_gradient, expected_hessian = reference(model, x)
    diagonal = expected_hessian.diagonal(dim1=-2, dim2=-1)
    torch.testing.assert_close(gradient(model, x, engine=engine), expected_gradient, **TOL)
    torch.testing.assert_close(hessian_diag(model, x, engine=engine), diagonal, **TOL)
    torch.testing.assert_close(laplacian(model, x, engine=engine), diagonal.sum(-1), **TOL)
    torch.testing.assert_close(engine_hessian(model, x, engine=engine), expected_hessian, **TOL)


def test_taylor_product_rule_matches_the_closed_form(generator):
    """u_ii = g_ii + B_ii N + 2 B_i N_i + B N_ii, with g and B differentiated by hand."""
    net = network(2, 1, generator)
    model = HardConstraint(net, lambda x: (x[:, 0] ** 3, torch.sin(x[:, 1]) * x[:, 0]))
    x = torch.rand(9, 2, generator=generator, dtype=DTYPE)
    n_value = net(x)[:, 0]
    n_first = vmap(jacrev(per_point(net)))(x)[:, 0]  # (N, d)
    n_second = vmap(hessian(per_point(net)))(x)[:, 0].diagonal(dim1=-2, dim2=-1)
    b = torch.sin(x[:, 1]) * x[:, 0]
    b_first = torch.stack([torch.sin(x[:, 1]), x[:, 0] * torch.cos(x[:, 1])], dim=1)
    b_second = torch.stack([torch.zeros_like(b), -b], dim=1)
    g_second = torch.stack([6 * x[:, 0], torch.zeros_like(b)], dim=1)
    expected = (
        g_second + b_second * n_value[:, None] + 2 * b_first * n_first + b[:, None] * n_second
    )
    jet = taylor_forward(model, x, [0, 1], "diagonal")
    torch.testing.assert_close(jet.second[:, 0], expected, **TOL)


@pytest.mark.parametrize("second", ["diagonal", "collapsed", "weighted", "full", "pairs", "none"])
@pytest.mark.parametrize("directions", ["indices", "per_point_indices", "floats", "per_point"])
def test_taylor_modes_and_directions_match_torch_func(second, directions, generator):
    d, m, n = 3, 2, 6
    model = HardConstraint(network(d, m, generator), transform_of("vector", m))
    x = torch.rand(n, d, generator=generator, dtype=DTYPE)
    eye = torch.eye(d, dtype=DTYPE)
    chosen = {
        "indices": torch.tensor([2, 0]),
        "per_point_indices": torch.randint(0, d, (n, 2), generator=generator),
        "floats": torch.randn(2, d, generator=generator, dtype=DTYPE),
        "per_point": torch.randn(n, 2, d, generator=generator, dtype=DTYPE),
    }[directions]
    vectors = chosen if chosen.is_floating_point() else eye[chosen]
    vectors = vectors.expand(n, -1, -1)  # (N, k, d)
    grad, full = reference(model, x)
    first = torch.einsum("nmd,nkd->nmk", grad, vectors)
    pairwise = torch.einsum("nkd,nmde,nle->nmkl", vectors, full, vectors)
    options, expected = {}, None
    if second == "diagonal":
        expected = pairwise.diagonal(dim1=-2, dim2=-1)
    elif second in ("collapsed", "weighted"):
        weights = torch.tensor([0.5, -2.0], dtype=DTYPE) if second == "weighted" else None
        options = {"weights": weights} if weights is not None else {}
        diagonal = pairwise.diagonal(dim1=-2, dim2=-1)
        expected = (diagonal * (weights if weights is not None else 1.0)).sum(-1)
        second = "collapsed"
    elif second == "full":
        expected = pairwise
    elif second == "pairs":
        options = {"pairs": [(0, 1), (1, 1)]}
        expected = torch.stack([pairwise[..., 0, 1], pairwise[..., 1, 1]], dim=-1)
    jet = taylor_forward(model, x, chosen, second, **options)
    torch.testing.assert_close(jet.value, model(x), **TOL)
    torch.testing.assert_close(jet.first, first, **TOL)
    if expected is None:
        assert jet.second.shape == (n, m, 0)
    else:
        torch.testing.assert_close(jet.second, expected, **TOL)


@pytest.mark.parametrize("engine", ENGINES)
def test_parameter_gradient_of_a_residual_loss_matches_torch_func(engine, generator):
    model = HardConstraint(network(2, 1, generator), transform_of("vector", 1))
    x = torch.rand(8, 2, generator=generator, dtype=DTYPE)
    parameters = list(model.parameters())
    loss = laplacian(model, x, engine=engine).square().mean()
    actual = torch.autograd.grad(loss, parameters)
    reference_loss = reference(model, x)[1].diagonal(dim1=-2, dim2=-1).sum(-1).square().mean()
    expected = torch.autograd.grad(reference_loss, parameters)
    for a, b in zip(actual, expected):
        torch.testing.assert_close(a, b, **TOL)


def test_the_condition_holds_exactly_whatever_the_weights(generator):
    """u = g on the boundary of [0, 1]² (B = 0 there), for a random untrained network."""
    model = HardConstraint(
        network(2, 1, generator),
        lambda x: (torch.cos(x[:, 0]) + x[:, 1], x.prod(dim=1) * (1 - x).prod(dim=1)),
    )
    t = torch.rand(50, generator=generator, dtype=DTYPE)
    zeros, ones = torch.zeros_like(t), torch.ones_like(t)
    edges = torch.cat(
        [torch.stack(pair, dim=1) for pair in [(zeros, t), (ones, t), (t, zeros), (t, ones)]]
    )
    inside = torch.rand(50, 2, generator=generator, dtype=DTYPE) * 0.8 + 0.1
    g = torch.cos(edges[:, 0]) + edges[:, 1]
    torch.testing.assert_close(model(edges)[:, 0], g, rtol=0, atol=1e-15)
    assert (model(inside)[:, 0] - torch.cos(inside[:, 0]) - inside[:, 1]).abs().min() > 0


def test_taylor_mode_supports_a_constraint_around_a_supported_network(generator):
    x = torch.rand(4, 2, dtype=DTYPE)
    model = HardConstraint(network(2, 1, generator), transform_of("vector", 1))
    assert taylor_supported(model, x) == (True, "")

    def scaled(x):
        return torch.special.erfcx(x[:, 1]), x[:, 0]

    supported, reason = taylor_supported(HardConstraint(network(2, 1, generator), scaled), x)
    assert not supported and "aten.special_erfcx" in reason and "test_constraints.py" in reason


def test_stochastic_laplacian_through_a_constraint(generator):
    """Sparse with s = d coordinates is exact; Rademacher's mean is within 4 standard errors."""
    model = HardConstraint(network(4, 1, generator), transform_of("vector", 1))
    x = torch.rand(5, 4, generator=generator, dtype=DTYPE)
    exact = reference(model, x)[1].diagonal(dim1=-2, dim2=-1).sum(-1)
    sparse = stochastic_laplacian(model, x, 4, generator, "sparse")
    torch.testing.assert_close(sparse, exact, **TOL)
    draws = torch.stack([stochastic_laplacian(model, x, 8, generator) for _ in range(400)])
    mean, error = draws.mean(0), draws.std(0) / 400**0.5
    assert (error > 0).all()
    assert ((mean - exact).abs() <= 4 * error).all()


def test_constrain_returns_the_network_when_the_problem_has_no_constraint(generator):
    net = network(2, 1, generator)
    probe = torch.rand(3, 2, dtype=DTYPE)
    assert constrain(net, lambda x: None, probe) is net
    assert isinstance(constrain(net, transform_of("vector", 1), probe), HardConstraint)


@pytest.mark.parametrize(
    "transform, message",
    [
        (lambda x: x[:, 0], "must return a pair"),
        (lambda x: (x[:, 0], x[:3, 0]), "B must have shape"),
        (lambda x: (x[:, :2].repeat(1, 2), x[:, 0]), "g must have shape"),
    ],
)
def test_a_wrong_transform_is_refused_before_training(transform, message, generator):
    with pytest.raises(ConfigError, match=message):
        constrain(network(2, 1, generator), transform, torch.rand(5, 2, dtype=DTYPE))


def test_the_transform_runs_in_the_traced_pass_not_once_per_batch(generator):
    """Fresh points every call, same shape: the traced graph runs; the Python transform does not."""
    calls = [0]

    def counted(x):
        calls[0] += 1
        return transform_of("vector", 1)(x)

    model = HardConstraint(network(2, 1, generator), counted)
    taylor_forward(model, torch.rand(6, 2, generator=generator, dtype=DTYPE), [0, 1], "collapsed")
    for _ in range(3):
        x = torch.rand(6, 2, generator=generator, dtype=DTYPE)
        before = calls[0]
        laplacian = taylor_forward(model, x, [0, 1], "collapsed").second
        assert calls[0] == before
        exact = reference(model, x)[1].diagonal(dim1=-2, dim2=-1).sum(-1)
        torch.testing.assert_close(laplacian, exact, **TOL)
