"""Data-parallel scaling: time per Adam step with 1 and 2 processes (torchrun), weak and strong.

What it measures: the default Poisson problem's model (MLP 32x3 tanh, hard constraint, float64,
Taylor engine), `pinn.fit` with points redrawn every step, Adam only; the time per step of the
steps after the first few (start-up, imports and process-group set-up excluded), on rank 0.
Each configuration is a torchrun launch of its own, one after another, each process with
`--threads` threads (1 by default: two processes on a 2-core machine).

    weak     points per process fixed (`--points` each): ideal is the same time per step
             with 2 processes as with 1; efficiency = t(1) / t(N)
    strong   total points fixed (`--points` in all, split evenly): ideal is half the time per
             step; efficiency = t(1) / (N t(N))

How to run (from the repository root):

    python benchmarks/scaling.py                      # 4000 points, 300 steps, up to 2 processes
    python benchmarks/scaling.py --processes 1 2 4 --device cuda --threads 4   # on GPUs
    python benchmarks/scaling.py --quick              # 30 steps: a smoke test
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WARM_UP = 5


def worker(points: int, steps: int, device: str, threads: int, out: Path) -> None:
    """One process of a launch: train and, on rank 0, write the seconds per step to `out`."""
    import torch

    sys.path.insert(0, str(ROOT))
    from pinn import PointSampler, TrainSettings, compose_config, fit
    from pinn.problems.poisson import Poisson
    from pinn.run.build import build_model
    from pinn.training.distributed import process_device, rank_seed, start, stop

    torch.set_num_threads(threads)
    where = process_device(torch.device(device))
    world = start(where)
    problem = Poisson()
    settings = compose_config(["problem=poisson", "model.width=32"])  # the model measured
    model = build_model(problem, settings.model, seed=0)
    model = model.to(dtype=torch.float64, device=where)
    generator = torch.Generator().manual_seed(rank_seed(1, world.rank))
    sampler = PointSampler(problem.domain, points, 64, "sobol", generator, torch.float64, where)
    times: list[float] = []

    def clock() -> None:
        if where.type == "cuda":
            torch.cuda.synchronize()
        times.append(time.perf_counter())

    settings = TrainSettings(
        adam={"steps": steps, "resample_every": 1},
        lbfgs={"steps": 0},
        log_every=steps,
        progress=False,
    )
    # Time the Adam phase from step WARM_UP on: two fits, the first WARM_UP steps long.
    fit(
        problem,
        model,
        TrainSettings(adam={"steps": WARM_UP}, lbfgs={"steps": 0}, progress=False),
        sampler,
    )
    clock()
    fit(problem, model, settings, sampler)
    clock()
    stop()
    if world.is_main:
        out.write_text(json.dumps({"seconds_per_step": (times[1] - times[0]) / steps}))


def launch(processes: int, points: int, steps: int, device: str, threads: int) -> float:
    """Seconds per step on rank 0 of a torchrun launch of `processes` processes."""
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "result.json"
        command = [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--nproc_per_node",
            str(processes),
            "--master-port",
            str(free_port()),
            __file__,
            "--worker",
            f"--points={points}",
            f"--steps={steps}",
            f"--device={device}",
            f"--threads={threads}",
            f"--out={out}",
        ]
        env = dict(os.environ, OMP_NUM_THREADS=str(threads))
        done = subprocess.run(command, env=env, capture_output=True, text=True)
        if done.returncode:
            raise SystemExit(f"launch of {processes} failed:\n{done.stderr[-3000:]}")
        return json.loads(out.read_text())["seconds_per_step"]


def free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--points", type=int, default=4000)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--processes", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(args.points, args.steps, args.device, args.threads, args.out)
    steps = 30 if args.quick else args.steps

    print(
        f"Poisson, MLP 32x3, float64, {steps} Adam steps, points redrawn every step, "
        f"{args.device}, {args.threads} thread(s) per process"
    )
    print("| scaling | processes | points per process | ms per step | efficiency |")
    print("| --- | ---: | ---: | ---: | ---: |")
    options = (steps, args.device, args.threads)
    one = launch(1, args.points, *options)
    print(f"| either | 1 | {args.points} | {1e3 * one:.2f} | 1 |", flush=True)
    for processes in (n for n in args.processes if n > 1):
        weak = launch(processes, args.points, *options)
        row = f"| weak | {processes} | {args.points} | {1e3 * weak:.2f} | {one / weak:.2f} |"
        print(row, flush=True)
        share = args.points // processes
        strong = launch(processes, share, *options)
        efficiency = one / (processes * strong)
        print(f"| strong | {processes} | {share} | {1e3 * strong:.2f} | {efficiency:.2f} |")


if __name__ == "__main__":
    main()
