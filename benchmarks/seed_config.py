"""Train the configuration a user brings from a plain script, each way in a process of its own.

What it measures: the wall-clock time of whole processes (Python start-up, imports, compiling
where asked, training, the final error), and the final accuracy, for the same PINN trained by

    problem   -Δu = sin(πx) sin(πy) on [0, 1]², u = 0 on the boundary;
              exact u = sin(πx) sin(πy) / (2π²)
    model     MLP 2-20-20-20-20-1, tanh, float32
    points    2540 interior and 640 boundary points (160 per side), uniform at random,
              redrawn every step
    training  Adam, lr 1e-3 constant, 4096 steps, loss mean(residual²) + mean(u_boundary²)

    plain     the loop written out below, the Laplacian from torch.func.vmap(jacrev(jacrev))
              of a single-point closure over the module: the way a user's plain script does it
              (its process imports torch only)
    pinn      pinn.fit(Poisson(hard_boundary=False), ...) with engine="auto" (forward Taylor
              mode for this MLP), the same soft boundary term as the plain loop, with
              trainer.compile=false (eager), and compile=true twice: first with an empty
              compile cache (a fresh TORCHINDUCTOR_CACHE_DIR: "cold"), then with the cache the
              first left ("warm", as every later run of the same configuration finds it)

pinn's MLP rescales [0, 1]² to [-1, 1]² in front of the first layer, as it does by default
(`--no-rescale` leaves that out); the plain network feeds the raw coordinates. Both start from
the same weights: the Linear layers' state dicts are copied (the rescaling has no parameters).
The final models' relative L2 errors are measured on a 101 x 101 grid. The processes run one
after another; each also reports its training time alone (from the first step to the last).

How to run (from the repository root):

    python benchmarks/seed_config.py                         # 4096 steps each (minutes)
    python benchmarks/seed_config.py --threads 1 --seed 1
    python benchmarks/seed_config.py --quick --threads 1     # 50 steps each: a smoke test
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch
from torch import nn

WIDTH, DEPTH = 20, 4
N_INTERIOR, N_PER_SIDE = 2540, 160
GRID = 101


# ---- the models ------------------------------------------------------------------------------


def plain_network() -> nn.Sequential:
    """2 -> [Linear(20) -> tanh] x 4 -> Linear(1), written out as a plain script would."""
    sizes = [2] + [WIDTH] * DEPTH
    layers: list[nn.Module] = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        layers += [nn.Linear(fan_in, fan_out), nn.Tanh()]
    return nn.Sequential(*layers, nn.Linear(WIDTH, 1))


def pinn_network(seed: int, rescale: bool) -> nn.Module:
    """pinn's MLP of the same architecture, seeded; rescaling [0, 1]² to [-1, 1]² if asked."""
    import pinn

    corners = pinn.InputOptions(lower=[0.0, 0.0], upper=[1.0, 1.0]) if rescale else None
    generator = torch.Generator().manual_seed(seed)
    return pinn.MLP(2, 1, WIDTH, DEPTH, "tanh", corners, generator=generator)


def copy_linear_weights(source: nn.Module, target: nn.Module) -> None:
    """Give target's Linear layers the state dicts of source's, in order."""
    sources = [m for m in source.modules() if isinstance(m, nn.Linear)]
    targets = [m for m in target.modules() if isinstance(m, nn.Linear)]
    if len(sources) != len(targets):
        raise ValueError(f"{len(sources)} Linear layers to copy into {len(targets)}")
    for a, b in zip(sources, targets):
        b.load_state_dict(a.state_dict())


# ---- the plain loop ----------------------------------------------------------------------------


def interior_points(generator: torch.Generator) -> torch.Tensor:
    """(2540, 2) points uniform in the unit square."""
    return torch.rand(N_INTERIOR, 2, generator=generator)


