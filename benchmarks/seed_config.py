"""Train the configuration a user brings from a plain script, both ways, and time the two runs.

What it measures: the wall-clock time of a whole training run (point sampling included) and
the final accuracy, for the same PINN trained twice, one after the other, in this process:

    problem   -Δu = sin(πx) sin(πy) on [0, 1]², u = 0 on the boundary;
              exact u = sin(πx) sin(πy) / (2π²)
    model     MLP 2-20-20-20-20-1, tanh, float32
    points    2540 interior and 640 boundary points (160 per side), uniform at random,
              redrawn every step
    training  Adam, lr 1e-3 constant, 4096 steps, loss mean(residual²) + mean(u_boundary²)

    plain     the loop written out below, the Laplacian from torch.func.vmap(jacrev(jacrev))
              of a single-point closure over the module: the way a user's plain script does it
    pinn      pinn.fit(Poisson(hard_boundary=False), ...) with engine="auto" (forward Taylor
              mode for this MLP): the same soft boundary term as the plain loop

pinn's MLP rescales [0, 1]² to [-1, 1]² in front of the first layer, as it does by default
(`--no-rescale` leaves that out); the plain network feeds the raw coordinates. Both start from
the same weights: the Linear layers' state dicts are copied (the rescaling has no parameters).
The final models' relative L2 errors are measured on a 101 x 101 grid, outside the timing.
The timing does include everything a run does once (optimiser set-up, pinn's first step,
which records what the residual asks for with autograd before planning its Taylor passes),
but not imports: torch.func's lazy import of torch._dynamo is paid before the clock starts.

How to run (from the repository root):

    python benchmarks/seed_config.py                         # 4096 steps each (minutes)
    python benchmarks/seed_config.py --threads 1 --seed 1
    python benchmarks/seed_config.py --quick --threads 1     # 50 steps each: a smoke test
"""

from __future__ import annotations

import argparse
import math
import time

import torch
from torch import nn

import pinn
from pinn.derivatives.engines import resolve_engine
from problems.poisson import Poisson

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


def pinn_network(seed: int, rescale: bool) -> pinn.MLP:
    """pinn's MLP of the same architecture, seeded; rescaling [0, 1]² to [-1, 1]² if asked."""
    corners = {"lower": [0.0, 0.0], "upper": [1.0, 1.0]} if rescale else {}
    generator = torch.Generator().manual_seed(seed)
    return pinn.MLP(2, 1, WIDTH, DEPTH, "tanh", generator=generator, **corners)


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


def plain_loss(model: nn.Module, generator: torch.Generator) -> torch.Tensor:
    """mean(residual²) + mean(u_boundary²) at freshly drawn points."""
    x, boundary = interior_points(generator), boundary_points(generator)
    source = torch.sin(math.pi * x[:, 0]) * torch.sin(math.pi * x[:, 1])
    residual = vmap_laplacian(model, x) + source  # -Δu = f  <=>  Δu + f = 0
    return residual.square().mean() + model(boundary).square().mean()


def train_plain(model: nn.Module, steps: int, lr: float, seed: int) -> None:
    """Adam at a constant rate, points redrawn every step."""
    generator = torch.Generator().manual_seed(seed)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    for _ in range(steps):
        optimizer.zero_grad(set_to_none=True)
        plain_loss(model, generator).backward()
        optimizer.step()


# ---- pinn ------------------------------------------------------------------------------------


def train_pinn(model: nn.Module, steps: int, lr: float, seed: int) -> None:
    """The same training through pinn.fit: uniform points redrawn every step, no L-BFGS."""
    problem = Poisson(hard_boundary=False)  # the plain loop's formulation: a boundary term
    settings = pinn.TrainSettings(
        steps=steps,
        lr=lr,
        lr_decay=1.0,
        lbfgs_steps=0,
        resample_every=1,
        progress=False,
        log_every=1000,
        checkpoint_every=0,
    )
    generator = torch.Generator().manual_seed(seed)
    points = pinn.PointSampler(
        problem.domain, N_INTERIOR, 4 * N_PER_SIDE, "uniform", generator, dtype=torch.float32
    )
    pinn.fit(problem, model, settings, points, weights={}, engine="auto")


# ---- measuring ---------------------------------------------------------------------------------


def load_torch_func() -> None:
    """Pay torch.func's one-time lazy import (it pulls in torch._dynamo, about a second).

    Done before any timing, as pinn's own imports are: the runs compare training, not imports.
    """
    torch.func.vmap(torch.func.jacrev(torch.sin))(torch.zeros(2))


def timed(train, model: nn.Module, steps: int, lr: float, seed: int) -> float:
    """Wall-clock seconds of one whole training run."""
    start = time.perf_counter()
    train(model, steps, lr, seed)
    return time.perf_counter() - start


def relative_l2(model: nn.Module) -> float:
    """||u - u_exact|| / ||u_exact|| on a 101 x 101 grid over [0, 1]², including the boundary."""
    grid = Poisson().domain.grid(GRID, dtype=torch.float64)
    exact = Poisson().exact(grid)
    with torch.no_grad():
        predicted = model(grid.float()).double().reshape(-1)
    return ((predicted - exact).norm() / exact.norm()).item()


def print_table(rows: list[tuple[str, float, float]], steps: int) -> None:
    """Markdown table of (method, wall seconds, rel_l2), then pinn's speed-up over plain."""
    print("| method | wall s | steps/s | final rel_l2 |")
    print("| --- | ---: | ---: | ---: |")
    for name, seconds, error in rows:
        print(f"| {name} | {seconds:.2f} | {steps / seconds:.1f} | {error:.3e} |")
    (_, plain_s, _), (_, pinn_s, _) = rows
    print(f"\nspeed-up pinn vs plain: {plain_s / pinn_s:.2f}x (plain wall s / pinn wall s)")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Command-line options; --quick runs 50 steps each."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=4096, help="Adam steps per run")
    parser.add_argument("--quick", action="store_true", help="50 steps each: a smoke test")
    parser.add_argument("--threads", type=int, default=None, help="torch.set_num_threads")
    parser.add_argument("--seed", type=int, default=0, help="weights; points use seed + 1")
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--no-rescale", action="store_true", help="pinn's MLP without Rescale")
    args = parser.parse_args(argv)
    if args.quick:
        args.steps = 50
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    pinn_model = pinn_network(args.seed, rescale=not args.no_rescale)
    plain_model = plain_network()
    copy_linear_weights(pinn_model, plain_model)
    engine, _ = resolve_engine("auto", pinn_model, torch.rand(2, 2))
    scaling = "no rescaling" if args.no_rescale else "inputs rescaled to [-1, 1]²"
    print("# Poisson on [0, 1]², MLP 2-20-20-20-20-1 tanh, float32, Adam 1e-3, resampled\n")
    print(
        f"torch {torch.__version__}, threads {torch.get_num_threads()}, {args.steps} steps, "
        f"seed {args.seed}; pinn: engine=auto -> {engine}, {scaling}\n"
    )
    load_torch_func()
    plain_s = timed(train_plain, plain_model, args.steps, args.lr, args.seed + 1)
    pinn_s = timed(train_pinn, pinn_model, args.steps, args.lr, args.seed + 1)
    rows = [
        ("plain loop, vmap(jacrev(jacrev))", plain_s, relative_l2(plain_model)),
        (f"pinn fit, engine=auto ({engine})", pinn_s, relative_l2(pinn_model)),
    ]
    print_table(rows, args.steps)


if __name__ == "__main__":
    main()
