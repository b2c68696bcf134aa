"""Resume: a run killed at any point and resumed ends bit for bit where it would have ended.

The CLI tests kill a real `python -m pinn` run with SIGKILL (float64, one thread) in the Adam
phase or part-way through L-BFGS, resume it, and compare with an uninterrupted run of the same
seed: parameters, loss, metrics and history must be identical, not close.
"""

import csv
import io
import json
import math
import signal
import subprocess
import sys
import time
from pathlib import Path

import cli_helpers
import pytest
import torch
from omegaconf import OmegaConf

import pinn
import pinn.training.checkpoints
from pinn import (
    MLP,
    CheckpointError,
    ConfigError,
    PointSampler,
    Refinement,
    TrainSettings,
    boundary_counts,
    compose_config,
    fit,
    load_checkpoint,
    save_checkpoint,
    train,
)
from pinn.nn import InputOptions
from pinn.problems.poisson import Poisson

RUN = [
    "problem=poisson",
    "dtype=float64",
    "threads=1",
    "seed=3",
    "trainer.progress=false",
    "problem.n_interior=64",
    "problem.n_boundary=32",
    "model.width=8",
    "model.depth=2",
    "trainer.adam.steps=300",
    "trainer.phases=[adam,lbfgs]",  # the phases these kill-and-resume runs are about
    "trainer.lbfgs.steps=200",
    "trainer.log_every=10",
    "trainer.checkpoint_every=5",
    "trainer.adam.resample_every=7",
]
WEIGHTS = {"dirichlet": 100.0}


# ---- fit(..., resume_from=...) in process ------------------------------------------------------


def tiny_parts(refinement=None, n_boundary=32):
    """A tiny float64 Poisson problem, its model and point sampler (n_boundary: a count or
    {part: count}), seeded."""
    problem = Poisson(hard_boundary=False)  # a Dirichlet term: WEIGHTS
    model = MLP(
        2,
        1,
        width=8,
        depth=2,
        inputs=InputOptions(lower=problem.domain.lower, upper=problem.domain.upper),
        generator=torch.Generator().manual_seed(0),
    ).double()
    points = PointSampler(
        problem.domain,
        64,
        n_boundary,
        "sobol",
        torch.Generator().manual_seed(1),
        dtype=torch.float64,
        refinement=refinement,
    )
    return problem, model, points


def tiny_fit(settings, refinement=None, n_boundary=32, **options):
    """Fit `tiny_parts(refinement, n_boundary)` with `settings`; returns (model, FitResult)."""
    problem, model, points = tiny_parts(refinement, n_boundary)
    return model, fit(problem, model, settings, points, weights=WEIGHTS, **options)


SETTINGS = TrainSettings(
    adam={"steps": 30, "resample_every": 4},
    lbfgs={"steps": 25},
    log_every=5,
    checkpoint_every=3,
    progress=False,
)


def flat(model):
    return torch.cat([p.detach().flatten() for p in model.parameters()])


def same_rows(history):
    """The history without its times, as text (so NaN learning rates compare equal)."""
    return repr([{k: v for k, v in row.items() if k != "time_s"} for row in history])


@pytest.fixture
def every_checkpoint(monkeypatch, written_checkpoints):
    """Run `tiny_fit(SETTINGS)`; returns (model, result, [each checkpoint it wrote, as bytes])."""
    written = written_checkpoints
    model, result = tiny_fit(SETTINGS, checkpoint_path="unused.pt")
    monkeypatch.setattr(pinn.training.checkpoints, "save_checkpoint", lambda path, state: None)
    return model, result, written


def test_resuming_from_any_checkpoint_ends_exactly_like_the_uninterrupted_run(every_checkpoint):
    model, result, written = every_checkpoint
    phases = []
    for data in written:
        state = torch.load(io.BytesIO(data), weights_only=True)
        phases.append(state["training"]["phase"])
        resumed_model, resumed = tiny_fit(SETTINGS, checkpoint_path="unused.pt", resume_from=state)
        where = f"resumed at step {state['step']} ({phases[-1]})"
        assert torch.equal(flat(resumed_model), flat(model)), where
        assert resumed.final_loss == result.final_loss, where
        assert resumed.steps == result.steps == 55, where
        assert same_rows(resumed.history) == same_rows(result.history), where
    # Adam between redraws, L-BFGS between chunks (a fresh LBFGS given load_state_dict), done.
    assert phases.count("adam") >= 5 and phases.count("lbfgs") >= 3 and phases[-1] == "done"


