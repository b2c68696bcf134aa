"""outputs.vtk=true: VTK files of the prediction that meshio reads back to prediction.npz's."""

import json
import logging

import meshio
import numpy as np
import pytest
import torch

from pinn.config.schema import check_config
from pinn import MLP, ConfigError, Problem, compose_config, load_problem, train
from pinn.evaluation.validation import Validator
from pinn.outputs.vtk import write_vtk
from pinn.outputs.prediction import write_prediction
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
    assert mesh.cells[0].type == "vertex" and len(mesh.cells[0].data) == len(mesh.points)
    assert_fields_equal(mesh, arrays, ["u", "v", "p"])


def test_a_3d_domain_writes_its_points_as_they_are(tmp_path):
    overrides = ["problem=poisson_highd", "problem.params.dim=3"]
    problem, arrays = untrained_prediction(tmp_path, overrides)
    assert write_vtk(tmp_path, problem.domain, problem.outputs, arrays) == [
        tmp_path / "prediction.vtu"
    ]
    mesh = meshio.read(tmp_path / "prediction.vtu")
    assert np.array_equal(mesh.points, arrays["points"]) and mesh.points.shape[1] == 3
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
