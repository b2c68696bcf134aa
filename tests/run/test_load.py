"""load_run: a finished run back from its directory predicts what the run wrote, bit for bit."""

import json
import sys

import numpy as np
import pytest
import torch
from cli_helpers import REACTION_MODULE

from pinn import CheckpointError, ConfigError, compose_config, load_checkpoint, load_run, train
from pinn.training.checkpoints import save_checkpoint

SMALL = [
    "trainer.adam.steps=5",
    "trainer.lbfgs.steps=2",
    "trainer.gauss_newton.steps=2",
    "trainer.bfgs.steps=2",
    "trainer.progress=false",
    "problem.n_interior=64",
    "problem.n_boundary=32",
    "model.width=8",
    "model.depth=2",
]


def small_run(folder, *overrides):
    train(compose_config([*SMALL, *overrides]), folder)
    return folder


@pytest.fixture(scope="module")
def poisson_run(tmp_path_factory):
    return small_run(tmp_path_factory.mktemp("poisson"), "seed=2")


@pytest.fixture(scope="module")
def inverse_run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("inverse")
    return small_run(folder, "problem=inverse_poisson", "dtype=float32")


def saved_prediction(run_dir):
    with np.load(run_dir / "prediction.npz") as saved:
        return saved["points"], saved["predicted"]


@pytest.mark.parametrize("which", ["poisson_run", "inverse_run"])  # float64, float32
def test_predictions_equal_the_runs_own_bit_for_bit(request, which):
    run_dir = request.getfixturevalue(which)
    run = load_run(run_dir)
    points, predicted = saved_prediction(run_dir)

    values = run.predict(points)
    assert list(values) == ["u"] and isinstance(values["u"], np.ndarray)
    dtype = np.float32 if which == "inverse_run" else np.float64
    assert values["u"].dtype == dtype and values["u"].shape == (len(points),)
    assert np.array_equal(values["u"].astype(np.float64), predicted[:, 0])

    tensors = run.predict(torch.from_numpy(points))
    assert isinstance(tensors["u"], torch.Tensor)
    assert np.array_equal(tensors["u"].double().numpy(), predicted[:, 0])

    assert run.metrics == json.loads((run_dir / "metrics.json").read_text())
    assert next(run.model.parameters()).device == torch.device("cpu")


def test_the_config_and_learned_unknowns_come_back(inverse_run):
    run = load_run(inverse_run)
    assert run.config.dtype == "float32" and run.config.model.width == 8
    assert next(run.model.parameters()).dtype == torch.float32
    kappa = run.problem.unknown("kappa")
    assert kappa.item() == pytest.approx(run.metrics["unknowns"]["kappa"], rel=1e-6)
    assert kappa.item() != 1.0  # the initial guess: training moved it


def test_a_system_returns_each_output_by_name(tmp_path):
    run_dir = small_run(
        tmp_path, "problem=kovasznay", "trainer.lbfgs.steps=0", "trainer.gauss_newton.steps=0"
    )
    values = load_run(run_dir).predict(saved_prediction(run_dir)[0])
    predicted = saved_prediction(run_dir)[1]
    assert list(values) == ["u", "v", "p"]
    for k, name in enumerate(["u", "v", "p"]):
        assert np.array_equal(values[name], predicted[:, k])


def test_a_folder_without_a_run_is_refused(tmp_path):
    with pytest.raises(CheckpointError, match="is not a run directory .no checkpoint.pt in it"):
        load_run(tmp_path)
    with pytest.raises(CheckpointError, match="no directory"):
        load_run(tmp_path / "nope")


def test_an_unfinished_run_is_refused_with_resume_suggested(tmp_path, poisson_run):
    state = load_checkpoint(poisson_run / "checkpoint.pt")
    state["training"]["phase"] = "adam"
    state["step"] = 3
    save_checkpoint(tmp_path / "checkpoint.pt", state)
    with pytest.raises(CheckpointError) as error:
        load_run(tmp_path)
    message = str(error.value)
    assert "has not finished" in message and "step 3, adam" in message
    assert f"resume={tmp_path}" in message and "\n" not in message


