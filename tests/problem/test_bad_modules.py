"""Wrong problem modules are refused at the first step in one line that names the term and
both shapes: residuals that broadcast, reduce or return no tensor, an index past the domain's
coordinates, condition residuals and exact solutions of the wrong shape."""

import pytest
import torch

from pinn import Box, ConfigError, Dirichlet, Problem
from pinn.evaluation.validation import Validator
from pinn.geometry import Batch
from pinn.problem.loss import loss_terms


class Line(Problem):
    """-u'' = 1 on [0, 1] with x as (N, 1): the residuals below get it wrong on purpose."""

    domain = Box([0.0], [1.0])
    conditions = [Dirichlet(on="boundary", value=0.0)]

    def residual(self, x, u):
        return u.d2("x") + 1.0


def batch(n=8, generator=None):
    generator = generator or torch.Generator().manual_seed(0)
    interior = Line.domain.sample_interior(n, generator, "uniform", torch.float64)
    boundary = Line.domain.sample_boundary(2, generator, "uniform", torch.float64)
    return Batch(interior, boundary)


def model(x):
    return x.square()  # (N, 1)


def refusal(residual) -> str:
    problem = type("Wrong", (Line,), {"residual": residual})()
    with pytest.raises(ConfigError) as error:
        loss_terms(problem, model, batch())
    message = str(error.value)
    assert "\n" not in message
    return message


def test_a_residual_that_broadcasts_to_n_by_n_is_refused():
    message = refusal(lambda self, x, u: u.d2("x") + x[:, :1])
    assert "Wrong.residual: the term 'pde' has shape (8, 8), expected (8,)" in message


def test_a_residual_reduced_to_a_scalar_is_refused():
    message = refusal(lambda self, x, u: (u.d2("x") + 1.0).mean())
    assert "the term 'pde' has shape (), expected (8,)" in message


def test_a_residual_returning_none_is_refused():
    assert "Wrong.residual returned NoneType for the term 'pde'" in refusal(lambda s, x, u: None)


def test_a_dict_term_of_the_wrong_shape_is_named():
    message = refusal(lambda self, x, u: {"a": u.d2("x"), "b": u.d2("x")[:, None]})
    assert "the term 'pde_b' has shape (8, 1), expected (8,)" in message


def test_indexing_a_coordinate_the_domain_lacks_names_the_coordinates():
    message = refusal(lambda self, x, u: u.d2("x") + x[:, 1])
    assert "Wrong.residual indexes past the domain's coordinates" in message
    assert "x is (N, 1) with columns ['x']" in message


def test_a_condition_residual_of_the_wrong_shape_is_refused():
    class Column(Dirichlet):
        def residual(self, u, boundary, field_at=None):
            return super().residual(u, boundary, field_at)[:, None]

    problem = type("Wrong", (Line,), {"conditions": [Column(on="boundary", value=0.0)]})()
    with pytest.raises(
        ConfigError, match=r"condition 'dirichlet'.* shape \(2, 1\), expected \(n,\)"
    ):
        loss_terms(problem, model, batch())


def test_a_right_residual_is_accepted():
    terms = loss_terms(Line(), model, batch())
    assert set(terms) == {"pde", "dirichlet"}
    assert terms["pde"].item() == pytest.approx(9.0)  # u'' = 2, so (2 + 1)^2


@pytest.mark.parametrize(
    ("exact", "message"),
    [
        (
            lambda self, x: x[:, :1].T,
            r"Wrong.exact returned shape \(1, 2\) at 2 points, expected \(2,\) or \(2, 1\)",
        ),
        (lambda self, x: x[:, 0].sum(), r"Wrong.exact returned shape \(\) at 2 points, expected"),
        (lambda self, x: None, r"Wrong.exact returned NoneType; it must return a tensor"),
    ],
)
def test_an_exact_solution_of_the_wrong_shape_is_refused(exact, message):
    problem = type("Wrong", (Line,), {"exact": exact})()
    with pytest.raises(ConfigError, match=message):
        Validator(problem, points=torch.linspace(0, 1, 5, dtype=torch.float64)[:, None])


def test_a_broadcasting_slip_in_exact_is_refused_before_it_runs_at_every_point():
    asked = []

    def table(self, x):  # (M, 1) - (M,): an (M, M) table, 3-output problem
        asked.append(len(x))
        return x[:, :1] - x[:, 0]

    problem = type("Wrong", (Line,), {"exact": table, "outputs": ("u", "v", "p")})()
    points = torch.linspace(0, 1, 10_000, dtype=torch.float64)[:, None]
    with pytest.raises(ConfigError, match=r"shape \(4, 4\) at 4 points, expected \(4, 3\)"):
        Validator(problem, points=points)
    assert asked == [4]  # never the 10^8 entries of the whole table


@pytest.mark.parametrize("exact", [lambda self, x: x[:, 0], lambda self, x: x[:, :1]])
def test_an_exact_solution_as_n_or_n_by_1_is_accepted(exact):
    problem = type("Right", (Line,), {"exact": exact})()
    points = torch.linspace(0, 1, 5, dtype=torch.float64)[:, None]
    assert torch.equal(Validator(problem, points=points).reference, points)
