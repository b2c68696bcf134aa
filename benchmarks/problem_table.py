"""The problem library's full-budget table: every library problem's default command, timed whole.

What it runs: for each yaml of conf/problem/ (or the ones `--problems` names), one after
another, the problem's default command in a process of its own,

    python -m pinn problem=<name> trainer.progress=false hydra.run.dir=<a fresh temporary dir>

so that each time is the whole command's (Python start-up, imports, training, validation,
plots), as a user sees it. It reads each run's metrics.json and prints a Markdown table: the
problem, rel_l2 (with each output's where the problem has several), max_abs_error, the
quantities of interest against their references (cylinder) or the learned unknowns
(inverse_poisson) where the problem has them, the wall seconds and the command. The table is
headed by the date, pinn's and torch's versions, the torch thread count the runs use and the
CPU, ready to paste into the README's "The problem library" and the docs; `--out FILE` writes
it there too. A run that fails gets its exit status in the table, and the script exits 1.

How long: the whole table is the sum of the README table's s column, about 2.7 hours on the
2-core machine the README's figures come from (19 problems, 30 s to 18 minutes each: burgers,
allen_cahn, cavity, cavity_re1000, kdv_solitons, beltrami and poisson3d 14-18 minutes),
longer beside other jobs. The runs go one at a time: two at once on
the same cores would slow each other and make the times meaningless. CI does not run this
(its accuracy tests, tests/run/test_accuracy.py, run reduced budgets of the same commands).

How to run (from the repository root, with pinn installed or the checkout importable):

    python benchmarks/problem_table.py                          # every problem (~2.7 h)
    python benchmarks/problem_table.py --problems helmholtz     # one problem (~1.5 min)
    python benchmarks/problem_table.py --problems poisson heat --out table.md
    python benchmarks/problem_table.py --threads 1              # adds threads=1 to each command

Each command is exactly the problem's default (`python -m pinn problem=<name>`) plus
`trainer.progress=false` and the run directory; with `--threads N` also `threads=N` (and
OMP_NUM_THREADS=N), which the table's command column then shows.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[1]


def library_problems() -> list[str]:
    """The names of the library's problems: conf/problem/*.yaml of this checkout, else of the
    installed package's configs."""
    folder = REPOSITORY / "conf" / "problem"
    if not folder.is_dir():
        from importlib.resources import files

        folder = Path(str(files("pinn") / "conf" / "problem"))
    names = sorted(path.stem for path in folder.glob("*.yaml"))
    if not names:
        raise SystemExit(f"no problem yamls found in {folder}")
    return names


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def torch_facts(threads: int | None) -> tuple[str, int]:
    """(torch's version, the thread count a run uses): asked of a fresh process with the runs'
    environment, since torch's default depends on it."""
    code = (
        "import torch, sys\n"
        "n = int(sys.argv[1])\n"
        "if n: torch.set_num_threads(n)\n"
        "print(torch.__version__, torch.get_num_threads())"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(threads or 0)],
        env=run_environment(threads),
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return out[0], int(out[1])


def pinn_version() -> str:
    out = subprocess.run(
        [sys.executable, "-c", "import pinn; print(pinn.__version__)"],
        capture_output=True,
        text=True,
    )
    return out.stdout.strip() or "?"


def run_environment(threads: int | None) -> dict[str, str]:
    env = dict(os.environ)
    if threads:
        env["OMP_NUM_THREADS"] = str(threads)
    return env


def command(name: str, threads: int | None, device: str = "cpu") -> list[str]:
    """The problem's default command, as the table shows it (without the run directory)."""
    words = ["python", "-m", "pinn", f"problem={name}"]
    if threads:
        words.append(f"threads={threads}")
    if device != "cpu":
        words.append(f"device={device}")
    return words


def run_one(name: str, threads: int | None, log_dir: Path | None, device: str = "cpu") -> dict:
    """Runs the problem's default command in a process of its own; its metrics and wall time."""
    with tempfile.TemporaryDirectory(prefix=f"pinn-table-{name}-") as run_dir:
        argv = [
            sys.executable,
            *command(name, threads, device)[1:],
            "trainer.progress=false",
            f"hydra.run.dir={run_dir}",
        ]
        start = time.perf_counter()
        done = subprocess.run(argv, env=run_environment(threads), capture_output=True, text=True)
        wall = time.perf_counter() - start
        if log_dir is not None:
            (log_dir / f"{name}.log").write_text(done.stdout + done.stderr)
        metrics_file = Path(run_dir) / "metrics.json"
        if done.returncode != 0 or not metrics_file.exists():
            tail = (done.stdout + done.stderr).strip().splitlines()[-5:]
            print(f"{name}: failed (exit {done.returncode})", *tail, sep="\n  ", file=sys.stderr)
            return {"failed": done.returncode, "wall_s": wall}
        metrics = json.loads(metrics_file.read_text())
    metrics["wall_s"] = wall
    return metrics