def boundary_points(generator: torch.Generator) -> torch.Tensor:
    """(640, 2) points, 160 uniform on each side of the unit square."""
    t = torch.rand(4, N_PER_SIDE, generator=generator)
    zeros, ones = torch.zeros(N_PER_SIDE), torch.ones(N_PER_SIDE)
    sides = [(t[0], zeros), (t[1], ones), (zeros, t[2]), (ones, t[3])]
    return torch.cat([torch.stack(side, dim=1) for side in sides])


def vmap_laplacian(model: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """(N,) Laplacian: the per-point Hessian by vmap(jacrev(jacrev(u))), its diagonal summed."""

    def u(point: torch.Tensor) -> torch.Tensor:
        return model(point).squeeze(-1)  # (2,) -> ()

    hessians = torch.func.vmap(torch.func.jacrev(torch.func.jacrev(u)))(x)
    return hessians.diagonal(dim1=-2, dim2=-1).sum(dim=-1)


def plain_loss(model: nn.Module, generator: torch.Generator, device: str = "cpu") -> torch.Tensor:
    """mean(residual²) + mean(u_boundary²) at freshly drawn points (drawn on the CPU)."""
    x, boundary = interior_points(generator).to(device), boundary_points(generator).to(device)
    source = torch.sin(math.pi * x[:, 0]) * torch.sin(math.pi * x[:, 1])
    residual = vmap_laplacian(model, x) + source  # -Δu = f  <=>  Δu + f = 0
    return residual.square().mean() + model(boundary).square().mean()


def train_plain(model: nn.Module, steps: int, lr: float, seed: int, device: str = "cpu") -> None:
    """Adam at a constant rate, points redrawn every step."""
    generator = torch.Generator().manual_seed(seed)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    for _ in range(steps):
        optimizer.zero_grad(set_to_none=True)
        plain_loss(model, generator, device).backward()
        optimizer.step()


# ---- pinn ------------------------------------------------------------------------------------


def train_pinn(
    model: nn.Module, steps: int, lr: float, seed: int, compile: str, device: str = "cpu"
) -> None:
    """The same training through pinn.fit: uniform points redrawn every step, no L-BFGS."""
    import pinn
    from pinn.problems.poisson import Poisson

    problem = Poisson(hard_boundary=False)  # the plain loop's formulation: a boundary term
    settings = pinn.TrainSettings(
        adam={"steps": steps, "lr": lr, "lr_decay": 1.0, "resample_every": 1},
        lbfgs={"steps": 0},
        progress=False,
        log_every=1000,
        checkpoint_every=0,
        compile=compile,
    )
    generator = torch.Generator().manual_seed(seed)
    points = pinn.PointSampler(
        problem.domain,
        N_INTERIOR,
        4 * N_PER_SIDE,
        "uniform",
        generator,
        dtype=torch.float32,
        device=device,
    )
    pinn.fit(problem, model, settings, points, weights={}, engine="auto")


# ---- one process per run -----------------------------------------------------------------------


def relative_l2(model: nn.Module, device: str = "cpu") -> float:
    """||u - u_exact|| / ||u_exact|| on a 101 x 101 grid over [0, 1]², including the boundary."""
    line = torch.linspace(0, 1, GRID, dtype=torch.float64)
    grid = torch.cartesian_prod(line, line)
    exact = torch.sin(math.pi * grid[:, 0]) * torch.sin(math.pi * grid[:, 1]) / (2 * math.pi**2)
    with torch.no_grad():
        predicted = model(grid.float().to(device)).double().reshape(-1).cpu()
    return ((predicted - exact).norm() / exact.norm()).item()


def run_child(args: argparse.Namespace) -> None:
    """Train one way (args.run: plain, eager or compiled) and print a JSON line of results."""
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    device = args.device
    if args.run == "plain":  # pinn's initial weights, from the file: no pinn import here
        model = plain_network()
        model.load_state_dict(torch.load(args.weights))

        def train(model, steps, lr, seed):
            train_plain(model, steps, lr, seed, device)
    else:
        model = pinn_network(args.seed, rescale=not args.no_rescale)
        compile = "true" if args.run == "compiled" else "false"

        def train(model, steps, lr, seed):
            train_pinn(model, steps, lr, seed, compile, device)

    model.to(device)
    start = time.perf_counter()
    train(model, args.steps, args.lr, args.seed + 1)
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize(device)
    train_s = time.perf_counter() - start
    print(json.dumps({"train_s": train_s, "rel_l2": relative_l2(model, device)}))


def run_process(args: argparse.Namespace, run: str, folder: str) -> dict[str, float]:
    """Whole-process seconds, training seconds and rel_l2 of one run in a fresh interpreter
    (its compile cache and the plain run's initial weights in `folder`)."""
    command = [sys.executable, __file__, "--run", run, "--steps", str(args.steps)]
    command += ["--weights", str(Path(folder) / "plain_weights.pt")]
    command += ["--seed", str(args.seed), "--lr", str(args.lr)]
    command += ["--threads", str(args.threads)] if args.threads is not None else []
    command += ["--no-rescale"] if args.no_rescale else []
    command += ["--device", args.device]
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": str(Path(folder) / "compile_cache")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(root), env.get("PYTHONPATH")]))
    start = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    whole_s = time.perf_counter() - start
    return {"whole_s": whole_s, **json.loads(done.stdout.strip().splitlines()[-1])}


def print_table(rows: list[tuple[str, dict[str, float]]], steps: int) -> None:
    """Markdown table of the runs, with each one's speed-up over the plain process."""
    plain_s = rows[0][1]["whole_s"]
    print("| run | whole process s | training s | steps/s (training) | final rel_l2 | vs plain |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for name, r in rows:
        print(
            f"| {name} | {r['whole_s']:.2f} | {r['train_s']:.2f} | {steps / r['train_s']:.1f} | "
            f"{r['rel_l2']:.3e} | {plain_s / r['whole_s']:.2f}x |"
        )


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Command-line options; --quick runs 50 steps each."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=4096, help="Adam steps per run")
    parser.add_argument("--quick", action="store_true", help="50 steps each: a smoke test")
    parser.add_argument("--threads", type=int, default=None, help="torch.set_num_threads")
    parser.add_argument("--seed", type=int, default=0, help="weights; points use seed + 1")
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--no-rescale", action="store_true", help="pinn's MLP without Rescale")
    parser.add_argument("--device", default="cpu", help="torch device: cpu, cuda")
    parser.add_argument("--run", choices=["plain", "eager", "compiled"], help=argparse.SUPPRESS)
    parser.add_argument("--weights", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.quick:
        args.steps = 50
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.run is not None:  # a child process: one run
        run_child(args)
        return
    scaling = "no rescaling" if args.no_rescale else "inputs rescaled to [-1, 1]²"
    print("# Poisson on [0, 1]², MLP 2-20-20-20-20-1 tanh, float32, Adam 1e-3, resampled\n")
    print(
        f"torch {torch.__version__}, threads {args.threads or torch.get_num_threads()}, "
        f"{args.steps} steps, seed {args.seed}; pinn: engine=auto, {scaling}\n"
    )
    with tempfile.TemporaryDirectory() as folder:
        plain = plain_network()
        copy_linear_weights(pinn_network(args.seed, rescale=not args.no_rescale), plain)
        torch.save(plain.state_dict(), Path(folder) / "plain_weights.pt")
        rows = [
            ("plain loop, vmap(jacrev(jacrev))", run_process(args, "plain", folder)),
            ("pinn, trainer.compile=false", run_process(args, "eager", folder)),
            ("pinn, compile=true, cold cache", run_process(args, "compiled", folder)),
            ("pinn, compile=true, warm cache", run_process(args, "compiled", folder)),
        ]
    print_table(rows, args.steps)


if __name__ == "__main__":
    main()
