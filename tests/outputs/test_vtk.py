"""outputs.vtk=true: VTK files of the prediction that meshio reads back to prediction.npz's."""

import json
import logging
import sys

import meshio
import numpy as np
import pytest
import torch
from problem_helpers import Bump

from pinn import (
    MLP,
    Ball,
    Box,
    ConfigError,
    Disk,
    Polygon,
    Problem,
    SpaceTime,
    compose_config,
    load_problem,
    train,
)
from pinn.config.schema import check_config
from pinn.evaluation.validation import Validator
from pinn.outputs import vtk
from pinn.outputs.finished import FinishedRun
from pinn.outputs.prediction import write_prediction
from pinn.outputs.vtk import write_vtk
from pinn.problems.poisson import Poisson
from pinn.run.build import build_model
from pinn.run.resume import check_same_run

SMALL = [
    "trainer.adam.steps=5",
    "trainer.lbfgs.steps=0",
    "trainer.gauss_newton.steps=0",
    "trainer.progress=false",
    "problem.n_interior=64",
    "problem.n_boundary=32",
    "model.width=8",
    "model.depth=2",
    "outputs.vtk=true",
]


def saved(run_dir):
    with np.load(run_dir / "prediction.npz") as data:
        return {name: data[name] for name in data.files}


def padded(points):
    """(M, k) points as the (M, 3) points of a VTK file."""
    return np.hstack([points, np.zeros((len(points), 3 - points.shape[1]))])


def assert_fields_equal(mesh, arrays, names, rows=slice(None)):
    predicted, reference = arrays["predicted"][rows], arrays["reference"][rows]
    assert set(mesh.point_data) == {f"{n}{s}" for n in names for s in ("", "_reference", "_error")}
    for k, name in enumerate(names):
        assert np.array_equal(mesh.point_data[name], predicted[:, k])
        assert np.array_equal(mesh.point_data[f"{name}_reference"], reference[:, k])
        error = np.abs(predicted[:, k] - reference[:, k])
        assert np.array_equal(mesh.point_data[f"{name}_error"], error)


def grid_cell_count(points):
    """The number of cells of the complete grid the (M, d) points make."""
    return int(np.prod([len(np.unique(column)) - 1 for column in points.T]))


def centroids(mesh, kinds=("line", "triangle", "quad", "tetra", "hexahedron")):
    """(C, k) centroids of the mesh's cells of the `kinds`, in the domain's k coordinates."""
    return np.concatenate(
        [
            mesh.points[cells].mean(axis=1)
            for kind, cells in mesh.cells_dict.items()
            if kind in kinds
        ]
    )


def assert_cells_inside(mesh, domain):
    """Every cell's centroid lies in the closed domain, and every point is a corner of a cell."""
    inside = domain.contains(torch.from_numpy(centroids(mesh)[:, : domain.dim]), closed=True)
    assert bool(inside.all())
    assert "vertex" not in mesh.cells_dict
    corners = np.concatenate([cells.reshape(-1) for cells in mesh.cells_dict.values()])
    assert np.array_equal(np.unique(corners), np.arange(len(mesh.points)))


def untrained_prediction(folder, overrides):
    """prediction.npz of an untrained model of the problem `overrides` compose, and its arrays."""
    cfg = compose_config(overrides)
    problem = load_problem(cfg.problem.target, dict(cfg.problem.params))
    model = build_model(problem, check_config(cfg).model, 0).double()
    arrays = write_prediction(folder / "prediction.npz", problem, model, Validator(problem))
    return problem, arrays


def test_a_2d_run_writes_its_prediction_on_the_plane(tmp_path):
    train(compose_config([*SMALL, "problem=kovasznay"]), tmp_path)
    arrays = saved(tmp_path)
    mesh = meshio.read(tmp_path / "prediction.vtu")
    assert np.array_equal(mesh.points, padded(arrays["points"]))  # z = 0
    assert list(mesh.cells_dict) == ["quad"]  # a box: its grid's cells, no vertex
    assert len(mesh.cells_dict["quad"]) == grid_cell_count(arrays["points"])
    assert_fields_equal(mesh, arrays, ["u", "v", "p"])


