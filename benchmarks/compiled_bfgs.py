"""A `bfgs` iteration eager and compiled (`trainer.compile=false` and `true`), per problem.

Each problem runs its yaml's network and points with `trainer.phases=[adam,bfgs]`, 50 Adam
steps and `--iterations` BFGS iterations, once eager and once compiled, one run after the other
in this process (so one process at a time). Prints the milliseconds an iteration takes after the
first 100 (each iteration is one to a few evaluations of the loss and its gradient in the line
search, plus the update of the inverse Hessian; the two runs' trajectories part at rounding, so
their line searches may spend a few evaluations more or less), the ratio, and the seconds before
the first iteration (the compiled run compiles there: torch's cache makes a rerun quicker).

How to run (from the repository root, nothing else running):

    python benchmarks/compiled_bfgs.py                                  # kdv_solitons, burgers
    python benchmarks/compiled_bfgs.py --problems cavity --iterations 200
"""

from __future__ import annotations

import argparse
import csv
import tempfile
from pathlib import Path

import pinn

PROBLEMS = ("kdv_solitons", "burgers")
SKIPPED = 100  # iterations left out of the average: the first ones search longer


def bfgs_times(run_dir: Path) -> list[tuple[int, float]]:
    """[(step, seconds)] of the history's BFGS rows (one a step)."""
    with open(run_dir / "history.csv", newline="") as file:
        return [
            (int(row["step"]), float(row["time_s"]))
            for row in csv.DictReader(file)
            if row["phase"] == "bfgs"
        ]


def timed(
    problem: str, compiled: bool, iterations: int, threads: int | None, device: str
) -> tuple[float, float]:
    """(ms an iteration after the first `SKIPPED`, seconds before the first iteration)."""
    overrides = [
        f"device={device}",
        f"problem={problem}",
        "trainer.phases=[adam,bfgs]",
        "trainer.adam.steps=50",
        f"trainer.bfgs.steps={iterations}",
        f"trainer.compile={'true' if compiled else 'false'}",
        "trainer.progress=false",
        "trainer.checkpoint_every=0",
    ] + ([f"threads={threads}"] if threads else [])
    with tempfile.TemporaryDirectory() as run_dir:
        pinn.train(pinn.compose_config(overrides), run_dir)
        rows = bfgs_times(Path(run_dir))
    (first_step, first_time), (last_step, last_time) = rows[SKIPPED], rows[-1]
    return 1000 * (last_time - first_time) / (last_step - first_step), rows[0][1]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--problems", nargs="+", default=list(PROBLEMS))
    parser.add_argument("--iterations", type=int, default=300)
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: all)")
    parser.add_argument("--device", default="cpu", help="cpu or cuda")
    args = parser.parse_args(argv)
    if args.iterations <= SKIPPED + 1:
        parser.error(f"--iterations must exceed {SKIPPED + 1}")
    print(f"{args.device}: 50 Adam steps, then {args.iterations} BFGS iterations; ms an")
    print(f"iteration after the first {SKIPPED}; s: seconds before the first iteration")
    print("(compiling, for compiled)\n")
    print("| problem | eager ms | compiled ms | eager / compiled | eager s | compiled s |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for problem in args.problems:
        options = (args.iterations, args.threads, args.device)
        eager, eager_start = timed(problem, False, *options)
        compiled, compiled_start = timed(problem, True, *options)
        print(
            f"| {problem} | {eager:.1f} | {compiled:.1f} | {eager / compiled:.2f} "
            f"| {eager_start:.1f} | {compiled_start:.1f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
