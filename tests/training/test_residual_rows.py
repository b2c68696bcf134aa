"""The residual rows of the weighted loss and their Jacobian: the rows square-sum to the loss,
the Jacobian equals a reverse pass of every row (torch's batched `autograd.grad`, jacrev's
vmap over cotangents) to 1e-10 on the Taylor and autograd engines, for a hard-constrained
Poisson, Kovasznay (three outputs, three equations, three conditions), an inverse problem
(the unknown's column), a periodic condition (a second field at other points) and derivatives
of order 3 and 4 (KdV-like)."""

import math

import pytest
import torch

from pinn import ConfigError
from pinn.derivatives.engines import Engine
from pinn.geometry import Box, PointSampler
from pinn.nn import MLP, HardConstraint
from pinn.problem import Dirichlet, Periodic, Problem, loss_terms, weighted_sum
from pinn.problem.loss import residuals
from pinn.problems.inverse_poisson import InversePoisson
from pinn.problems.kovasznay import Kovasznay
from pinn.problems.poisson import Poisson
from pinn.training.rows.residual_rows import ResidualRows, parameters


class PeriodicHeat(Problem):
    """u_t = u_xx on [0, 1]², periodic in x (with the derivative), u = sin 2πx at t = 0."""

    domain = Box([0.0, 0.0], [1.0, 1.0], names=["x", "t"])
    conditions = [
        Periodic(on=("x_min", "x_max"), derivative=True),
        Dirichlet(on="t_min", value=lambda p: torch.sin(2 * math.pi * p[:, 0]), name="initial"),
    ]

    def residual(self, x, u):
        return u.d("t") - u.d2("x")


class Dispersive(PeriodicHeat):
    """KdV-like, with a third derivative in x and a fourth in t (the univariate Taylor pass)."""

    def residual(self, x, u):
        return u.d("t") + u() * u.d("x") + 0.1 * u.d("x", order=3) + 0.01 * u.d("t", order=4)


def make(problem, engine, generator, width=8, n_interior=40, n_boundary=32):
    """A small float64 model for `problem` (its hard constraint, if any), a batch, an engine."""
    network = MLP(2, len(problem.outputs), width=width, depth=2, generator=generator)
    network = network.double()
    probe = torch.rand(2, 2, dtype=torch.float64, generator=generator)
    model = (
        network
        if problem.hard_constraint(probe) is None
        else HardConstraint(network, problem.hard_constraint)
    )
    if problem.unknowns:
        problem.attach_unknowns(torch.float64, "cpu")
    points = PointSampler(
        problem.domain, n_interior, n_boundary, "uniform", generator, dtype=torch.float64
    )
    batch = points.draw()
    return model, batch, Engine(engine, model, probe=batch.interior[:2], announce=False)


def reverse_of_every_row(problem, model, batch, engine, weights):
    """(rows, J): the scaled rows and, by one batched backward pass, each row's gradient."""
    vectors = residuals(problem, model, batch, engine)
    rows = torch.cat([(weights.get(k, 1.0) / v.numel()) ** 0.5 * v for k, v in vectors.items()])
    params = parameters(model, problem)
    eye = torch.eye(rows.numel(), dtype=rows.dtype)
    grads = torch.autograd.grad(
        rows, params, grad_outputs=eye, is_grads_batched=True, allow_unused=True
    )
    n_rows = rows.numel()
    columns = [
        torch.zeros(n_rows, p.numel(), dtype=rows.dtype) if g is None else g.reshape(n_rows, -1)
        for g, p in zip(grads, params)
    ]
    return rows.detach(), torch.cat(columns, dim=1)


CASES = [
    (Poisson, {}),
    (lambda: Poisson(hard_boundary=False), {"dirichlet": 10.0}),
    (Kovasznay, {"u_boundary": 10.0, "p_outlet": 3.0}),
    (InversePoisson, {"data": 5.0}),
    (PeriodicHeat, {"periodic": 2.0}),
    (Dispersive, {"periodic": 2.0}),
]


