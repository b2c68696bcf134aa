"""Runs written by pinn 0.1.0, before the library was split into its present folders and its
config keys declared in dataclasses (tests/data/pinn-0.1.0/, made by make.py there with that
version's code): a stopped run resumes with this code and ends bit for bit as a fresh run of
this code does; a finished run loads."""

import shutil
import sys
from pathlib import Path

import torch

from pinn import compose_config, load_checkpoint, load_run, train

DATA = Path(__file__).resolve().parents[1] / "data" / "pinn-0.1.0"
sys.path.insert(0, str(DATA))
from make import OVERRIDES  # noqa: E402 (the runs' own overrides, as they were made)

sys.path.remove(str(DATA))


def test_a_run_stopped_by_pinn_0_1_0_resumes_as_a_fresh_run_ends(tmp_path):
    stopped = tmp_path / "stopped"
    shutil.copytree(DATA / "stopped", stopped)
    assert load_checkpoint(stopped / "checkpoint.pt")["step"] == 21  # mid-Adam
    resumed = train(compose_config([*OVERRIDES, f"resume={stopped}"]), tmp_path / "resumed")
    fresh = train(compose_config(OVERRIDES), tmp_path / "fresh")
    for key in ("rel_l2", "max_abs_error", "final_loss", "steps"):
        assert resumed[key] == fresh[key], key
    ends = [
        load_checkpoint(tmp_path / name / "checkpoint.pt")["model"] for name in ("resumed", "fresh")
    ]
    assert all(torch.equal(ends[0][key], ends[1][key]) for key in ends[0])


def test_a_run_finished_by_pinn_0_1_0_loads(tmp_path):
    run = load_run(DATA / "finished")
    assert run.config.model.width == 6 and run.metrics["steps"] == 50
    points = torch.tensor([[0.25, 0.5], [0.5, 0.5]], dtype=torch.float64)
    values = run.predict(points)["u"]
    assert values.shape == (2,) and torch.isfinite(values).all()