ADAPTIVE = TrainSettings(
    adam={"steps": 30, "resample_every": 8, "refine_every": 6},
    lbfgs={"steps": 10},
    log_every=5,
    checkpoint_every=3,
    weighting="lra",
    weighting_every=4,
    progress=False,
)


@pytest.mark.parametrize("method", ["rar", "rad"])
def test_adaptive_weights_and_refinement_resume_exactly(method, written_checkpoints):
    """LRA weights and refined points are part of the state: resuming anywhere changes nothing."""
    refinement = Refinement(method, candidates=200, add=10)
    written = written_checkpoints
    model, result = tiny_fit(ADAPTIVE, refinement, checkpoint_path="unused.pt")
    weights = [row["weight_dirichlet"] for row in result.history]
    assert len(set(weights)) > 2 and weights[0] != 100.0  # they moved, and were logged
    for data in written[1:-1:2]:
        state = torch.load(io.BytesIO(data), weights_only=True)
        resumed_model, resumed = tiny_fit(
            ADAPTIVE, refinement, checkpoint_path="unused.pt", resume_from=state
        )
        where = f"resumed at step {state['step']} ({state['training']['phase']})"
        assert torch.equal(flat(resumed_model), flat(model)), where
        assert same_rows(resumed.history) == same_rows(result.history), where


LBFGS_REDRAWS = TrainSettings(
    adam={"steps": 4},
    lbfgs={"steps": 20, "resample_every": 6, "stall_window": 0},
    log_every=4,
    checkpoint_every=1,
    progress=False,
)


def test_boundary_points_aimed_at_a_part_resume_exactly(monkeypatch, written_checkpoints):
    counts = boundary_counts(Poisson(hard_boundary=False), 32, {"x_min": 20})
    assert counts["x_min"] == 20 and sum(counts.values()) == 32
    model, result = tiny_fit(SETTINGS, n_boundary=counts, checkpoint_path="unused.pt")
    monkeypatch.setattr(pinn.training.checkpoints, "save_checkpoint", lambda path, state: None)
    for data in written_checkpoints[1::4]:
        state = torch.load(io.BytesIO(data), weights_only=True)
        assert state["training"]["sampler"]["boundary_counts"] == counts
        resumed_model, resumed = tiny_fit(
            SETTINGS, n_boundary=counts, checkpoint_path="unused.pt", resume_from=state
        )
        assert torch.equal(flat(resumed_model), flat(model)), state["step"]
        assert resumed.final_loss == result.final_loss


def test_lbfgs_redraws_its_points_and_resumes_exactly_across_a_redraw(
    monkeypatch, written_checkpoints
):
    """trainer.lbfgs.resample_every: fresh points after iterations 6, 12 and 18 of L-BFGS
    (chunks end there), and a run resumed from any of its checkpoints, one taken at a redraw's
    iteration among them, ends bit for bit as the uninterrupted one."""
    draws = []
    draw = PointSampler.draw
    monkeypatch.setattr(PointSampler, "draw", lambda self: draws.append(1) or draw(self))
    model, result = tiny_fit(LBFGS_REDRAWS, checkpoint_path="unused.pt")
    assert result.steps == 24 and len(draws) == 1 + 3  # the first batch, then three redraws
    written = list(written_checkpoints)
    steps = [torch.load(io.BytesIO(data), weights_only=True)["step"] for data in written]
    assert 4 + 6 in steps and 4 + 12 in steps  # checkpoints at redraws, before their points
    for data in written[1:-1]:
        state = torch.load(io.BytesIO(data), weights_only=True)
        resumed_model, resumed = tiny_fit(
            LBFGS_REDRAWS, checkpoint_path="unused.pt", resume_from=state
        )
        where = f"resumed at step {state['step']} ({state['training']['phase']})"
        assert torch.equal(flat(resumed_model), flat(model)), where
        assert same_rows(resumed.history) == same_rows(result.history), where


