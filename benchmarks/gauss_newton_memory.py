"""Time and memory of one Gauss-Newton iteration as parameters P and rows R grow, for each solver
(and of one KFAC iteration beside them).

The Poisson problem (hard boundary: one row per point), an MLP of 3 hidden tanh layers of each
`--widths` (P = 2 w^2 + 6 w + 1: widths 21, 69, 222 give P of about 10^3, 10^4, 10^5), each
`--points` count R of interior points, float64, the Taylor engine. Each cell is one
Levenberg-Marquardt iteration (`pinn.training.optim.levenberg_marquardt`, the phase's damping
1e-8 and 12-length line search) from the network's first parameters, in a fresh process (so the
peak memory is that iteration's), for each solver:

    parameters    Cholesky of the P x P normal equations (the (R, P) Jacobian formed)
    rows          Cholesky of the R x R system J J^T + mu I (the Jacobian formed)
    cg-jacobi     matrix-free conjugate gradients, Jacobi preconditioner (Hutchinson diagonal)
    cg-nystrom    the same with the Nyström preconditioner of `--sketch-size` columns
    kfac          one iteration of the `kfac` phase (`pinn.training.optim.kfac`: Kronecker
                  factors per layer from the Taylor pass, the KFAC* step; its defaults)

the cg ones taking at most `--cg-iterations` products. Before running, a cell's memory is
estimated, and one above `--memory-gib` (24) is printed "does not fit" instead of run:

    the dense Jacobian    6 R P 8 bytes (its peak is about six times J: the per-point
                          quantities and directions pushed through the assembly, measured)
    parameters            + 3 P^2 8 (J^T J, its damped copy, the Cholesky factor)
    rows                  + 3 R^2 8 (J J^T, its damped copy, the factor)
    cg                    the rows' graph and its double backward, about 20 float64 per point
                          and hidden unit (measured: 237 MB at 2000 points, 3 x 256 units)
    nystrom               + 5 P s 8 (the draw, its QR, A Omega, the shifted block, U)
    kfac                  the rows' graph as cg's (the factors are width^2 numbers a layer)

Prints per cell P, R, the solver, the seconds of the iteration, the peak memory (the process's
resident high-water mark after it; on cuda the device's, torch.cuda.max_memory_allocated), the
peak it added over the memory held before it, the J v products it took (cg: the conjugate
gradients', the sketch's and one per step length tried) and the estimate. A cell that fails
(killed for memory, past `--timeout`) says so and the sweep goes on.

How to run (from the repository root, nothing else running; hours on a CPU):

    python benchmarks/gauss_newton_memory.py                   # P, R in 10^3, 10^4, 10^5
    python benchmarks/gauss_newton_memory.py --quick --threads 1   # P ~ 10^3, R = 10^3: smoke
    python benchmarks/gauss_newton_memory.py --widths 32 64 --points 2000 --solvers rows cg
    python benchmarks/gauss_newton_memory.py --estimate-only   # which cells fit, running none
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import torch

from pinn.derivatives.engines import Engine
from pinn.geometry import PointSampler
from pinn.nn import MLP, HardConstraint
from pinn.outputs.memory import MB, peak_memory
from pinn.problems.poisson import Poisson
from pinn.training.optim.levenberg_marquardt import LevenbergMarquardt
from pinn.training.phases import GaussNewtonSettings, KFACSettings
from pinn.training.phases.kfac import make_kfac
from pinn.training.rows.layer_curvature import factored_layers
from pinn.training.rows.residual_rows import ResidualRows

DEPTH = 3
SOLVERS = {  # the table's name: the settings it runs with
    "parameters": {"solver": "parameters"},
    "rows": {"solver": "rows"},
    "cg-jacobi": {"solver": "cg", "preconditioner": "jacobi"},
    "cg-nystrom": {"solver": "cg", "preconditioner": "nystrom"},
    "kfac": {},  # the kfac phase's own settings (KFACSettings' defaults)
}
JACOBIAN_PEAK = 6  # the dense Jacobian's peak over J itself (docs/benchmarks/optimizers.md)
GRAPH_BYTES = 20 * 8  # the matrix-free iteration's, per point and hidden unit


def parameter_count(width: int) -> int:
    """P of the MLP 2 -> width (x DEPTH tanh layers) -> 1."""
    return 3 * width + (DEPTH - 1) * (width * width + width) + width + 1


def estimate_bytes(solver: str, width: int, points: int, sketch_size: int) -> int:
    """The memory a cell is expected to need (see the module's docstring)."""
    P, R = parameter_count(width), points
    if solver == "parameters":
        return JACOBIAN_PEAK * R * P * 8 + 3 * P * P * 8
    if solver == "rows":
        return JACOBIAN_PEAK * R * P * 8 + 3 * R * R * 8
    graph = GRAPH_BYTES * R * width * DEPTH
    return graph + (5 * P * min(sketch_size, P) * 8 if solver == "cg-nystrom" else 0)


class CountedJacobian:
    """A Jacobian (dense or matrix-free) that counts its J v products."""

    def __init__(self, inner, counter: list[int]):
        self.inner, self.counter = inner, counter

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def mv(self, v: torch.Tensor) -> torch.Tensor:
        self.counter[0] += 1
        return self.inner.mv(v)


def resident_mb() -> float:
    """The process's resident memory now (Linux /proc), MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def one_iteration(width: int, points: int, solver: str, args: argparse.Namespace) -> dict:
    """Time, peak memory and products of one iteration (run in a process of its own)."""
    if args.threads:
        torch.set_num_threads(args.threads)
    device = args.device
    generator = torch.Generator().manual_seed(0)
    problem = Poisson()
    network = MLP(2, 1, width=width, depth=DEPTH, generator=generator).double()
    model = HardConstraint(network, problem.hard_constraint).to(device)
    sampler = PointSampler(
        problem.domain, points, 4, "sobol", generator, dtype=torch.float64, device=device
    )
    batch = sampler.draw()
    engine = Engine("taylor", model, probe=batch.interior[:2], announce=False)
    rows_of = ResidualRows(problem, model, engine)
    products = [0]

    def evaluate(jacobian):
        rows = rows_of(batch, jacobian)
        counted = None if rows.jacobian is None else CountedJacobian(rows.jacobian, products)
        return rows.values, counted, rows.terms

    if solver == "kfac":
        optimizer, evaluate = kfac_iteration(model, rows_of, batch)
    else:
        settings = GaussNewtonSettings(
            **SOLVERS[solver], cg_iterations=args.cg_iterations, sketch_size=args.sketch_size
        )  # damping 1e-8 and a 12-length search: the phase's defaults
        optimizer = LevenbergMarquardt(list(model.parameters()), settings)
    rows_of(batch, False)  # warm: the Taylor trace and the first allocations
    on_cuda = torch.device(device).type == "cuda"
    if on_cuda:
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
    before = torch.cuda.memory_allocated(device) / MB if on_cuda else resident_mb()
    start = time.perf_counter()
    optimizer.step(evaluate)
    if on_cuda:
        torch.cuda.synchronize(device)
    seconds = time.perf_counter() - start
    peaks = peak_memory(device)
    peak = peaks["peak_device_memory_mb"] if on_cuda else peaks["peak_memory_mb"]
    return {
        "parameters": parameter_count(width),
        "seconds": seconds,
        "peak_mb": peak,
        "added_mb": peak - before,
        "products": products[0] if solver.startswith("cg") else None,
    }


def kfac_iteration(model, rows_of: ResidualRows, batch):
    """(the KFAC optimiser, its evaluate): as the `kfac` phase builds them, its defaults."""
    layers = factored_layers(model, batch.interior[:2])
    optimizer, curvature_of = make_kfac(rows_of, layers, KFACSettings())

    def evaluate(generator, factors=True):  # the phase's: an iterate's rows, else a trial's
        rows = curvature_of.at(batch, generator, factors)
        return rows, rows.terms

    return optimizer, evaluate


def run_cell(width: int, points: int, solver: str, args: argparse.Namespace) -> str:
    """The table's row for one cell: estimated, then run in a fresh process if it fits."""
    P, estimate = parameter_count(width), estimate_bytes(solver, width, points, args.sketch_size)
    head = f"| {P} | {points} | {solver} |"
    if estimate > args.memory_gib * 2**30:
        return f"{head} does not fit | | | | {estimate / MB:.0f} |"
    if args.estimate_only:
        return f"{head} not run | | | | {estimate / MB:.0f} |"
    command = [sys.executable, __file__, "--one", str(width), str(points), solver]
    for option in ("cg_iterations", "sketch_size", "device", "threads"):
        command += [f"--{option.replace('_', '-')}", str(getattr(args, option))]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=args.timeout)
    except subprocess.TimeoutExpired:
        return f"{head} timed out after {args.timeout} s | | | | |"
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["killed (out of memory?)"])[-1]
        return f"{head} failed: {last[:60]} | | | | |"
    r = json.loads(done.stdout.strip().splitlines()[-1])
    products = "" if r["products"] is None else r["products"]
    return (
        f"{head} {r['seconds']:.2f} | {r['peak_mb']:.0f} | {r['added_mb']:.0f} | {products} | "
        f"{estimate / MB:.0f} |"
    )


def parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--widths", type=int, nargs="+", default=[21, 69, 222])
    parser.add_argument("--points", type=int, nargs="+", default=[1000, 10_000, 100_000])
    parser.add_argument(
        "--solvers", nargs="+", default=list(SOLVERS), choices=[*SOLVERS, "cg"], help="cg: both"
    )
    parser.add_argument("--quick", action="store_true", help="width 21, 1000 points: a smoke grid")
    parser.add_argument("--cg-iterations", type=int, default=100)
    parser.add_argument("--sketch-size", type=int, default=50)
    parser.add_argument("--memory-gib", type=float, default=24.0, help="larger cells: not run")
    parser.add_argument("--estimate-only", action="store_true", help="the grid's estimates")
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds per cell")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: its default)")
    parser.add_argument("--device", default="cpu", help="torch device: cpu, cuda")
    parser.add_argument("--one", nargs=3, metavar=("WIDTH", "POINTS", "SOLVER"), help="internal")
    args = parser.parse_args()
    chosen = set(args.solvers) | ({"cg-jacobi", "cg-nystrom"} if "cg" in args.solvers else set())
    args.solvers = [name for name in SOLVERS if name in chosen]
    if args.quick:
        args.widths, args.points = [21], [1000]
    return args


def main() -> None:
    args = parse()
    if args.one:
        width, points, solver = int(args.one[0]), int(args.one[1]), args.one[2]
        print(json.dumps(one_iteration(width, points, solver, args)))
        return
    print(f"Poisson, {DEPTH} hidden tanh layers, float64, {args.device}; one Levenberg-Marquardt")
    print("(or KFAC) iteration per cell, ", end="")
    print(f"cg at most {args.cg_iterations} products, Nyström sketch ", end="")
    print(f"{args.sketch_size}; cells above {args.memory_gib:g} GiB estimated are not run\n")
    print(
        "| P | R | solver | s / iteration | peak (MB) | peak added (MB) | J v products | "
        "estimate (MB) |"
    )
    print("| ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: |")
    for width in args.widths:
        for points in args.points:
            for solver in args.solvers:
                print(run_cell(width, points, solver, args), flush=True)


if __name__ == "__main__":
    main()
