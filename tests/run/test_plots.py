"""solution.png fits the domain: curves in 1-D, maps and time snapshots for 1-D + time, masked
maps on shapes, slices in 3-D; the true solution from exact or reference data."""

import numpy as np
import pytest
import torch
from matplotlib.collections import PolyCollection, QuadMesh, TriMesh

from pinn import Ball, Box, Disk, Problem, SpaceTime
from pinn.run.plots import plot_solution, solution_figure, time_axis


class Smooth(Problem):
    """u = sum of the coordinates (and 2 x that for a second output), on any domain."""

    def __init__(self, domain, outputs=("u",), with_exact=True, reference=None):
        self.domain, self.outputs, self._reference = domain, outputs, reference
        if not with_exact:
            self.exact = lambda x: None  # hides the exact solution from has_exact below
        self.with_exact = with_exact

    @property
    def has_exact(self):
        return self.with_exact

    @property
    def has_reference(self):
        return self._reference is not None

    def reference(self):
        return self._reference

    def residual(self, x, u):
        return u()

    def exact(self, x):
        total = x.sum(dim=1)
        return torch.stack([total * (k + 1) for k in range(len(self.outputs))], dim=1)


def model_for(problem):
    """A 'network' off by 0.01 from the exact solution."""
    return lambda x: Smooth.exact(problem, x) + 0.01


def titles(figure):
    return [axis.get_title() for axis in figure.axes if axis.get_title()]


def meshes(axis):
    return [c for c in axis.collections if isinstance(c, QuadMesh)]


def test_one_dimension_draws_curves_predicted_and_exact():
    problem = Smooth(Box([0.0], [2.0]), outputs=("u", "v"))
    figure = solution_figure(problem, model_for(problem))
    assert titles(figure) == ["u", "v"]
    predicted, exact = figure.axes[1].get_lines()
    assert np.allclose(predicted.get_ydata() - exact.get_ydata(), 0.01)


def test_space_time_draws_maps_and_snapshots_against_the_exact_solution():
    problem = Smooth(SpaceTime(Box([-1.0], [1.0]), 0.0, 2.0))
    figure = solution_figure(problem, model_for(problem), n_per_dim=21)
    assert titles(figure)[:3] == ["predicted u", "exact u", "|error| u"]
    error = meshes(figure.axes[2])[0].get_array()
    assert np.allclose(error.compressed(), 0.01)
    snapshots = figure.axes[3]
    assert snapshots.get_xlabel() == "x"
    labels = [line.get_label() for line in snapshots.get_lines()]
    assert [label for label in labels if label.startswith("t =")] == [
        "t = 0",
        "t = 0.667",
        "t = 1.33",
        "t = 2",
    ]


def test_a_box_named_t_is_a_space_time_domain():
    assert time_axis(Box([0.0, 0.0], [1.0, 1.0], names=["x", "t"])) == 1
    assert time_axis(SpaceTime(Disk([0.0, 0.0], 1.0), 0.0, 1.0)) == 2
    assert time_axis(Box([0.0, 0.0], [1.0, 1.0])) is None


def test_a_shape_is_drawn_blank_outside():
    problem = Smooth(Disk([0.0, 0.0], 1.0))
    figure = solution_figure(problem, model_for(problem), n_per_dim=41)
    assert titles(figure) == ["predicted u", "exact u", "|error| u"]
    values = meshes(figure.axes[0])[0].get_array()
    grid = torch.linspace(-1, 1, 41, dtype=torch.float64)
    xs, ys = torch.meshgrid(grid, grid, indexing="ij")
    outside = (xs**2 + ys**2 > 1 + 1e-9).T.numpy()  # the image is (y, x)
    assert np.isnan(np.ma.filled(values, np.nan).reshape(41, 41)[outside]).all()
    assert np.isfinite(values.reshape(41, 41)[~outside]).all()


def test_three_dimensions_are_drawn_as_slices():
    problem = Smooth(Ball([0.0, 0.0, 0.0], 1.0), outputs=("u", "v"))
    figure = solution_figure(problem, model_for(problem), n_per_dim=21)
    predicted = [t for t in titles(figure) if t.startswith("predicted")]
    assert predicted == [
        f"predicted {out} at z = {z}" for out in ("u", "v") for z in ("-0.5", "0", "0.5")
    ]


def test_reference_data_only_is_drawn_at_its_points():
    points = torch.rand(300, 2, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    values = points.sum(dim=1)
    problem = Smooth(Box([0.0, 0.0], [1.0, 1.0]), with_exact=False, reference=(points, values))
    figure = solution_figure(problem, model_for(problem), n_per_dim=21)
    assert titles(figure) == ["predicted u", "reference u", "|error| u"]
    error = [c for c in figure.axes[2].collections if isinstance(c, (TriMesh, PolyCollection))]
    assert np.allclose(np.asarray(error[0].get_array()), 0.01)


def test_reference_snapshots_use_the_reference_times(tmp_path):
    x, t = torch.meshgrid(
        torch.linspace(-1, 1, 11, dtype=torch.float64),
        torch.linspace(0, 0.9, 10, dtype=torch.float64),
        indexing="ij",
    )
    points = torch.stack([x.reshape(-1), t.reshape(-1)], dim=1)
    problem = Smooth(
        SpaceTime(Box([-1.0], [1.0]), 0.0, 1.0), with_exact=False, reference=(points, points.sum(1))
    )
    figure = solution_figure(problem, model_for(problem), n_per_dim=21)
    labels = [line.get_label() for line in figure.axes[3].get_lines()]
    # The reference's own times nearest 0, 1/3, 2/3 and 1: 0, 0.3, 0.7, 0.9.
    assert [label for label in labels if label.startswith("t =")] == [
        "t = 0",
        "t = 0.3",
        "t = 0.7",
        "t = 0.9",
    ]
    plot_solution(problem, model_for(problem), tmp_path / "solution.png")
    assert (tmp_path / "solution.png").read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize("with_exact", [True, False])
def test_without_a_true_solution_only_the_prediction_is_drawn(with_exact):
    problem = Smooth(Box([0.0, 0.0], [1.0, 1.0]), with_exact=with_exact)
    figure = solution_figure(problem, model_for(problem), n_per_dim=11)
    expected = ["predicted u", "exact u", "|error| u"] if with_exact else ["predicted u"]
    assert titles(figure) == expected
