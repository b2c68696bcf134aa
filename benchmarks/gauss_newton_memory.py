"""Memory and time of one Gauss-Newton iteration as the network grows: dense against matrix-free.

The Poisson problem (hard boundary), an MLP of 3 hidden tanh layers of each `--widths`,
`--points` interior points, float64, the Taylor engine. For each width, one Levenberg-Marquardt
iteration (`pinn.training.optim.levenberg_marquardt`, the phase's damping and line search) from the
network's first parameters, in a fresh process each (so the peak memory is that iteration's):

    dense   solver "parameters" (P x P Cholesky) or, with fewer rows than parameters, "rows"
            (R x R): the (R, P) Jacobian is formed
    cg      matrix-free conjugate gradients, `--cg-iterations` Jacobian products at most

Prints, per width and solver, the parameters P, the seconds of the iteration, the peak resident
memory it added (the process's high-water mark after it, less the resident size before it) and
the dense Jacobian's own size R P 8 bytes, for comparison.

How to run (from the repository root, nothing else running):

    python benchmarks/gauss_newton_memory.py                      # widths 32, 64, 128, 256
    python benchmarks/gauss_newton_memory.py --widths 16 32 --points 500   # a smoke test
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

import torch

from pinn.derivatives.engines import Engine
from pinn.geometry import PointSampler
from pinn.nn import MLP, HardConstraint
from pinn.problems.poisson import Poisson
from pinn.training.optim.levenberg_marquardt import LevenbergMarquardt
from pinn.training.phases import GaussNewtonSettings
from pinn.training.rows.residual_rows import ResidualRows


def resident_mb() -> float:
    """The process's resident memory now (Linux /proc), MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def one_iteration(
    width: int, solver: str, points: int, cg_iterations: int, device: str = "cpu"
) -> dict:
    """Time and added peak memory of one iteration (run in a process of its own); on cuda the
    peak is the device's (torch.cuda.max_memory_allocated), elsewhere the process's."""
    torch.set_num_threads(2)
    generator = torch.Generator().manual_seed(0)
    problem = Poisson()
    network = MLP(2, 1, width=width, depth=3, generator=generator).double()
    model = HardConstraint(network, problem.hard_constraint).to(device)
    sampler = PointSampler(
        problem.domain, points, 4, "sobol", generator, dtype=torch.float64, device=device
    )
    batch = sampler.draw()
    engine = Engine("taylor", model, probe=batch.interior[:2], announce=False)
    rows_of = ResidualRows(problem, model, engine)

    def evaluate(jacobian):
        rows = rows_of(batch, jacobian)
        return rows.values, rows.jacobian, rows.terms

    params = list(model.parameters())
    settings = GaussNewtonSettings(
        solver="cg" if solver == "cg" else "auto", dense_limit=10**9, cg_iterations=cg_iterations
    )  # damping 1e-8 and a 12-length search: the phase's defaults
    optimizer = LevenbergMarquardt(params, settings)
    evaluate(False)  # warm: the Taylor trace and the first allocations
    on_cuda = torch.device(device).type == "cuda"
    if on_cuda:
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
    before = torch.cuda.memory_allocated(device) / 2**20 if on_cuda else resident_mb()
    start = time.perf_counter()
    optimizer.step(evaluate)
    if on_cuda:
        torch.cuda.synchronize(device)
    seconds = time.perf_counter() - start
    if on_cuda:
        peak = torch.cuda.max_memory_allocated(device) / 2**20
    else:
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KB on Linux
    count = sum(p.numel() for p in params)
    return {
        "width": width,
        "solver": optimizer.last_solver,
        "parameters": count,
        "seconds": seconds,
        "added_mb": peak - before,
        "jacobian_mb": points * count * 8 / 2**20,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--widths", type=int, nargs="+", default=[32, 64, 128, 256])
    parser.add_argument("--points", type=int, default=2000)
    parser.add_argument("--cg-iterations", type=int, default=100)
    parser.add_argument("--device", default="cpu", help="torch device: cpu, cuda")
    parser.add_argument("--one", nargs=2, metavar=("WIDTH", "SOLVER"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        width, solver = int(args.one[0]), args.one[1]
        result = one_iteration(width, solver, args.points, args.cg_iterations, args.device)
        print(json.dumps(result))
        return
    print(f"Poisson, 3 hidden tanh layers, {args.points} points, float64, {args.device}; one")
    print(f"Levenberg-Marquardt iteration each, cg at most {args.cg_iterations} products\n")
    print("| width | P | solver | s / iteration | peak added (MB) | dense J (MB) |")
    print("| ---: | ---: | --- | ---: | ---: | ---: |")
    for width in args.widths:
        for solver in ("dense", "cg"):
            command = [sys.executable, __file__, "--one", str(width), solver]
            command += ["--points", str(args.points), "--cg-iterations", str(args.cg_iterations)]
            command += ["--device", args.device]
            done = subprocess.run(command, capture_output=True, text=True)
            if done.returncode != 0:
                last = (done.stderr.strip().splitlines() or ["killed"])[-1]
                print(f"| {width} | | {solver} | failed: {last[:60]} | | |")
                continue
            r = json.loads(done.stdout.strip().splitlines()[-1])
            print(
                f"| {width} | {r['parameters']} | {r['solver']} | {r['seconds']:.2f} | "
                f"{r['added_mb']:.0f} | {r['jacobian_mb']:.0f} |"
            )


if __name__ == "__main__":
    main()