def number(value, digits: int = 2) -> str:
    if value is None:
        return ""
    if isinstance(value, (int, float)):
        return f"{value:.{digits}e}"
    return str(value)


def errors_cell(metrics: dict) -> str:
    """rel_l2, with each output's in brackets where there are several (u 1.1e-5, v 3.1e-5)."""
    cell = number(metrics.get("rel_l2"))
    parts = [
        f"{key.removeprefix('rel_l2_')} {number(value, 1)}"
        for key, value in metrics.items()
        if key.startswith("rel_l2_") and isinstance(value, (int, float))
    ]
    if cell and len(parts) > 1:
        cell += f" ({', '.join(parts)})"
    return cell


def max_abs_cell(metrics: dict) -> str:
    return number(metrics.get("max_abs_error"), 1)


def quantities_cell(metrics: dict) -> str:
    """The learned unknowns and the quantities of interest (with their errors where the
    problem has reference values); empty for the problems that have neither."""
    parts = [f"{name} {value:.8g}" for name, value in metrics.get("unknowns", {}).items()]
    errors = metrics.get("quantity_errors", {})
    for name, value in metrics.get("quantities", {}).items():
        shown = f"{value:.4g}" if isinstance(value, (int, float)) else "(a profile)"
        if isinstance(errors.get(name), (int, float)):
            shown += f" (error {errors[name]:.1e})"
        parts.append(f"{name} {shown}")
    return ", ".join(parts)


def table(rows: list[tuple[str, dict]], threads: int | None, device: str = "cpu") -> str:
    torch_version, thread_count = torch_facts(threads)
    today = datetime.date.today().isoformat()
    head = (
        f"Measured {today}: pinn {pinn_version()}, torch {torch_version}, {thread_count} "
        f"thread{'s' if thread_count != 1 else ''} a run, {cpu_name()} ({os.cpu_count()} "
        f"cores), Python {platform.python_version()}, one run at a time, seed 0; s is the "
        "whole command's wall time (`benchmarks/problem_table.py`)."
    )
    lines = [
        head,
        "",
        "| `problem=` | rel_l2 | max abs error | quantities | s | command |",
        "| --- | ---: | ---: | --- | ---: | --- |",
    ]
    for name, metrics in rows:
        shown = " ".join(command(name, threads, device))
        if "failed" in metrics:
            cells = [f"failed (exit {metrics['failed']})", "", ""]
        else:
            cells = [errors_cell(metrics), max_abs_cell(metrics), quantities_cell(metrics)]
        lines.append(f"| `{name}` | {' | '.join(cells)} | {metrics['wall_s']:.0f} | `{shown}` |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--problems", nargs="+", metavar="NAME", help="these problems only (default: all)"
    )
    parser.add_argument("--out", type=Path, help="also write the table to this file")
    parser.add_argument(
        "--threads", type=int, help="torch threads per run (default: torch's own default)"
    )
    parser.add_argument("--logs", type=Path, help="keep each run's output in DIR/<name>.log")
    parser.add_argument("--device", default="cpu", help="device=... for each run: cpu, cuda")
    args = parser.parse_args(argv)

    known = library_problems()
    names = args.problems or known
    unknown = [name for name in names if name not in known]
    if unknown:
        parser.error(f"no such problem: {', '.join(unknown)} (the library has {', '.join(known)})")
    if args.logs is not None:
        args.logs.mkdir(parents=True, exist_ok=True)

    rows = []
    for name in names:
        print(f"running {name} ...", file=sys.stderr, flush=True)
        metrics = run_one(name, args.threads, args.logs, args.device)
        print(f"  {name}: {metrics['wall_s']:.0f} s", file=sys.stderr, flush=True)
        rows.append((name, metrics))

    text = table(rows, args.threads, args.device)
    print(text, end="")
    if args.out is not None:
        args.out.write_text(text)
    return 1 if any("failed" in metrics for _, metrics in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
