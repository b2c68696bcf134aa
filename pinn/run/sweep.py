"""Multirun sweeps (`python -m pinn -m model.width=8,16`): a failing job never stops the sweep.

Each job leaves `status.json` in its directory (`run_job`): its overrides, "completed" or
"failed" with the error's one line, the errors and loss, and its wall time. At the end
`SweepSummary` (a Hydra callback, `hydra.callbacks` in conf/config.yaml) gathers them into
`summary.csv` in the sweep directory, prints the table, and ends the sweep with the number of
failed jobs as its exit status (capped at 100; 0 when every job passed). A job's learned unknowns
and its quantities of interest that are single numbers are columns of their own, after the
fixed ones, named as the problem names them (`unknown:<name>` / `quantity:<name>` where a name
is taken).
"""

from __future__ import annotations

import csv
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig

from pinn.errors import PinnError, TrainingInterrupted, first_line
from pinn.outputs.metrics import json_safe

STATUS_NAME = "status.json"
SUMMARY_NAME = "summary.csv"
COLUMNS = ("job", "overrides", "status", "rel_l2", "max_abs_error", "final_loss", "wall_time_s")
MAX_EXIT_STATUS = 100


def run_job(
    train: Callable[[DictConfig, str], dict], cfg: DictConfig, run_dir: str, job: int, overrides
) -> tuple[dict | None, str | None]:
    """Run `train(cfg, run_dir)` as job `job` of a sweep; returns (metrics, None) or (None, the
    error's one line). Any exception but an interrupt is caught, recorded and returned."""
    started = time.perf_counter()
    status: dict[str, Any] = {"job": job, "overrides": " ".join(overrides)}
    metrics, error = None, None
    try:
        metrics = train(cfg, run_dir)
        status.update(status="completed", **{k: metrics.get(k) for k in COLUMNS[3:6]})
        status.update(named_numbers(metrics))
    except TrainingInterrupted:
        raise  # Ctrl-C stops the whole sweep
    except Exception as failure:  # a failing job is the sweep's news, not its end
        text = first_line(failure)
        error = text if isinstance(failure, PinnError) else f"{type(failure).__name__}: {text}"
        status.update(status="failed", error=error)
    status["wall_time_s"] = time.perf_counter() - started
    Path(run_dir).mkdir(parents=True, exist_ok=True)
    (Path(run_dir) / STATUS_NAME).write_text(json.dumps(json_safe(status), indent=2) + "\n")
    return metrics, error


def named_numbers(metrics: dict) -> dict[str, float]:
    """{column: value} for the learned unknowns and the quantities that are one number each (a
    profile of values stays in metrics.json), each under its own name unless that is taken."""
    numbers: dict[str, float] = {}
    for kind, found in (
        ("unknown", metrics.get("unknowns", {})),
        ("quantity", metrics.get("quantities", {})),
    ):
        for name, value in found.items():
            if isinstance(value, (int, float)):
                taken = name in COLUMNS or name in ("error", *numbers)
                numbers[f"{kind}:{name}" if taken else name] = value
    return numbers


def columns_of(statuses: list[dict[str, Any]]) -> list[str]:
    """The fixed COLUMNS, then every job's named numbers in the order they first appear."""
    extra = dict.fromkeys(k for s in statuses for k in s if k not in (*COLUMNS, "error"))
    return [*COLUMNS, *extra]


def read_statuses(sweep_dir: Path) -> list[dict[str, Any]]:
    """Every job's status.json under `sweep_dir`, in job order, its overrides cut to those
    that differ between the jobs (what the sweep varies; all of them for a single job)."""
    found = [json.loads(path.read_text()) for path in sweep_dir.rglob(STATUS_NAME)]
    found.sort(key=lambda status: status["job"])
    if len(found) > 1:
        shared = set.intersection(*(set(status["overrides"].split()) for status in found))
        for status in found:
            status["overrides"] = " ".join(
                o for o in status["overrides"].split() if o not in shared
            )
    return found


def table(statuses: list[dict[str, Any]]) -> str:
    """The summary as aligned text: a header and one row per job."""

    def cell(name: str, value) -> str:
        if isinstance(value, float):
            return f"{value:.1f}" if name == "wall_time_s" else f"{value:.3e}"
        return "" if value is None else str(value)

    columns = columns_of(statuses)
    rows = [columns, *([cell(n, s.get(n)) for n in columns] for s in statuses)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(columns))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in rows)


class SweepSummary(Callback):
    """At the end of a multirun: summary.csv, the printed table, "N of M jobs failed", and
    exit status N (capped at 100) when N > 0."""

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        sweep_dir = Path(config.hydra.sweep.dir)
        statuses = read_statuses(sweep_dir)
        with open(sweep_dir / SUMMARY_NAME, "w", newline="") as file:
            fields = [*columns_of(statuses), "error"]
            writer = csv.DictWriter(file, fieldnames=fields, extrasaction="ignore")
            writer.writeheader()
            writer.writerows(statuses)
        failed = sum(status["status"] != "completed" for status in statuses)
        print(f"\n{table(statuses)}\nsummary in {sweep_dir / SUMMARY_NAME}")
        print(f"{failed} of {len(statuses)} jobs failed")
        if failed:
            sys.exit(min(failed, MAX_EXIT_STATUS))