def test_a_finished_checkpoint_without_metrics_is_refused(tmp_path, poisson_run):
    (tmp_path / "checkpoint.pt").write_bytes((poisson_run / "checkpoint.pt").read_bytes())
    with pytest.raises(CheckpointError, match="no metrics.json"):
        load_run(tmp_path)


@pytest.mark.parametrize("shape", [(5,), (5, 3), (2, 5, 2)])
def test_points_of_the_wrong_shape_are_refused(poisson_run, shape):
    run = load_run(poisson_run)
    with pytest.raises(ConfigError, match=rf"points must be \(N, 2\).*\['x', 'y'\].*{shape}"):
        run.predict(np.zeros(shape))


def test_a_run_configured_for_a_gpu_loads_on_the_cpu(tmp_path, poisson_run):
    """The run's device (cuda here) does not decide where the model is loaded: `device` does.
    (The tensors of a checkpoint written on a GPU are mapped to the CPU by load_checkpoint; no
    GPU on the test machine writes one.)"""
    for name in ("metrics.json", "prediction.npz"):
        (tmp_path / name).write_bytes((poisson_run / name).read_bytes())
    state = load_checkpoint(poisson_run / "checkpoint.pt")
    state["config"]["device"] = "cuda:0"
    save_checkpoint(tmp_path / "checkpoint.pt", state)
    run = load_run(tmp_path)
    assert {p.device for p in run.model.parameters()} == {torch.device("cpu")}
    points, predicted = saved_prediction(tmp_path)
    assert np.array_equal(run.predict(points)["u"], predicted[:, 0])


def test_a_device_this_machine_lacks_is_refused(poisson_run):
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    with pytest.raises(ConfigError, match="no cuda device"):
        load_run(poisson_run, device="cuda")


def test_a_run_of_ones_own_module_from_another_folder_says_how_to_import_it(tmp_path, monkeypatch):
    folder = tmp_path / "mine"
    (folder / "conf" / "problem").mkdir(parents=True)
    (folder / "my_reaction.py").write_text(REACTION_MODULE)
    (folder / "conf" / "problem" / "my_reaction.yaml").write_text(
        "target: my_reaction.ReactionDiffusion\nn_interior: 32\nn_boundary: 2\n"
    )
    monkeypatch.chdir(folder)
    monkeypatch.syspath_prepend(str(folder))
    train(compose_config([*SMALL, "problem=my_reaction"]), folder / "run")
    assert json.loads((folder / "run" / "metrics.json").read_text())["problem"]["file"] == str(
        folder / "my_reaction.py"
    )
    monkeypatch.chdir(tmp_path)  # another session, in another folder
    monkeypatch.setattr(sys, "path", [path for path in sys.path if path != str(folder)])
    monkeypatch.delitem(sys.modules, "my_reaction")
    with pytest.raises(ConfigError) as refused:
        load_run(folder / "run")
    assert str(refused.value) == (
        f"load_run: the run in {folder / 'run'} trained "
        "problem.target='my_reaction.ReactionDiffusion', and Python cannot import its module "
        "'my_reaction' here; the run's problem was defined "
        f"in {folder / 'my_reaction.py'}: put {folder} on the path first, "
        f"sys.path.insert(0, {str(folder)!r}) in Python or PYTHONPATH={folder} in the shell, "
        "or call load_run from that folder"
    )
    monkeypatch.syspath_prepend(str(folder))  # as it says
    assert load_run(folder / "run").predict([[0.5]])["u"].shape == (1,)


def test_points_outside_the_domain_are_predicted_with_one_warning(poisson_run, pinn_messages):
    run = load_run(poisson_run)
    run.predict([[0.5, 0.5]])
    assert pinn_messages() == []
    values = run.predict([[0.5, 0.5], [1.5, 0.5], [2.0, 2.0]])["u"]
    run.predict([[3.0, 3.0]])  # said once
    assert np.isfinite(values).all()
    assert pinn_messages() == [
        "predict: 2 of the 3 points lie outside the domain (the first: [1.5, 0.5], coordinates "
        "['x', 'y']): the network is extrapolated there"
    ]
