"""Gauss-Newton from one trained network with several first dampings: loss per iteration, step
lengths the line search took, and the quantities of interest at the end.

    python benchmarks/gauss_newton_damping.py <finished run dir> [--dampings 1e-8 1e-6]
        [--iterations 12] [--points 4000] [--seed 0] [--adapt]

Each damping starts from the run's network and the same Sobol points (`--points` interior and
`--boundary` boundary points, the run's count by default, drawn with `--seed`), runs
`--iterations` Levenberg-Marquardt iterations as the Gauss-Newton phase does (12-length line
search, the run's loss weights; `--unweighted`: all 1), and prints one row per damping: the loss
after 1, 4 and all iterations, the ratio of its final loss to the first damping's, the loss at
as many fresh points (the next Sobol draw: far above the final loss, the network fits its
points), the step lengths taken, and the problem's quantities. A damping too small for the
problem shows as lengths of 1/16 and below at every iteration (README, "Gauss-Newton").
`--adapt` runs each damping twice, held (as by default) and moved by the lengths the search
takes (`trainer.gauss_newton.adapt_damping=true`).
"""

from __future__ import annotations

import argparse
import copy

import torch

import pinn
from pinn.derivatives.engines import Engine
from pinn.geometry.sampler import PointSampler
from pinn.problem.quantities import evaluate_quantities
from pinn.training.optim.levenberg_marquardt import LevenbergMarquardt
from pinn.training.phases import GaussNewtonSettings
from pinn.training.rows.residual_rows import ResidualRows


def descend(
    run, batch, fresh, damping: float, iterations: int, adapt: bool, weights: dict
) -> tuple[list, list, float, dict]:
    """(losses, lengths, the loss at the `fresh` points, quantities) after `iterations`
    iterations from the run's network on `batch`, the damping moved by the lengths if `adapt`."""
    model = copy.deepcopy(run.model)
    engine = Engine("auto", model, batch.interior[:2], announce=False)
    rows_of = ResidualRows(run.problem, model, engine, weights)
    settings = GaussNewtonSettings(
        damping=damping, solver="parameters", adapt_damping=adapt, stall_window=0
    )
    optimizer = LevenbergMarquardt(list(model.parameters()), settings)

    def evaluate(jacobian):
        rows = rows_of(batch, jacobian)
        return rows.values, rows.jacobian, rows.terms

    losses, lengths = [], []
    for _ in range(iterations):
        optimizer.iterate(evaluate, 1, lambda loss, info: losses.append(float(loss)))
        lengths.append(optimizer.last_length)
    found = evaluate_quantities(run.problem, model) if run.problem.has_quantities else {}
    quantities = {name: float(value) for name, value in found.items()}
    fresh_loss = float(rows_of(fresh, False).values.square().sum())
    return losses, lengths, fresh_loss, quantities


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run_dir")
    parser.add_argument("--dampings", type=float, nargs="+", default=[1e-8, 1e-6])
    parser.add_argument("--iterations", type=int, default=12)
    parser.add_argument("--points", type=int, default=4000)
    parser.add_argument("--boundary", type=int, default=None, help="default: the run's")
    parser.add_argument("--unweighted", action="store_true", help="every loss weight 1")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--adapt", action="store_true", help="also with adapt_damping")
    parser.add_argument("--device", default="cpu", help="torch device: cpu, cuda")
    args = parser.parse_args()
    run = pinn.load_run(args.run_dir, device=args.device)
    generator = torch.Generator().manual_seed(args.seed)
    dtype = next(run.model.parameters()).dtype
    boundary = run.config.problem.n_boundary if args.boundary is None else args.boundary
    weights = {} if args.unweighted else dict(run.config.problem.get("weights") or {})
    sampler = PointSampler(
        run.problem.domain,
        args.points,
        boundary,
        "sobol",
        generator,
        dtype=dtype,
        device=args.device,
    )
    batch, fresh = sampler.draw(), sampler.draw()  # the second: points never trained on
    print(
        f"{args.run_dir}: {args.points} + {boundary} Sobol points, weights {weights}, "
        f"{args.iterations} iterations"
    )
    print(
        "| damping | after 1 | after 4 | final | final / first's | fresh | lengths | quantities |"
    )
    print("| ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |")
    baseline = None
    ways = (False, True) if args.adapt else (False,)
    for damping, adapt in [(damping, adapt) for damping in args.dampings for adapt in ways]:
        losses, lengths, fresh_loss, quantities = descend(
            run, batch, fresh, damping, args.iterations, adapt, weights
        )
        final = losses[-1] if losses else float("nan")
        baseline = final if baseline is None else baseline
        shown = ", ".join(f"1/{round(1 / length)}" if length else "0" for length in lengths)
        values = ", ".join(f"{name} {value:.4g}" for name, value in quantities.items())
        at = [losses[k] if len(losses) > k else float("nan") for k in (0, 3)]
        print(
            f"| {damping:g}{' adapted' if adapt else ''} | {at[0]:.3e} | {at[1]:.3e} "
            f"| {final:.3e} | {final / baseline:.3f} "
            f"| {fresh_loss:.3e} | {shown} | {values} |"
        )


if __name__ == "__main__":
    main()
