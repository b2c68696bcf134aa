"""`on_grid`: data on a tensor grid (a solver's, a published dataset's) as reference points and
values, in the problem's input order, shapes checked."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from pinn import Box, ConfigError, Problem, SpaceTime, on_grid
from pinn.evaluation.validation import Validator


def heat(x: np.ndarray, t: np.ndarray) -> np.ndarray:
    return np.sin(np.pi * x) * np.exp(-(np.pi**2) * t)


def test_a_grid_stored_as_columns_gives_each_value_at_its_point():
    x = np.linspace(-1.0, 1.0, 7)[:, None]  # (7, 1), as DeepXDE's Burgers.npz stores x and t
    t = np.linspace(0.0, 1.0, 4)[:, None]
    values = heat(x, t.T)  # (7, 4): values[i, j] at (x_i, t_j)
    points, flat = on_grid([x, t], values)
    assert points.shape == (28, 2) and flat.shape == (28,) and flat.dtype == torch.float64
    assert points[1].tolist() == [-1.0, t[1, 0]]  # the last axis varies fastest
    expected = heat(points[:, 0].numpy(), points[:, 1].numpy())
    np.testing.assert_allclose(flat.numpy(), expected, rtol=0, atol=1e-15)


def test_several_outputs_and_three_axes():
    x, y, z = np.linspace(0, 1, 3), np.linspace(0, 2, 4), np.linspace(-1, 0, 5)
    grid = np.stack(np.meshgrid(x, y, z, indexing="ij"), axis=-1)  # (3, 4, 5, 3)
    values = np.stack([grid.sum(-1), grid.prod(-1)], axis=-1)  # (3, 4, 5, 2)
    points, flat = on_grid([x, y, z], values)
    assert points.shape == (60, 3) and flat.shape == (60, 2)
    torch.testing.assert_close(flat[:, 0], points.sum(1), rtol=0, atol=1e-15)
    torch.testing.assert_close(flat[:, 1], points.prod(1), rtol=0, atol=1e-15)


TWO_AXES = [np.zeros(5), np.zeros(3)]


@pytest.mark.parametrize(
    ("axes", "values", "message"),
    [
        (TWO_AXES, np.zeros((3, 5)), r"got \(3, 5\): the axes' lengths the other way.*values\.T"),
        (TWO_AXES, np.zeros((5, 4)), r"by the axes' lengths, \(5, 3\).*got \(5, 4\)$"),
        (TWO_AXES, np.zeros((5, 3, 2, 2)), r"got \(5, 3, 2, 2\)"),
        ([np.zeros((5, 2)), np.zeros(3)], np.zeros((5, 3)), r"axis 0 must be a 1-d.*\(5, 2\)"),
        ([], np.zeros(3), "at least one axis"),
    ],
)
def test_values_not_shaped_by_the_axes_are_refused(axes, values, message):
    with pytest.raises(ConfigError, match=message):
        on_grid(axes, values)


class GriddedHeat(Problem):
    """u_t = u_xx on [-1, 1] x [0, 0.1], validated against its solution on a grid."""

    domain = SpaceTime(Box([-1.0], [1.0]), 0.0, 0.1)

    def residual(self, x, u):
        return u.d("t") - u.d2("x")

    def reference(self):
        x, t = np.linspace(-1, 1, 41), np.linspace(0, 0.1, 11)
        return on_grid([x, t], heat(x[:, None], t[None, :]))


def test_a_problem_validates_against_a_grid_of_reference_data():
    def exact(points):
        return torch.sin(torch.pi * points[:, :1]) * torch.exp(-(torch.pi**2) * points[:, 1:])

    errors = Validator(GriddedHeat(), dtype=torch.float64).errors(exact)
    assert errors["rel_l2"] < 1e-15
    shifted = Validator(GriddedHeat(), dtype=torch.float64).errors(lambda p: exact(p) + 0.01)
    assert shifted["max_abs_error"] == pytest.approx(0.01, rel=1e-9)