@pytest.mark.parametrize("engine", ["taylor", "autograd"])
@pytest.mark.parametrize("make_problem, weights", CASES)
def test_jacobian_equals_a_reverse_pass_of_every_row(make_problem, weights, engine, generator):
    problem = make_problem()
    model, batch, run_engine = make(problem, engine, generator)
    rows_of = ResidualRows(problem, model, run_engine, weights, chunk=50)
    rows_of(batch)  # the first call records what the residual asks (the Taylor plans)
    rows = rows_of(batch, jacobian=True)
    assert run_engine.name == engine
    expected_rows, expected = reverse_of_every_row(problem, model, batch, run_engine, weights)
    n_params = sum(p.numel() for p in parameters(model, problem))
    assert rows.jacobian.shape == (expected_rows.numel(), n_params)
    assert torch.allclose(rows.values, expected_rows, rtol=0, atol=1e-12)
    assert (rows.jacobian - expected).abs().max().item() <= 1e-10
    assert expected.abs().max().item() > 0.1  # a Jacobian worth comparing
    if problem.unknowns:  # the unknown's column: d rows / d kappa, nonzero on the PDE rows
        pde = rows.layout["pde"]
        assert rows.jacobian[pde, -1].abs().max().item() > 1e-3
        assert rows.jacobian[rows.layout["data"], -1].abs().max().item() == 0.0


@pytest.mark.parametrize("make_problem, weights", CASES)
def test_rows_square_sum_to_the_weighted_loss(make_problem, weights, generator):
    problem = make_problem()
    model, batch, engine = make(problem, "taylor", generator)
    rows = ResidualRows(problem, model, engine, weights)(batch)
    terms = loss_terms(problem, model, batch, engine)
    loss = weighted_sum(terms, weights).item()
    assert abs(rows.loss.item() - loss) <= 1e-12 * max(1.0, loss)
    assert list(rows.terms) == list(terms) == list(rows.layout)
    for name, value in terms.items():
        assert rows.terms[name].item() == pytest.approx(value.item(), rel=1e-12)
        part = rows.values[rows.layout[name]]
        share = weights.get(name, 1.0) * value.item()
        assert part.square().sum().item() == pytest.approx(share, rel=1e-12)


def test_weights_for_unknown_terms_are_refused(generator):
    problem = Poisson()
    model, batch, engine = make(problem, "autograd", generator)
    with pytest.raises(ConfigError, match=r"unknown loss term\(s\) \['dirichlet'\]"):
        ResidualRows(problem, model, engine, {"dirichlet": 1.0})(batch)


def test_a_residual_differentiating_an_expression_is_refused(generator):
    class Flux(Poisson):
        def residual(self, x, u):
            return u.derivative(u() * u.d(0), 0) + 1.0

    problem = Flux()
    model, batch, engine = make(problem, "autograd", generator)
    with pytest.raises(ConfigError, match="product rule"):
        ResidualRows(problem, model, engine)(batch, jacobian=True)


@pytest.mark.parametrize("engine", ["autograd", "taylor"])
def test_a_residual_calling_autograd_itself_is_refused_in_one_line(generator, engine):
    class SourceByAutograd(Poisson):  # the source term as -laplacian of sin(pi x) sin(pi y)
        def residual(self, x, u):
            at = x.detach().clone().requires_grad_(True)
            exact = torch.sin(math.pi * at[:, 0]) * torch.sin(math.pi * at[:, 1])
            (gradient,) = torch.autograd.grad(exact.sum(), at, create_graph=True)
            source = -sum(
                torch.autograd.grad(gradient[:, i].sum(), at, create_graph=True)[0][:, i]
                for i in range(2)
            )
            return -u.laplacian() - source.detach()

    problem = SourceByAutograd()
    model, batch, engine = make(problem, engine, generator)
    rows = ResidualRows(problem, model, engine)
    rows(batch)  # the loss alone (Adam, L-BFGS) is fine
    with pytest.raises(ConfigError, match=r"calls torch.autograd itself .* closed form"):
        rows(batch, jacobian=True)


def test_high_orders_through_an_operation_without_their_rule_take_the_autograd_jacobian(
    generator, erfinv_to_order_two
):
    class Squashed(torch.nn.Module):  # erfinv has Taylor rules to order 2 only (the fixture)
        def __init__(self, network):
            super().__init__()
            self.network = network

        def forward(self, x):
            return torch.erfinv(0.5 * torch.tanh(self.network(x)))

    problem = Dispersive()
    network, batch, _ = make(problem, "taylor", generator)
    model = Squashed(network)
    engine = Engine("taylor", model, probe=batch.interior[:2], announce=False)
    rows_of = ResidualRows(problem, model, engine, {}, chunk=50)
    rows_of(batch)
    rows = rows_of(batch, jacobian=True)
    expected_rows, expected = reverse_of_every_row(problem, model, batch, engine, {})
    assert torch.allclose(rows.values, expected_rows, rtol=0, atol=1e-12)
    assert (rows.jacobian - expected).abs().max().item() <= 1e-10