def test_a_3d_domain_writes_its_points_as_they_are(tmp_path):
    overrides = ["problem=poisson_highd", "problem.params.dim=3"]
    problem, arrays = untrained_prediction(tmp_path, overrides)
    assert write_vtk(tmp_path, problem.domain, problem.outputs, arrays) == [
        tmp_path / "prediction.vtu"
    ]
    mesh = meshio.read(tmp_path / "prediction.vtu")
    assert np.array_equal(mesh.points, arrays["points"]) and mesh.points.shape[1] == 3
    assert set(mesh.cells_dict) == {"hexahedron", "tetra"}  # a ball: grid cells, cut at its rim
    assert_cells_inside(mesh, problem.domain)
    assert_fields_equal(mesh, arrays, ["u"])
    assert all(np.array_equal(arrays[n], v) for n, v in saved(tmp_path).items())


def test_space_time_is_a_time_series_of_the_spatial_points(tmp_path):
    train(compose_config([*SMALL, "problem=heat"]), tmp_path)
    arrays = saved(tmp_path)
    index = json.loads((tmp_path / "prediction.vtu.series").read_text())
    assert index["file-series-version"] == "1.0"
    times = np.unique(arrays["points"][:, 1])
    assert [entry["time"] for entry in index["files"]] == times.tolist() and len(times) > 10
    assert not (tmp_path / "prediction.vtu").exists()
    for entry, time in zip(index["files"], times):
        at_time = arrays["points"][:, 1] == time
        mesh = meshio.read(tmp_path / entry["name"])
        assert np.array_equal(mesh.points, padded(arrays["points"][at_time, :1]))
        assert (
            list(mesh.cells_dict) == ["line"]
            and len(mesh.cells_dict["line"]) == len(mesh.points) - 1
        )
        assert_fields_equal(mesh, arrays, ["u"], rows=at_time)


def test_without_a_reference_only_the_prediction_is_written(tmp_path):
    class Unsolved(Poisson):
        exact = Problem.exact

    problem = Unsolved()
    model = MLP(2, 1, width=4, depth=1, generator=torch.Generator().manual_seed(0)).double()
    arrays = write_prediction(tmp_path / "prediction.npz", problem, model)
    write_vtk(tmp_path, problem.domain, problem.outputs, arrays)
    mesh = meshio.read(tmp_path / "prediction.vtu")
    assert list(mesh.point_data) == ["u"]
    assert np.array_equal(mesh.point_data["u"], arrays["predicted"][:, 0])


def test_more_than_three_dimensions_are_skipped_with_a_log_line(tmp_path, caplog):
    problem, arrays = untrained_prediction(tmp_path, ["problem=poisson_highd"])  # d = 100
    with caplog.at_level(logging.INFO, logger="pinn"):
        assert write_vtk(tmp_path, problem.domain, problem.outputs, arrays) == []
    assert "a 100-D domain has no picture in ParaView" in caplog.text
    assert not list(tmp_path.glob("*.vtu*"))


@pytest.mark.parametrize(("key", "value"), [("vtk", True), ("plot_formats", ["png", "pdf"])])
def test_the_outputs_may_change_on_resume(tmp_path, key, value):
    saved_config = {"outputs": {"vtk": False, "plot_formats": ["png"]}, "seed": 0}
    changed = {"outputs": {**saved_config["outputs"], key: value}, "seed": 0}
    check_same_run(saved_config, changed, tmp_path / "checkpoint.pt")  # no error
    with pytest.raises(ConfigError, match="seed=1"):  # what is not free is still checked
        check_same_run(saved_config, {**changed, "seed": 1}, tmp_path / "checkpoint.pt")


def test_a_series_written_again_leaves_no_file_of_the_earlier_one(tmp_path):
    problem, arrays = untrained_prediction(tmp_path, ["problem=heat"])
    (tmp_path / "vtk").mkdir()
    (tmp_path / "vtk" / "prediction_9999.vtu").write_text("an earlier run's")
    written = write_vtk(tmp_path, problem.domain, problem.outputs, arrays)
    on_disk = sorted((tmp_path / "vtk").glob("*.vtu"))
    assert on_disk == sorted(written[1:]) and len(on_disk) == len(np.unique(arrays["points"][:, 1]))


class ScatteredBump(Problem):
    """u = 1 + x² given only as reference data at the (M, d) `points` in the domain."""

    def __init__(self, domain, points):
        self.domain, self.points = domain, points

    def residual(self, x, u):
        return u()

    def reference(self):
        return self.points, 1 + self.points[:, 0] ** 2


def prediction_of(folder, problem):
    """prediction.npz's arrays of an untrained model of `problem` against its validator."""
    dim = problem.domain.dim
    model = MLP(dim, 1, width=4, depth=1, generator=torch.Generator().manual_seed(0)).double()
    return write_prediction(folder / "prediction.npz", problem, model, Validator(problem))


