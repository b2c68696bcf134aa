"""`boundary_counts`: boundary points only on the parts the conditions read, aimed per part."""

from __future__ import annotations

import pytest
import torch

from pinn import (
    Box,
    Dirichlet,
    Disk,
    Initial,
    Neumann,
    Observations,
    Periodic,
    PointSampler,
    Problem,
    SpaceTime,
    boundary_counts,
)
from pinn.errors import ConfigError


class HeldSquareWithHole(Problem):
    """The issue's example: u = 0 held exactly on the square, a flux on the hole (soft)."""

    domain = Box([0, 0], [1, 1]) - Disk([0.5, 0.5], 0.2, name="hole")
    conditions = [Neumann(on="hole", value=1.0)]

    def residual(self, x, u):
        return u.laplacian()

    def hard_constraint(self, x):
        return torch.zeros_like(x[:, 0]), self.domain.distance(x, on=["x_min", "x_max"])


def problem_with(*conditions, domain=None):
    problem = Problem.__new__(Problem)
    problem.domain = domain or HeldSquareWithHole.domain
    problem.conditions = list(conditions)
    return problem


def test_the_hole_gets_every_point_the_held_square_none():
    problem = HeldSquareWithHole()
    counts = boundary_counts(problem, 300)
    assert counts == {"hole": 300}
    batch = PointSampler(problem.domain, 10, counts, "sobol", torch.Generator()).draw()
    assert batch.boundary.points.shape == (300, 2) and batch.boundary.on("hole").all()


def test_every_part_used_and_none_aimed_is_todays_share_by_measure():
    problem = problem_with(Dirichlet(on="boundary"))
    assert boundary_counts(problem, 401) == problem.domain.share_boundary(401)


def test_aimed_counts_and_shares_are_exact_and_the_rest_shares_by_measure():
    problem = problem_with(Dirichlet(on="boundary"))
    counts = boundary_counts(problem, 400, {"hole": 100, "x_min": 0.25})
    assert counts["hole"] == 100 and counts["x_min"] == 100 and sum(counts.values()) == 400
    assert sorted(counts[face] for face in ("x_max", "y_min", "y_max")) == [66, 67, 67]


def test_every_used_part_aimed_draws_the_aimed_counts_only():
    problem = problem_with(Dirichlet(on=["x_min", "hole"]))
    assert boundary_counts(problem, 400, {"hole": 50, "x_min": 10}) == {"x_min": 10, "hole": 50}


def test_initial_and_periodic_read_their_own_faces_observations_none():
    domain = SpaceTime(Box([0], [1]), 0, 1)
    observed = Observations(torch.zeros(3, 2), torch.zeros(3))
    problem = problem_with(Initial(value=0.0), Periodic(), observed, domain=domain)
    assert boundary_counts(problem, 90) == {"x_min": 45, "t_min": 45}


@pytest.mark.parametrize("n_boundary", [0, 100])
def test_a_problem_without_boundary_terms_draws_no_boundary_points(n_boundary):
    problem = problem_with(Observations(torch.zeros(3, 2), torch.zeros(3)))
    counts = boundary_counts(problem, n_boundary)
    assert counts == {}
    batch = PointSampler(problem.domain, 10, counts, "sobol", torch.Generator()).draw()
    assert batch.boundary.points.shape == (0, 2)


@pytest.mark.parametrize(
    "n_boundary, aimed, words",
    [
        (100, {"rim": 5}, ["'rim'", "its parts are", "'hole'"]),
        (100, {"x_min": 5}, ["'x_min'", "no condition", "remove it"]),
        (100, {"hole": 101}, ["101 of problem.n_boundary=100", "raise problem.n_boundary"]),
        (100, {"hole": -3}, ["boundary_points.hole=-3", "a whole number >= 1"]),
        (100, {"hole": 1.5}, ["boundary_points.hole=1.5", "between 0 and 1"]),
        (100, {"hole": 0.001}, ["rounds to no point", "give a count"]),
        (0, {}, ["problem.n_boundary=0", "['neumann']", ">= 1"]),
    ],
)
def test_bad_aims_are_refused_in_one_line_saying_what_to_write(n_boundary, aimed, words):
    with pytest.raises(ConfigError) as error:
        boundary_counts(HeldSquareWithHole(), n_boundary, aimed)
    assert all(word in str(error.value) for word in words), str(error.value)
    assert "\n" not in str(error.value)


def test_aiming_all_points_leaves_none_for_the_other_used_parts_and_is_refused():
    problem = problem_with(Dirichlet(on=["x_min", "hole"]))
    with pytest.raises(ConfigError, match="leaving 0 for \\['x_min'\\]"):
        boundary_counts(problem, 100, {"hole": 100})
