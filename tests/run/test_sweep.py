"""A multirun whose middle job fails: the sweep goes on, records it, summarises every job and
says in its exit status how many failed."""

import csv
import json

from cli_helpers import run_pinn

from pinn.run.sweep import COLUMNS, columns_of, named_numbers, table

FAST = [
    "trainer.adam.steps=5",
    "trainer.lbfgs.steps=0",
    "trainer.gauss_newton.steps=0",
    "trainer.bfgs.steps=0",
    "trainer.progress=false",
    "problem.n_interior=32",
    "problem.n_boundary=16",
    "model.depth=1",
    "threads=1",
]


def test_a_failing_job_is_recorded_and_the_sweep_goes_on(tmp_path):
    result = run_pinn("-m", *FAST, "model.width=4,0,6", f"hydra.sweep.dir={tmp_path}", timeout=300)
    assert result.returncode == 1, result.stderr  # one job failed
    assert result.stdout.strip().splitlines()[-1] == "1 of 3 jobs failed"
    assert "model.width=0): model.width must be a whole number >= 1, got 0" in result.stderr
    assert result.stderr.count("pinn: error: job 1 (") == 1
    assert "Traceback" not in result.stderr
    assert [(tmp_path / str(job) / "metrics.json").exists() for job in range(3)] == [
        True,
        False,
        True,
    ]
    failed = json.loads((tmp_path / "1" / "status.json").read_text())
    assert failed["status"] == "failed" and failed["overrides"].endswith(" model.width=0")
    assert failed["error"] == "model.width must be a whole number >= 1, got 0"
    assert "model.width=0): model.width must be" in (tmp_path / "1" / "__main__.log").read_text()

    with open(tmp_path / "summary.csv") as file:
        rows = list(csv.DictReader(file))
    assert [(row["job"], row["overrides"], row["status"]) for row in rows] == [
        ("0", "model.width=4", "completed"),
        ("1", "model.width=0", "failed"),
        ("2", "model.width=6", "completed"),
    ]
    for job in (0, 2):
        metrics = json.loads((tmp_path / str(job) / "metrics.json").read_text())
        assert float(rows[job]["rel_l2"]) == metrics["rel_l2"]
        assert float(rows[job]["final_loss"]) == metrics["final_loss"]
        assert float(rows[job]["wall_time_s"]) > 0
    assert rows[1]["rel_l2"] == "" and rows[1]["error"] == failed["error"]
    assert "model.width=0  failed" in result.stdout  # the printed table


def test_the_table_shows_a_row_per_job_with_its_numbers():
    statuses = [{"job": 0, "overrides": "seed=1", "status": "completed", "rel_l2": 0.5}]
    assert table(statuses).splitlines()[1].split() == ["0", "seed=1", "completed", "5.000e-01"]


def test_learned_unknowns_and_single_number_quantities_get_columns_of_their_own():
    metrics = {
        "rel_l2": 0.1,
        "unknowns": {"kappa": 2.0, "status": 3.0},  # a name a fixed column has is prefixed
        "quantities": {"drag": 5.5, "profile": [0.1, 0.2], "kappa": 1.0},
    }
    numbers = named_numbers(metrics)
    assert numbers == {"kappa": 2.0, "unknown:status": 3.0, "drag": 5.5, "quantity:kappa": 1.0}
    statuses = [
        {"job": 0, "overrides": "seed=0", "status": "completed", **numbers},
        {"job": 1, "overrides": "seed=1", "status": "failed", "error": "bad"},
        {"job": 2, "overrides": "seed=2", "status": "completed", "drag": 5.25},
    ]
    assert columns_of(statuses)[len(COLUMNS) :] == list(numbers)
    header, *rows = table(statuses).splitlines()
    assert header.split()[-4:] == ["kappa", "unknown:status", "drag", "quantity:kappa"]
    assert rows[0].split()[-4:] == ["2.000e+00", "3.000e+00", "5.500e+00", "1.000e+00"]
    assert rows[2].split()[-1] == "5.250e+00"  # job 2's drag under its column, the rest empty