REFINED = {
    "lbfgs": TrainSettings(
        adam={"steps": 4},
        lbfgs={"steps": 14, "resample_every": 5, "refine_every": 3, "stall_window": 0},
        log_every=4,
        checkpoint_every=1,
        progress=False,
    ),
    "bfgs": TrainSettings(
        phases=["adam", "bfgs"],
        adam={"steps": 4},
        bfgs={"steps": 10, "resample_every": 4, "refine_every": 3, "stall_window": 0},
        log_every=4,
        checkpoint_every=1,
        progress=False,
    ),
    "gauss_newton": TrainSettings(
        phases=["adam", "gauss_newton"],
        adam={"steps": 4},
        gauss_newton={"steps": 7, "resample_every": 5, "refine_every": 2, "stall_window": 0},
        log_every=3,
        checkpoint_every=1,
        progress=False,
    ),
}


@pytest.mark.parametrize("method", ["rar", "rad"])
@pytest.mark.parametrize("phase", ["lbfgs", "bfgs", "gauss_newton"])
def test_refinement_in_a_second_order_phase_resumes_exactly(phase, method, written_checkpoints):
    """Points refined by residual every `refine_every` iterations (and redrawn every
    `resample_every`): a run resumed from any checkpoint, those at a refinement's iteration
    among them (they hold the points before it), ends bit for bit as the uninterrupted one."""
    settings, refinement = REFINED[phase], Refinement(method, candidates=150, add=6)
    model, result = tiny_fit(settings, refinement, checkpoint_path="unused.pt")
    written = list(written_checkpoints)
    states = [torch.load(io.BytesIO(data), weights_only=True) for data in written]
    refined = [
        s
        for s in states
        if s["training"]["phase"] == phase and "refined" in s["training"]["sampler"]
    ]
    assert refined, "no checkpoint after a refinement in the phase"
    if method == "rar":  # added in the phase: 6 at each refinement
        assert len(states[-1]["training"]["sampler"]["added"]) == 6 * (
            (settings.block(phase).steps - 1) // settings.block(phase).refine_every
        )
    for state in states[1:-1]:
        resumed_model, resumed = tiny_fit(
            settings, refinement, checkpoint_path="unused.pt", resume_from=state
        )
        where = f"resumed at step {state['step']} ({state['training']['phase']})"
        assert torch.equal(flat(resumed_model), flat(model)), where
        assert same_rows(resumed.history) == same_rows(result.history), where


WEIGHTED = TrainSettings(
    phases=["adam", "lbfgs", "bfgs", "gauss_newton"],
    adam={"steps": 9, "resample_every": 4},
    lbfgs={"steps": 6, "stall_window": 0},
    bfgs={"steps": 5, "stall_window": 0},
    gauss_newton={"steps": 4, "stall_window": 0},
    log_every=3,
    checkpoint_every=2,
    progress=False,
)


@pytest.mark.parametrize("method", ["rba", "vrba"])
def test_point_weights_resume_exactly_in_every_phase(method, written_checkpoints):
    """The point weights, their points and update count are in the checkpoint (as Adam's step
    started, in Adam): resumed anywhere, the run ends bit for bit as the uninterrupted one."""
    point_weights = {"method": method, "every": 2, "gamma": 0.9, "eta": 0.4}
    settings = TrainSettings(**{**vars(WEIGHTED), "point_weights": point_weights})
    model, result = tiny_fit(settings, checkpoint_path="unused.pt")
    assert len({row["attention_max_weight"] for row in result.history}) > 5  # they moved
    written = list(written_checkpoints)
    phases = []
    for data in written[:-1]:
        state = torch.load(io.BytesIO(data), weights_only=True)
        saved = state["training"]["point_weights"]
        assert saved["weights"].shape == (1, 64) and saved["names"] == ["pde"]
        phases.append(state["training"]["phase"])
        resumed_model, resumed = tiny_fit(settings, checkpoint_path="unused.pt", resume_from=state)
        where = f"resumed at step {state['step']} ({phases[-1]})"
        assert torch.equal(flat(resumed_model), flat(model)), where
        assert resumed.final_loss == result.final_loss, where
        assert same_rows(resumed.history) == same_rows(result.history), where
    assert {"adam", "lbfgs", "bfgs", "gauss_newton"} <= set(phases)


