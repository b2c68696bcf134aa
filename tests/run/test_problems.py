"""The problem library: every exact solution satisfies its PDE, its conditions and its hard
constraint, and every reference is well formed; checked with autograd in float64."""

import pytest
import torch
from test_experiment import PROBLEMS

from pinn import compose_config, load_problem
from pinn.evaluation.validation import as_columns
from pinn.geometry import Batch
from pinn.problem.loss import loss_terms


def problem_named(name: str):
    cfg = compose_config([f"problem={name}"])
    return load_problem(cfg.problem.target, dict(cfg.problem.params))


@pytest.mark.parametrize("name", PROBLEMS)
def test_the_exact_solution_satisfies_the_pde_and_every_condition(name, generator):
    problem = problem_named(name)
    if not problem.has_exact:
        pytest.skip(f"{name} has reference data, no exact solution")
    domain = problem.domain
    interior = domain.sample_interior(400, generator, "uniform", torch.float64)
    boundary = domain.sample_boundary(200, generator, "uniform", torch.float64)
    problem.attach_unknowns()
    for unknown, guess in problem.unknowns.items():  # an inverse problem: at the true values
        problem.attached_unknowns[unknown].data.fill_(getattr(problem, f"{unknown}_true", guess))
    terms = loss_terms(problem, lambda x: as_columns(problem.exact(x)), Batch(interior, boundary))
    # Mean squares of residuals made of O(1..1e3) terms that cancel: round-off is ~1e-26.
    assert all(value.item() < 1e-20 for value in terms.values()), terms


def per_point(part, count: int) -> torch.Tensor:
    """A hard constraint's g or B (a number, (N,), (N, 1) or (N, m)) as (N, 1) or (N, m)."""
    part = torch.as_tensor(part)
    return as_columns(part.expand(count) if part.ndim == 0 else part)


@pytest.mark.parametrize("name", PROBLEMS)
def test_a_hard_constraint_holds_the_boundary_data(name, generator):
    """Where the constraint's B vanishes on the boundary, u = g must be the true solution
    (output by output: a flow's velocity and pressure may be held on different parts)."""
    problem = problem_named(name)
    boundary = problem.domain.sample_boundary(300, generator, "uniform", torch.float64)
    parts = problem.hard_constraint(boundary.points)
    if parts is None or not problem.has_exact:
        pytest.skip(f"{name} has no hard constraint to check against an exact solution")
    exact = as_columns(problem.exact(boundary.points))
    shift, scale = (per_point(part, len(boundary.points)).expand_as(exact) for part in parts)
    held = scale.abs() < 1e-12  # (N, m)
    assert held.any(dim=1).sum() > 50  # the constraint holds on a good share of the boundary
    assert torch.allclose(shift[held], exact[held], atol=1e-12)
    # Inside, B is not zero: the network still shapes the solution.
    inside = problem.domain.sample_interior(300, generator, "uniform", torch.float64)
    assert (as_columns(problem.hard_constraint(inside)[1]).abs() > 0).all()


@pytest.mark.parametrize("name", PROBLEMS)
def test_the_exact_solution_is_continuous_across_the_boundary(name, generator):
    """No branch cut or kink of the formula on the boundary: the evaluation grid has points a
    rounding error off it, on either side (the L-shape's angle once jumped by 2π there)."""
    problem = problem_named(name)
    if not problem.has_exact:
        pytest.skip(f"{name} has reference data, no exact solution")
    boundary = problem.domain.sample_boundary(400, generator, "uniform", torch.float64)
    step = 1e-10 * boundary.normals
    inside = as_columns(problem.exact(boundary.points - step))
    outside = as_columns(problem.exact(boundary.points + step))
    # Lipschitz solutions move by ~1e-10 * |grad u|; r^(2/3) at a corner by ~(1e-10)^(2/3).
    assert (inside - outside).abs().max() < 1e-5
