"""Runs written by pinn 0.1.0, before the library was split into its present folders and its
config keys declared in dataclasses (tests/data/pinn-0.1.0/, made by make.py there with that
version's code): a stopped run resumes with this code and ends bit for bit as that version's
run did (finished/); a finished run loads.

pinn 0.1.0 drew boundary points on every part, used or not; this code draws them only where a
condition reads them, none for this hard-constrained Poisson problem. A resumed run goes on
drawing as it began, so it ends as pinn 0.1.0 ended it, no longer as a fresh run of this code.
"""

import json
import shutil
import sys
from pathlib import Path

import torch

from pinn import compose_config, load_checkpoint, load_run, train

DATA = Path(__file__).resolve().parents[1] / "data" / "pinn-0.1.0"
sys.path.insert(0, str(DATA))
from make import OVERRIDES  # noqa: E402 (the runs' own overrides, as they were made)

sys.path.remove(str(DATA))


def test_a_run_stopped_by_pinn_0_1_0_resumes_and_ends_as_it_did(tmp_path):
    stopped = tmp_path / "stopped"
    shutil.copytree(DATA / "stopped", stopped)
    assert load_checkpoint(stopped / "checkpoint.pt")["step"] == 21  # mid-Adam
    resumed = train(compose_config([*OVERRIDES, f"resume={stopped}"]), tmp_path / "resumed")
    finished = json.loads((DATA / "finished" / "metrics.json").read_text())
    for key in ("rel_l2", "max_abs_error", "final_loss", "steps"):
        assert resumed[key] == finished[key], key
    ends = [
        load_checkpoint(folder / "checkpoint.pt")["model"]
        for folder in (tmp_path / "resumed", DATA / "finished")
    ]
    assert all(torch.equal(ends[0][key], ends[1][key]) for key in ends[0])


def test_a_fresh_run_of_that_config_draws_no_boundary_points_now(tmp_path):
    train(compose_config(OVERRIDES), tmp_path / "fresh")
    points = load_checkpoint(tmp_path / "fresh" / "checkpoint.pt")["training"]["sampler"]
    assert points["boundary"].shape == (0, 2) and points["boundary_counts"] == {}


def test_a_run_finished_by_pinn_0_1_0_loads(tmp_path):
    run = load_run(DATA / "finished")
    assert run.config.model.width == 6 and run.metrics["steps"] == 50
    points = torch.tensor([[0.25, 0.5], [0.5, 0.5]], dtype=torch.float64)
    values = run.predict(points)["u"]
    assert values.shape == (2,) and torch.isfinite(values).all()