def test_a_checkpoint_refined_at_refinement_every_resumes_with_adam_refine_every(
    written_checkpoints,
):
    """A checkpoint of a pinn whose refinement interval was `refinement.every` (saved with the
    sampler's settings, no `refine_every` in the phases') resumes with
    `trainer.adam.refine_every` at that interval, and is refused at another."""
    refinement = Refinement("rar", candidates=200, add=10)
    model, result = tiny_fit(ADAPTIVE, refinement, checkpoint_path="unused.pt")
    state = torch.load(io.BytesIO(written_checkpoints[4]), weights_only=True)
    assert state["training"]["phase"] == "adam"
    for name in ("adam", "lbfgs", "gauss_newton", "bfgs"):
        del state["training"]["settings"][name]["refine_every"]
    state["training"]["sampler"]["refinement"]["every"] = 6  # as pinn wrote it then
    resumed_model, resumed = tiny_fit(
        ADAPTIVE, refinement, checkpoint_path="unused.pt", resume_from=state
    )
    assert torch.equal(flat(resumed_model), flat(model))
    assert same_rows(resumed.history) == same_rows(result.history)
    state["training"]["sampler"]["refinement"]["every"] = 7
    with pytest.raises(ConfigError, match="other settings"):
        tiny_fit(ADAPTIVE, refinement, resume_from=state)


def test_training_draws_nothing_from_the_global_generator(every_checkpoint):
    # Every random number of a run comes from its own seeded generators: resuming needs no
    # global RNG state. (Building the model does consume it, in nn.Linear's default
    # initialisation, which MLP then overwrites from its own generator.)
    state = torch.load(io.BytesIO(every_checkpoint[2][4]), weights_only=True)
    for resume_from in (None, state):
        problem, model, points = tiny_parts()
        global_rng = torch.get_rng_state()
        fit(problem, model, SETTINGS, points, weights=WEIGHTS, resume_from=resume_from)
        assert torch.equal(torch.get_rng_state(), global_rng)


