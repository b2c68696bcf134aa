"""Time of the Jacobian of the residual rows (Gauss-Newton), per way of computing it.

What it measures: Poisson on [0, 1]² with its hard constraint (pinn.problems.poisson), a tanh
MLP of 3 hidden layers of `width`, N Sobol points, float64, one process. For each case it prints
the seconds one (R, P) Jacobian takes (R = N rows, P parameters) and the Jacobian's size, for

    pinn-taylor     pinn.training.rows.residual_rows on the Taylor engine (vmap over points of
                    jacrev of the Taylor pass at one point, then jvp through the assembly)
    pinn-autograd   the same on the autograd engine (the engine's Field on per-point copies
                    of the parameters, one backward per quantity)
    every-row       torch.autograd.grad(rows, params, eye(R), is_grads_batched=True): jacrev's
                    vmap over one cotangent per row, through the whole batch's graph, in
                    chunks of 100 rows (unchunked it holds R copies of the graph); timed on
                    the first chunk and scaled by R / 100
    jacfwd          torch.func.jacfwd over a functional_call of a residual written with the
                    Taylor pass directly (pinn's fields cannot run inside torch.func
                    transforms): P directions through the network at every point; timed on
                    the first 100 directions and scaled by P / 100

How to run (from the repository root): OMP_NUM_THREADS=2 python benchmarks/row_jacobian.py
(`--device cuda` on a GPU).
"""

from __future__ import annotations

import argparse
import time
from math import pi

import torch

from pinn.derivatives.engines import Engine
from pinn.derivatives.taylor import taylor_forward
from pinn.geometry import PointSampler
from pinn.nn import MLP, HardConstraint
from pinn.problem.loss import residuals
from pinn.problems.poisson import Poisson
from pinn.training.rows.residual_rows import ResidualRows

CASES = [(20, 1000), (40, 2000), (60, 4000)]  # (width, N): P = 921, 3441, 7561


def setup(width: int, n_points: int, device: str = "cpu"):
    problem = Poisson()
    generator = torch.Generator().manual_seed(0)
    network = MLP(2, 1, width=width, depth=3, generator=generator).double()
    model = HardConstraint(network, problem.hard_constraint).to(device)
    points = PointSampler(
        problem.domain, n_points, 4, "sobol", generator, dtype=torch.float64, device=device
    )
    return problem, model, points.draw()


def seconds(run) -> float:
    """Wall seconds of `run()`, the GPU's queue finished (where there is one)."""
    start = time.perf_counter()
    run()
    if torch.cuda.is_initialized():
        torch.cuda.synchronize()
    return time.perf_counter() - start


def pinn_rows(problem, model, batch, engine_name: str) -> float:
    engine = Engine(engine_name, model, probe=batch.interior[:2], announce=False)
    rows_of = ResidualRows(problem, model, engine)
    rows_of(batch, jacobian=True)  # records the plan, traces the pass
    return seconds(lambda: rows_of(batch, jacobian=True))


def every_row(problem, model, batch) -> float:
    engine = Engine("taylor", model, probe=batch.interior[:2], announce=False)
    params = list(model.parameters())

    def first_chunk():
        (rows,) = residuals(problem, model, batch, engine).values()
        rows = rows / rows.numel() ** 0.5
        eye = torch.eye(rows.numel(), dtype=rows.dtype, device=rows.device)[:100]
        torch.autograd.grad(rows, params, grad_outputs=eye, is_grads_batched=True)

    first_chunk()
    return seconds(first_chunk) * len(batch.interior) / 100


def jacfwd(problem, model, batch) -> float:
    x = batch.interior
    params = {name: p.detach() for name, p in model.named_parameters()}
    source = torch.sin(pi * x[:, 0]) * torch.sin(pi * x[:, 1])
    n_params = sum(p.numel() for p in params.values())

    def rows(state):
        with torch.nn.utils.stateless._reparametrize_module(model, state):
            jet = taylor_forward(model, x, [0, 1], "collapsed")
        return (jet.second[:, 0] + source) / len(x) ** 0.5

    flat = torch.cat([p.reshape(-1) for p in params.values()])
    sizes = [p.numel() for p in params.values()]

    def rows_of_flat(vector):
        pieces = vector.split(sizes)
        state = {n: v.view(p.shape) for (n, p), v in zip(params.items(), pieces)}
        return rows(state)

    def first_directions():
        directions = torch.eye(n_params, dtype=flat.dtype, device=flat.device)[:100]
        torch.func.vmap(lambda v: torch.func.jvp(rows_of_flat, (flat,), (v,))[1])(directions)

    first_directions()
    return seconds(first_directions) * n_params / 100


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cpu", help="torch device: cpu, cuda")
    args = parser.parse_args(argv)
    print(f"float64 on {args.device}")
    print("| width | N = R | P | J MB | pinn-taylor s | pinn-autograd s | every-row s | jacfwd s |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for width, n_points in CASES:
        problem, model, batch = setup(width, n_points, args.device)
        n_params = sum(p.numel() for p in model.parameters())
        size = n_points * n_params * 8 / 2**20
        times = [
            pinn_rows(problem, model, batch, "taylor"),
            pinn_rows(problem, model, batch, "autograd"),
            every_row(problem, model, batch),
            jacfwd(problem, model, batch),
        ]
        cells = " | ".join(f"{t:.2f}" for t in times)
        print(f"| {width} | {n_points} | {n_params} | {size:.0f} | {cells} |", flush=True)


if __name__ == "__main__":
    main()
