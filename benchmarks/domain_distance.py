"""One hard-constrained Poisson step on domains whose distance has several pieces, per engine.

What it measures: u = φ(x) N(x), φ the domain's distance (`Domain.distance`: zero on the whole
boundary, an R-function join of its pieces, with a detached normalisation), N a tanh MLP;
ONE TRAINING STEP: the Laplacian of u at N interior points through the engine's planned field
(as training computes it from the second step on), the loss mean((Δu + 1)²), backward to the
weights, zeroing the grads. It reports the median step time (ms) for

    taylor      one forward Taylor-mode pass (the detached parts of φ are constants to it)
    autograd    nested reverse mode, one backward per dimension

on each domain, the ratio autograd / taylor, and the largest difference of the two Laplacians
relative to their largest value. Before the pass treated detached subgraphs as constants, every
one of these domains fell back to autograd (`no rule for aten.amax.default`).

    cube minus ball     Box([0, 0, 0], [1, 1, 1]) - Ball([0.5, 0.5, 0.5], 0.25): 7 pieces
    L-shape             Polygon of 6 edges
    box, d = 3          Box([0, 0, 0], [1, 1, 1]): 6 faces

How to run (from the repository root):

    python benchmarks/domain_distance.py
    python benchmarks/domain_distance.py --threads 1 --points 4000 --reps 20
    python benchmarks/domain_distance.py --domains cube-minus-ball --device cuda
    python benchmarks/domain_distance.py --quick          # smoke test
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's pinn

from pinn.derivatives.engines import Engine  # noqa: E402
from pinn.geometry import Ball, Box, Domain, Polygon  # noqa: E402
from pinn.nn import MLP  # noqa: E402
from pinn.nn.constraints import HardConstraint  # noqa: E402

DOMAINS = {
    "cube-minus-ball": lambda: Box([0, 0, 0], [1, 1, 1]) - Ball([0.5, 0.5, 0.5], 0.25),
    "l-shape": lambda: Polygon([[0, 0], [2, 0], [2, 1], [1, 1], [1, 2], [0, 2]]),
    "box-3d": lambda: Box([0, 0, 0], [1, 1, 1]),
}
ENGINES = ("taylor", "autograd")
DTYPES = {"float32": torch.float32, "float64": torch.float64}


def hard_model(domain: Domain, args: argparse.Namespace, device, dtype) -> HardConstraint:
    """u = φ(x) N(x), (N, d) -> (N, 1)."""
    generator = torch.Generator().manual_seed(args.seed)
    network = MLP(domain.dim, 1, args.width, args.depth, "tanh", generator=generator)

    def transform(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return torch.zeros_like(x[:, 0]), domain.distance(x)

    return HardConstraint(network.to(device=device, dtype=dtype), transform)


def step(engine: Engine, model: HardConstraint, x: torch.Tensor, names) -> torch.Tensor:
    """One training step; the (N,) Laplacian it used, detached."""
    laplacian = engine.field(x, names, ("u",), "interior").laplacian()
    loss = (laplacian + 1).square().mean()
    loss.backward()
    model.zero_grad(set_to_none=True)
    return laplacian.detach()


def measure(name: str, engine_name: str, args: argparse.Namespace) -> tuple[float, torch.Tensor]:
    """(median ms of a step, the last step's Laplacian) of one engine on one domain."""
    device, dtype = torch.device(args.device), DTYPES[args.dtype]
    domain = DOMAINS[name]()
    model = hard_model(domain, args, device, dtype)
    generator = torch.Generator().manual_seed(args.seed + 1)
    x = domain.sample_interior(args.points, generator, "uniform", dtype=dtype, device=device)
    engine = Engine(engine_name, model, x[:2], announce=False)  # taylor: refuses a fallback
    names = domain.names
    for _ in range(1 + args.warmup):  # the first step records what the residual asks
        step(engine, model, x, names)
    times = []
    for _ in range(args.reps):
        synchronize(device)
        started = time.perf_counter()
        laplacian = step(engine, model, x, names)
        synchronize(device)
        times.append(time.perf_counter() - started)
    return 1e3 * statistics.median(times), laplacian


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--domains", default=",".join(DOMAINS), help=f"comma list of {DOMAINS}")
    parser.add_argument("--points", type=int, default=2000)
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--depth", type=int, default=3, help="hidden layers")
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--dtype", choices=list(DTYPES), default="float32")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="200 points, 2 steps: a smoke test")
    args = parser.parse_args(argv)
    unknown = set(args.domains.split(",")) - set(DOMAINS)
    if unknown:
        parser.error(f"unknown domain(s) {sorted(unknown)}; choose from {', '.join(DOMAINS)}")
    if args.quick:
        args.points, args.warmup, args.reps = 200, 1, 2
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    print(
        f"# torch {torch.__version__}, threads {torch.get_num_threads()}, {args.dtype}, "
        f"{args.device}, N = {args.points}, MLP {args.width}x{args.depth} tanh, "
        f"median of {args.reps} steps\n"
    )
    print("| domain | taylor ms | autograd ms | autograd / taylor | max rel diff |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for name in args.domains.split(","):
        (fast, fast_lap), (slow, slow_lap) = (measure(name, e, args) for e in ENGINES)
        difference = (fast_lap - slow_lap).abs().max() / slow_lap.abs().max()
        print(f"| {name} | {fast:.1f} | {slow:.1f} | {slow / fast:.2f}x | {difference:.1e} |")


if __name__ == "__main__":
    main()