def cell_areas(mesh):
    """(C,) areas of the mesh's triangles and quadrilaterals (shoelace formula)."""
    areas = []
    for kind, cells in mesh.cells_dict.items():
        if kind in ("triangle", "quad"):
            x, y = mesh.points[cells, 0], mesh.points[cells, 1]
            twice = x * np.roll(y, -1, axis=1) - np.roll(x, -1, axis=1) * y
            areas.append(np.abs(twice.sum(axis=1)) / 2)
    return np.concatenate(areas)


L_SHAPE = Polygon([[0, 0], [2, 0], [2, 1], [1, 1], [1, 2], [0, 2]])
ANNULUS = Disk([0.0, 0.0], 1.0) - Disk([0.0, 0.0], 0.5, name="hole")


@pytest.mark.parametrize(
    ("lower", "kind"), [([0.0], "line"), ([0.0, -1.0], "quad"), ([0.0, -1.0, 2.0], "hexahedron")]
)
def test_a_box_is_its_grid_of_lines_quads_or_hexahedra(tmp_path, lower, kind):
    domain = Box(lower, [1.0 + lo for lo in lower])
    arrays = prediction_of(tmp_path, Bump(domain))
    write_vtk(tmp_path, domain, ["u"], arrays)
    mesh = meshio.read(tmp_path / "prediction.vtu")
    assert list(mesh.cells_dict) == [kind]
    assert len(mesh.cells_dict[kind]) == grid_cell_count(arrays["points"])
    assert_cells_inside(mesh, domain)
    assert_fields_equal(mesh, arrays, ["u"])


@pytest.mark.parametrize("domain", [L_SHAPE, ANNULUS], ids=["L-shape", "annulus"])
def test_no_cell_crosses_the_notch_or_the_hole(tmp_path, domain):
    arrays = prediction_of(tmp_path, Bump(domain))
    write_vtk(tmp_path, domain, ["u"], arrays)
    mesh = meshio.read(tmp_path / "prediction.vtu")
    assert_cells_inside(mesh, domain)
    spacing = np.diff(np.unique(arrays["points"][:, 0]))[0]
    for cells in mesh.cells_dict.values():  # no edge longer than a grid cell's diagonal
        corners = mesh.points[cells]
        edges = np.linalg.norm(corners - np.roll(corners, 1, axis=1), axis=2)
        assert edges.max() <= spacing * np.sqrt(2) * (1 + 1e-9)
    assert 0.9 * domain.volume < cell_areas(mesh).sum() <= domain.volume
    assert_fields_equal(mesh, arrays, ["u"])


def test_scattered_reference_points_are_triangulated_within_the_domain(tmp_path):
    generator = torch.Generator().manual_seed(1)
    points = ANNULUS.sample_interior(800, generator, "uniform", dtype=torch.float64)
    arrays = prediction_of(tmp_path, ScatteredBump(ANNULUS, points))
    write_vtk(tmp_path, ANNULUS, ["u"], arrays)
    mesh = meshio.read(tmp_path / "prediction.vtu")
    assert np.array_equal(mesh.points, padded(points.numpy()))
    assert list(mesh.cells_dict) == ["triangle"]
    assert_cells_inside(mesh, ANNULUS)
    assert 0.9 * ANNULUS.volume < cell_areas(mesh).sum() < ANNULUS.volume
    assert_fields_equal(mesh, arrays, ["u"])


def test_scattered_points_in_3d_are_tetrahedra(tmp_path):
    pytest.importorskip("scipy")
    ball = Ball([0.0, 0.0, 0.0], 1.0)
    points = ball.sample_interior(500, torch.Generator().manual_seed(2), dtype=torch.float64)
    arrays = prediction_of(tmp_path, ScatteredBump(ball, points))
    write_vtk(tmp_path, ball, ["u"], arrays)
    mesh = meshio.read(tmp_path / "prediction.vtu")
    assert list(mesh.cells_dict) == ["tetra"]
    assert_cells_inside(mesh, ball)
    assert_fields_equal(mesh, arrays, ["u"])


