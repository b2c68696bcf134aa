"""What a hard constraint costs when the points are redrawn every step, against soft terms.

The default Poisson problem (-Δu = sin πx sin πy on [0, 1]², u = 0 on the boundary) trained
twice in this process, one after the other, with everything else the same:

    hard   u = 16 x(1-x) y(1-y) N(x, y): the boundary condition holds exactly, no boundary term
    soft   u = N(x, y) and a Dirichlet term (weight 100) on the boundary points

MLP 20x4 tanh, float32, Adam only, `trainer.adam.resample_every=1` (new interior and boundary
points every step). Times are whole `pinn.train` calls (set-up, tracing and validation
included); the ratio hard / soft is what the Taylor pass's handling of the transform costs.

How to run (from the repository root):

    python benchmarks/hard_constraint.py                 # 2000 steps each
    python benchmarks/hard_constraint.py --steps 50      # a smoke test
"""

from __future__ import annotations

import argparse
import tempfile
import time

import torch

import pinn

COMMON = [
    "problem=poisson",
    "problem.n_interior=4000",  # as measured (poisson.yaml now draws 1000, for Gauss-Newton)
    "model.width=20",
    "model.depth=4",
    "dtype=float32",
    "trainer.lbfgs.steps=0",
    "trainer.gauss_newton.steps=0",
    "trainer.adam.resample_every=1",
    "trainer.progress=false",
    "trainer.checkpoint_every=0",
]
VARIANTS = {
    "hard": [],
    "soft": ["problem.params.hard_boundary=false", "+problem.weights.dirichlet=100"],
}


def timed_run(overrides: list[str]) -> tuple[float, float]:
    """(seconds, rel_l2) of one whole training run."""
    cfg = pinn.compose_config(overrides)
    with tempfile.TemporaryDirectory() as run_dir:
        started = time.perf_counter()
        metrics = pinn.train(cfg, run_dir)
        return time.perf_counter() - started, metrics["rel_l2"]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--device", default="cpu", help="torch device: cpu, cuda")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    extra = [f"trainer.adam.steps={args.steps}", f"threads={torch.get_num_threads()}"]
    extra.append(f"device={args.device}")
    threads = torch.get_num_threads()
    print(f"# torch {torch.__version__}, {args.device}, threads {threads}, {args.steps} steps\n")
    print("| boundary | s | rel_l2 | time / soft |")
    print("| --- | ---: | ---: | ---: |")
    results = {name: timed_run(COMMON + extra + variant) for name, variant in VARIANTS.items()}
    for name, (seconds, rel_l2) in results.items():
        ratio = seconds / results["soft"][0]
        print(f"| {name} | {seconds:.1f} | {rel_l2:.2e} | {ratio:.2f}x |")


if __name__ == "__main__":
    main()