def is_plain(value) -> bool:
    if isinstance(value, dict):
        return all(isinstance(k, (str, int)) and is_plain(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return all(is_plain(v) for v in value)
    return value is None or isinstance(value, (torch.Tensor, int, float, str, bool))


def test_checkpoints_hold_plain_data_and_load_with_weights_only(every_checkpoint):
    _, _, written = every_checkpoint
    for data in (written[2], written[-3]):  # one in Adam, one in L-BFGS
        state = torch.load(io.BytesIO(data), weights_only=True)
        assert is_plain(state)
        generator = state["training"]["sampler"]["generator"]
        assert generator.dtype == torch.uint8
        assert state["training"]["engine"]["plans"]["interior"]["laplacian"] is True


def test_fit_refuses_a_checkpoint_of_another_run(every_checkpoint):
    _, _, written = every_checkpoint
    state = torch.load(io.BytesIO(written[2]), weights_only=True)
    with pytest.raises(ConfigError, match="other settings"):
        tiny_fit(
            TrainSettings(adam={"steps": 30, "lr": 2e-3}, lbfgs={"steps": 25}, log_every=5),
            resume_from=state,
        )
    settings = TrainSettings(**{**vars(SETTINGS), "progress": True, "checkpoint_every": 0})
    tiny_fit(settings, resume_from=state)  # display and checkpointing may change
    with pytest.raises(CheckpointError, match="no training state"):
        tiny_fit(SETTINGS, resume_from={"model": {}, "step": 3, "history": []})


# ---- python -m pinn ... resume=<run dir> ------------------------------------------------------


def run_pinn(*args):
    return cli_helpers.run_pinn(*args, timeout=120)


def kill_when(run_dir: Path, phase: str) -> dict:
    """Start the run in `run_dir`, SIGKILL it once its checkpoint is past step 0 in `phase`."""
    process = subprocess.Popen(
        [sys.executable, "-m", "pinn", *RUN, f"hydra.run.dir={run_dir}"],
        cwd=cli_helpers.REPO,
        env=cli_helpers.cli_environment(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and process.poll() is None:
            state = _peek(run_dir / "checkpoint.pt")
            if state and state["step"] > 0 and state["training"]["phase"] == phase:
                process.send_signal(signal.SIGKILL)
                break
            time.sleep(0.005)
    finally:
        process.kill()
        process.wait()
    state = load_checkpoint(run_dir / "checkpoint.pt")
    assert state["training"]["phase"] == phase, "killed too late: make the run longer"
    assert not (run_dir / "metrics.json").exists()
    return state


def _peek(path: Path) -> dict | None:
    try:
        return load_checkpoint(path)
    except CheckpointError:
        return None


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def outputs(run_dir: Path) -> tuple[dict, list[dict]]:
    """metrics.json but the times and memory, and history.csv but the times."""
    metrics = json.loads((run_dir / "metrics.json").read_text())
    for key in ("wall_time_s", "started", "ended", "peak_memory_mb"):
        metrics.pop(key)
    metrics.pop("peak_device_memory_mb", None)  # on cuda
    with open(run_dir / "history.csv") as file:
        history = [{k: v for k, v in row.items() if k != "time_s"} for row in csv.DictReader(file)]
    return metrics, history


def assert_same_outcome(resumed: Path, reference: Path) -> None:
    """Identical final parameters, loss and step count, metrics and history."""
    state, ref_state = (load_checkpoint(d / "checkpoint.pt") for d in (resumed, reference))
    assert state["model"].keys() == ref_state["model"].keys()
    assert all(torch.equal(state["model"][k], ref_state["model"][k]) for k in state["model"])
    assert (state["loss"], state["step"]) == (ref_state["loss"], ref_state["step"])
    assert state["training"]["phase"] == "done"
    assert outputs(resumed) == outputs(reference)


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory) -> Path:
    run_dir = tmp_path_factory.mktemp("uninterrupted")
    result = run_pinn(*RUN, f"hydra.run.dir={run_dir}")
    assert result.returncode == 0, result.stderr
    return run_dir


@pytest.mark.slow  # a killed CLI run resumed; resuming from every checkpoint is tested in process
def test_killed_in_adam_and_resumed_into_a_new_directory(uninterrupted, tmp_path):
    killed = tmp_path / "killed"
    saved = kill_when(killed, "adam")
    before = snapshot(killed)
    resumed = tmp_path / "resumed"
    result = run_pinn(*RUN, f"resume={killed}", f"hydra.run.dir={resumed}")
    assert result.returncode == 0, result.stderr
    assert f"resuming the run in {killed / 'checkpoint.pt'} at step {saved['step']}" in (
        result.stdout
    )
    assert_same_outcome(resumed, uninterrupted)
    assert snapshot(killed) == before  # the interrupted run is left as it was


@pytest.mark.slow  # a killed CLI run resumed; resuming from every checkpoint is tested in process
def test_killed_in_lbfgs_and_resumed_in_place(uninterrupted, tmp_path):
    killed = tmp_path / "run"
    saved = kill_when(killed, "lbfgs")
    assert 300 < saved["step"] < 500
    result = run_pinn(
        *RUN, "trainer.checkpoint_every=50", f"resume={killed}", f"hydra.run.dir={killed}"
    )
    assert result.returncode == 0, result.stderr
    assert_same_outcome(killed, uninterrupted)


@pytest.mark.slow  # a CLI run resumed
def test_a_finished_run_is_not_trained_again(uninterrupted, tmp_path):
    before = snapshot(uninterrupted)
    again = tmp_path / "again"
    result = run_pinn(*RUN, f"resume={uninterrupted}", f"hydra.run.dir={again}")
    assert result.returncode == 0, result.stderr
    assert "had already finished at step 500: nothing left to train" in result.stdout
    assert snapshot(uninterrupted) == before
    assert outputs(again) == outputs(uninterrupted)  # its outputs, written again
    assert not (again / "checkpoint.pt").exists()  # no new state: nothing was trained


def test_a_corrupt_checkpoint_is_refused_and_left_alone(tmp_path):
    damaged = tmp_path / "damaged"
    damaged.mkdir()
    (damaged / "checkpoint.pt").write_bytes(b"PK\x03\x04 half a zip file")
    (damaged / "config.yaml").write_text("seed: 0\n")
    before = snapshot(damaged)
    result = run_pinn(*RUN, f"resume={damaged}", f"hydra.run.dir={tmp_path / 'new'}")
    assert result.returncode == 1
    assert f"pinn: error: resume={damaged}: " in result.stderr
    assert "not a readable pinn checkpoint" in result.stderr
    assert "Traceback" not in result.stderr
    assert snapshot(damaged) == before
    assert not (tmp_path / "new" / "checkpoint.pt").exists()


def test_foreign_checkpoints_and_changed_configs_are_refused(tmp_path):
    short = [*RUN, "trainer.adam.steps=10", "trainer.lbfgs.steps=2"]
    uninterrupted = tmp_path / "uninterrupted"
    train(compose_config(short), uninterrupted)
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    torch.save({"weights": torch.zeros(2)}, foreign / "checkpoint.pt")
    old = tmp_path / "old"
    save_checkpoint(old / "checkpoint.pt", {"model": {}, "step": 3, "history": []})
    cases = [
        (foreign, [], CheckpointError, "not a pinn checkpoint"),
        (old, [], CheckpointError, "holds no run to continue"),
        (tmp_path / "missing", [], CheckpointError, "no checkpoint at"),
        (uninterrupted, ["model.width=16"], ConfigError, r"model.width=16 \(saved: 8\)"),
        (uninterrupted, ["dtype=float32"], ConfigError, r"dtype='float32' \(saved: 'float64'\)"),
        (uninterrupted, ["seed=4"], ConfigError, r"seed=4 \(saved: 3\)"),
    ]
    before = snapshot(uninterrupted)
    for resumed, overrides, error, message in cases:
        cfg = compose_config([*short, *overrides, f"resume={resumed}"])
        with pytest.raises(error, match=message):
            train(cfg, tmp_path / "new")
    assert not (tmp_path / "new").exists()
    assert snapshot(uninterrupted) == before
    assert math.isfinite(load_checkpoint(uninterrupted / "checkpoint.pt")["loss"])


@pytest.mark.parametrize("entry", ["model", "history", "training.phase_index"])
def test_a_checkpoint_missing_an_entry_is_refused_in_one_line_naming_it(entry, tmp_path):
    short = [*RUN, "trainer.adam.steps=10", "trainer.lbfgs.steps=2"]
    whole = tmp_path / "whole"
    train(compose_config(short), whole)
    state = load_checkpoint(whole / "checkpoint.pt")
    holder, _, key = entry.rpartition(".")
    del (state[holder] if holder else state)[key]
    cut = tmp_path / "cut"
    save_checkpoint(cut / "checkpoint.pt", state)
    lacks = f"lacks {entry}: it is not a whole checkpoint of a pinn run"
    result = run_pinn(*short, f"resume={cut}", f"hydra.run.dir={tmp_path / 'new'}")
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert f"pinn: error: resume={cut}: {cut / 'checkpoint.pt'} {lacks}" in result.stderr
    with pytest.raises(CheckpointError, match=f"load_run: .* {lacks}"):
        pinn.load_run(cut)  # finished, as the whole run was
    problem, model, points = tiny_parts()
    with pytest.raises(CheckpointError, match=f"the checkpoint {lacks}"):
        fit(problem, model, SETTINGS, points, weights=WEIGHTS, resume_from=state)


def test_a_changed_config_is_told_the_overrides_its_run_was_started_with(tmp_path):
    from pinn.run.resume import check_same_run

    saved = OmegaConf.to_container(compose_config(["problem=heat", "seed=3"]), resolve=True)
    current = OmegaConf.to_container(compose_config(["problem=heat"]), resolve=True)
    (tmp_path / ".hydra").mkdir()
    (tmp_path / ".hydra" / "overrides.yaml").write_text(
        "- problem=heat\n- seed=3\n- hydra.run.dir=runs/a\n- threads=1\n"
    )
    with pytest.raises(ConfigError, match=r"started with \(problem=heat seed=3 threads=1\)"):
        check_same_run(saved, current, tmp_path / "checkpoint.pt")
    (tmp_path / ".hydra" / "overrides.yaml").unlink()  # a run of fit(): no Hydra record
    with pytest.raises(ConfigError, match="see the config.yaml next to the checkpoint"):
        check_same_run(saved, current, tmp_path / "checkpoint.pt")