def test_without_scipy_scattered_3d_points_are_written_as_points_saying_how_to_install_it(
    tmp_path, monkeypatch, caplog
):
    ball = Ball([0.0, 0.0, 0.0], 1.0)
    points = ball.sample_interior(50, torch.Generator().manual_seed(2), dtype=torch.float64)
    arrays = prediction_of(tmp_path, ScatteredBump(ball, points))
    monkeypatch.setitem(sys.modules, "scipy.spatial", None)  # import fails
    with caplog.at_level(logging.WARNING, logger="pinn"):
        write_vtk(tmp_path, ball, ["u"], arrays)  # at a run's end: no error, its points
    assert 'pip install "pinn-torch[vtk]"' in caplog.text
    mesh = meshio.read(tmp_path / "prediction.vtu")
    assert list(mesh.cells_dict) == ["vertex"] and len(mesh.cells_dict["vertex"]) == 50
    assert_fields_equal(mesh, arrays, ["u"])


class Wave3D(Problem):
    """u = sin(x + y - z) cos t on [0, 1]³ x [0, 2] (the residual is unused)."""

    domain = SpaceTime(Box([0.0] * 3, [1.0] * 3), 0.0, 2.0)

    def residual(self, x, u):
        return u()

    def exact(self, x):
        return torch.sin(x[:, 0] + x[:, 1] - x[:, 2]) * torch.cos(x[:, 3])


def test_3d_space_and_time_is_a_time_series_of_the_model_on_slices(tmp_path):
    problem = Wave3D()
    model = MLP(4, 1, width=4, depth=1, generator=torch.Generator().manual_seed(0)).double()
    run = FinishedRun(tmp_path, problem, model, None, {}, Validator(problem))
    vtk.write(run)
    index = json.loads((tmp_path / "prediction.vtu.series").read_text())
    times = [entry["time"] for entry in index["files"]]
    assert np.allclose(times, np.linspace(0.0, 2.0, vtk.SERIES_TIMES), rtol=0, atol=1e-15)
    arrays = vtk.time_slices(problem, model)
    for entry, time in zip(index["files"], times):
        at_time = arrays["points"][:, 3] == time
        mesh = meshio.read(tmp_path / entry["name"])
        assert np.array_equal(mesh.points, arrays["points"][at_time, :3])
        assert list(mesh.cells_dict) == ["hexahedron"]
        assert len(mesh.cells_dict["hexahedron"]) == grid_cell_count(mesh.points)
        assert_fields_equal(mesh, arrays, ["u"], rows=at_time)
        at_points = torch.from_numpy(arrays["points"][at_time])
        assert np.allclose(mesh.point_data["u"], model(at_points)[:, 0].detach().numpy())
        assert np.allclose(mesh.point_data["u_reference"], problem.exact(at_points).numpy())


def test_more_than_three_space_coordinates_and_time_are_skipped(tmp_path, caplog):
    domain = SpaceTime(Box([0.0] * 4, [1.0] * 4), 0.0, 1.0)
    arrays = {"points": np.zeros((3, 5)), "predicted": np.zeros((3, 1))}
    with caplog.at_level(logging.INFO, logger="pinn"):
        assert write_vtk(tmp_path, domain, ["u"], arrays) == []
    assert "a 5-D domain (4-D space and time) has no picture in ParaView" in caplog.text


def test_a_thinned_out_grid_of_reference_points_is_triangulated(tmp_path):
    square = Box([0.0, 0.0], [1.0, 1.0])
    axis = torch.linspace(0.0, 1.0, 30, dtype=torch.float64)
    grid = torch.cartesian_prod(axis, axis)
    kept = torch.rand(len(grid), generator=torch.Generator().manual_seed(4)) < 0.2
    arrays = prediction_of(tmp_path, ScatteredBump(square, grid[kept]))
    write_vtk(tmp_path, square, ["u"], arrays)
    mesh = meshio.read(tmp_path / "prediction.vtu")
    assert list(mesh.cells_dict) == ["triangle"]  # its few whole grid cells would leave points out
    assert_cells_inside(mesh, square)


def test_points_on_a_line_of_the_plane_stay_vertices(tmp_path):
    square = Box([0.0, 0.0], [1.0, 1.0])
    diagonal = torch.linspace(0.0, 1.0, 7, dtype=torch.float64)[:, None].repeat(1, 2)
    arrays = prediction_of(tmp_path, ScatteredBump(square, diagonal))
    write_vtk(tmp_path, square, ["u"], arrays)
    mesh = meshio.read(tmp_path / "prediction.vtu")
    assert list(mesh.cells_dict) == ["vertex"] and len(mesh.cells_dict["vertex"]) == 7
    assert_fields_equal(mesh, arrays, ["u"])
