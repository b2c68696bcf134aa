"""Error against wall time: Adam alone, Adam + L-BFGS, Adam + Gauss-Newton and Adam + BFGS, each
second-order phase on uniformly redrawn points and on points redrawn by residual (RAD).

Each problem runs with its yaml's network, points and Adam steps (`conf/problem/<name>.yaml`),
only the phases and the points of the second phase changed, one run after the other in this
process (so one process at a time):

    adam              trainer.phases=[adam], `--adam-factor` times the yaml's Adam steps
    adam+lbfgs        trainer.phases=[adam,lbfgs], `--lbfgs` L-BFGS iterations
    adam+gn           trainer.phases=[adam,gauss_newton], `--gn` Gauss-Newton iterations (the
                      yaml's `trainer.gauss_newton.steps` unless given)
    adam+bfgs         trainer.phases=[adam,bfgs], `--bfgs` iterations of self-scaled Broyden
                      (trainer.bfgs's defaults otherwise)

In each of the last three the second phase redraws its points every `--redraw` iterations
(`--gn-redraw` for Gauss-Newton, whose iterations are few): uniformly (`resample_every`), or
by their residual with the suffix `+rad` (`refinement.method=rad`, `refine_every`: RAD's
density |r|^k / mean + c from `refinement.candidates`, the yaml's or the defaults). `--methods`
runs some of them only, e.g. `--methods adam+bfgs adam+bfgs+rad`.

A history row every `--every` steps gives the curve: rel_l2 against the run's own clock
(`time_s` of history.csv, training only). Prints, per run, the final rel_l2, the time, and the
time at which it first went below 1e-4 and 1e-5. Each problem's curves are kept in
`--curves`/<problem>.csv (method, seconds, rel_l2), and `--plot` (log scale) draws every problem
kept there, so rerunning one problem redraws its panel beside the others'.

How to run (from the repository root, nothing else running):

    python benchmarks/optimizers.py                                  # the four problems
    python benchmarks/optimizers.py --problems burgers               # redo one panel
    python benchmarks/optimizers.py --problems poisson --scale 0.02 --curves c --plot c.png
"""

from __future__ import annotations

import argparse
import csv
import math
import tempfile
from pathlib import Path

import pinn

PROBLEMS = ("poisson", "burgers", "allen_cahn", "kdv_solitons")
SECOND_PHASES = {"lbfgs": "lbfgs", "gn": "gauss_newton", "bfgs": "bfgs"}
THRESHOLDS = (1e-4, 1e-5)


def methods(args: argparse.Namespace, adam_steps: int, gn_steps: int) -> dict[str, list[str]]:
    """{method: the overrides that make it}; `gn_steps` the Gauss-Newton iterations."""

    def scaled(steps: int) -> int:
        return max(1, round(steps * args.scale))

    steps = {"lbfgs": args.lbfgs, "gn": gn_steps, "bfgs": args.bfgs}
    made = {
        "adam": [
            "trainer.phases=[adam]",
            f"trainer.adam.steps={scaled(adam_steps * args.adam_factor)}",
        ]
    }
    for short, phase in SECOND_PHASES.items():
        every = args.gn_redraw if short == "gn" else args.redraw
        common = [
            f"trainer.phases=[adam,{phase}]",
            f"trainer.adam.steps={scaled(adam_steps)}",
            f"trainer.{phase}.steps={scaled(steps[short])}",
        ]
        made[f"adam+{short}"] = common + [
            "refinement.method=none",  # a yaml's RAD would have no phase to act in
            f"trainer.{phase}.resample_every={every}",
            f"trainer.{phase}.refine_every=0",
        ]
        made[f"adam+{short}+rad"] = common + [
            "refinement.method=rad",
            f"trainer.{phase}.resample_every=0",
            f"trainer.{phase}.refine_every={every}",
        ]
    return made


def curve(run_dir: Path) -> list[tuple[float, float]]:
    """[(seconds, rel_l2)] of the history's validated rows."""
    with open(run_dir / "history.csv", newline="") as file:
        rows = list(csv.DictReader(file))
    points = []
    for row in rows:
        value = float(row["rel_l2"]) if row.get("rel_l2") not in (None, "") else math.nan
        if math.isfinite(value):
            points.append((float(row["time_s"]), value))
    return points


def first_below(points: list[tuple[float, float]], threshold: float) -> str:
    return next((f"{t:.0f}" for t, value in points if value <= threshold), "-")


def run(problem: str, overrides: list[str], every: int, threads: int | None, device: str = "cpu"):
    base = [f"problem={problem}", "trainer.progress=false", f"trainer.log_every={every}"]
    base += [f"device={device}"]
    base += ["trainer.checkpoint_every=0"] + ([f"threads={threads}"] if threads else [])
    with tempfile.TemporaryDirectory() as run_dir:
        metrics = pinn.train(pinn.compose_config(base + overrides), run_dir)
        return metrics, curve(Path(run_dir))


def save_curves(by_method: dict[str, list[tuple[float, float]]], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as file:
        writer = csv.writer(file)
        writer.writerow(["method", "seconds", "rel_l2"])
        for method, points in by_method.items():
            writer.writerows((method, repr(t), repr(value)) for t, value in points)


def load_curves(folder: Path) -> dict[str, dict[str, list[tuple[float, float]]]]:
    """{problem: {method: [(seconds, rel_l2)]}} of every <problem>.csv in `folder`, in
    PROBLEMS' order and then by name."""
    order = {name: i for i, name in enumerate(PROBLEMS)}
    paths = sorted(folder.glob("*.csv"), key=lambda p: (order.get(p.stem, len(order)), p.stem))
    curves: dict[str, dict[str, list[tuple[float, float]]]] = {}
    for path in paths:
        by_method: dict[str, list[tuple[float, float]]] = {}
        with open(path, newline="") as file:
            for row in csv.DictReader(file):
                by_method.setdefault(row["method"], []).append(
                    (float(row["seconds"]), float(row["rel_l2"]))
                )
        curves[path.stem] = by_method
    return curves


def plot(curves: dict[str, dict[str, list[tuple[float, float]]]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, len(curves), figsize=(4 * len(curves), 3.4), squeeze=False)
    for ax, (problem, by_method) in zip(axes[0], curves.items()):
        for method, points in by_method.items():
            if points:
                ax.plot(*zip(*points), label=method)
        ax.set_yscale("log")
        ax.set_xlabel("training time (s)")
        ax.set_title(problem)
        ax.grid(True, which="both", alpha=0.3)
    axes[0][0].set_ylabel("rel_l2")
    axes[0][0].legend()
    figure.tight_layout()
    figure.savefig(path, dpi=120)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", nargs="+", default=list(PROBLEMS))
    parser.add_argument("--adam-factor", type=int, default=2)
    parser.add_argument("--lbfgs", type=int, default=2000)
    parser.add_argument("--gn", type=int, default=None, help="default: the yaml's steps")
    parser.add_argument("--bfgs", type=int, default=2000)
    parser.add_argument("--redraw", type=int, default=100, help="L-BFGS/BFGS: new points every")
    parser.add_argument("--gn-redraw", type=int, default=10, help="Gauss-Newton: new points every")
    parser.add_argument("--methods", nargs="+", default=None, help="default: all of them")
    parser.add_argument("--every", type=int, default=10)
    parser.add_argument("--scale", type=float, default=1.0, help="every step count times this")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--device", default="cpu", help="torch device: cpu, cuda")
    parser.add_argument("--plot", type=Path, default=Path("benchmarks/optimizers.png"))
    parser.add_argument("--curves", type=Path, default=Path("benchmarks/optimizers"))
    args = parser.parse_args(argv)

    print("| problem | method | rel_l2 | training s | s to 1e-4 | s to 1e-5 |")
    print("| --- | --- | ---: | ---: | ---: | ---: |")
    for problem in args.problems:
        trainer = pinn.compose_config([f"problem={problem}"]).trainer
        gn_steps = args.gn if args.gn is not None else trainer.gauss_newton.steps
        by_method: dict[str, list[tuple[float, float]]] = {}
        for method, overrides in methods(args, trainer.adam.steps, gn_steps).items():
            if args.methods is not None and method not in args.methods:
                continue
            metrics, points = run(problem, overrides, args.every, args.threads, args.device)
            by_method[method] = points
            seconds = points[-1][0] if points else math.nan
            below = " | ".join(first_below(points, t) for t in THRESHOLDS)
            print(f"| {problem} | {method} | {metrics['rel_l2']:.2e} | {seconds:.0f} | {below} |")
        save_curves(by_method, args.curves / f"{problem}.csv")
    plot(load_curves(args.curves), args.plot)
    print(f"plot: {args.plot}")


if __name__ == "__main__":
    main()
