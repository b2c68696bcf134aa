"""Two things that do not close `poisson_highd`'s gap to STDE's published figure (README, "High
dimensions"): an unbiased stochastic loss, and Gauss-Newton with exact Laplacians after Adam.

    python benchmarks/highd_losses.py losses [--dim 100] [--steps 10000]
    python -m pinn problem=poisson_highd hydra.run.dir=outputs/highd
    python benchmarks/highd_losses.py gauss-newton outputs/highd [--points 2000] [--iterations 4]

`losses` trains the default setting (128x4 tanh, u = (1 - |x|²) N, 100 fresh points a step, 16
sparse coordinates, Adam at 1e-3 falling linearly to 0, float32, seeds as `seed=0`) in a loop of
its own, with two losses:
- square: mean((Δ̂u - f)²), Δ̂ one estimate from 16 coordinates: pinn's loss (this loop ends at
  pinn's rel_l2 bit for bit). Its expectation is (Δu - f)² plus the estimate's variance, which
  is not zero at the exact solution;
- product: mean((Δ̂₁u - f)(Δ̂₂u - f)), two independent estimates from 8 coordinates each (the same
  16 second derivatives a point): its expectation is (Δu - f)² itself.

`gauss-newton` continues a finished run by Levenberg-Marquardt with exact Laplacians (all d
coordinates), on fresh points at every iteration (`pinn.fit`, solver `rows`), at two dampings,
and prints rel_l2 and the loss per iteration: a loss on fresh points that does not fall says the
network fits the points it is given, not the solution between them.
"""

from __future__ import annotations

import argparse
import time

import torch

import pinn
from pinn.derivatives.stochastic import random_directions, second_directional_sum
from pinn.problems.poisson_highd import PoissonHighD
from pinn.run.build import build_model


def default_model(problem: PoissonHighD, seed: int) -> torch.nn.Module:
    """The yaml's network, built and seeded as `python -m pinn problem=poisson_highd` builds it."""
    cfg = pinn.compose_config(["problem=poisson_highd", f"problem.params.dim={problem.domain.dim}"])
    return build_model(problem, cfg.model, seed).float()


def train(
    loss_name: str, dim: int, steps: int, seed: int = 0, device: str = "cpu"
) -> tuple[float, float, float]:
    """(final loss, rel_l2, seconds) of `steps` Adam steps with the loss `loss_name`."""
    torch.manual_seed(seed)
    problem = PoissonHighD(dim=dim, coefficient_seed=seed)
    model = default_model(problem, seed).to(device)
    sampler_seed, direction_seed = torch.Generator(), torch.Generator()  # the same draws anywhere
    points = pinn.PointSampler(
        problem.domain,
        100,
        1,
        "uniform",
        sampler_seed.manual_seed(seed + 1),
        torch.float32,
        device=device,
    )
    directions = direction_seed.manual_seed(seed + 2)
    optimiser = torch.optim.Adam(model.parameters(), lr=1e-3)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimiser, lambda k: max(1 - k / steps, 1e-6))

    def estimate(x: torch.Tensor, samples: int) -> torch.Tensor:
        chosen, scale = random_directions("sparse", x, samples, directions)
        return scale * second_directional_sum(model, x, chosen)[:, 0]

    start = time.perf_counter()
    for _ in range(steps):
        x = points.draw().interior
        forcing = problem.exact_laplacian(x)
        if loss_name == "square":
            loss = (estimate(x, 16) - forcing).square().mean()
        else:
            loss = ((estimate(x, 8) - forcing) * (estimate(x, 8) - forcing)).mean()
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
        schedule.step()
    loss = loss.item()  # waits for the last step (on a GPU)
    seconds = time.perf_counter() - start
    error = pinn.Validator(problem, dtype=torch.float32, device=device).errors(model)["rel_l2"]
    return loss, error, seconds


def losses(dim: int, steps: int, device: str = "cpu") -> None:
    print(f"d = {dim}, {steps} Adam steps, seed 0, {device}\n")
    print("| loss | final loss | rel_l2 | s |\n| --- | ---: | ---: | ---: |")
    for name in ("square", "product"):
        loss, error, seconds = train(name, dim, steps, device=device)
        print(f"| {name} | {loss:.3g} | {error:.3e} | {seconds:.0f} |", flush=True)


def gauss_newton(
    run_dir: str, points: int, iterations: int, dampings: list[float], device: str = "cpu"
) -> None:
    for damping in dampings:
        run = pinn.load_run(run_dir, device=device)
        problem, model = run.problem, run.model
        validator = pinn.Validator(problem, dtype=torch.float32, device=device)
        before = validator.errors(model)["rel_l2"]
        generator = torch.Generator().manual_seed(5)
        sampler = pinn.PointSampler(
            problem.domain, points, 1, "uniform", generator, torch.float32, device=device
        )
        settings = pinn.TrainSettings(
            phases=["gauss_newton"],
            gauss_newton={
                "steps": iterations,
                "damping": damping,
                "resample_every": 1,
                "solver": "rows",
            },
            log_every=1,
            progress=False,
        )
        start = time.perf_counter()
        result = pinn.fit(problem, model, settings, sampler, validator=validator, weights={})
        seconds = time.perf_counter() - start
        print(f"\ndamping {damping:g}, {points} fresh points an iteration: rel_l2 {before:.3e} ->")
        print("| iteration | loss | step length | rel_l2 |\n| ---: | ---: | ---: | ---: |")
        for row in result.history:
            if "gn_length" in row:
                print(f"| {row['step']} | {row['loss']:.4g} | {row['gn_length']:g} | ", end="")
                print(f"{row['rel_l2']:.3e} |")
        print(f"{seconds:.0f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    adam = commands.add_parser("losses", help="square against product of two estimates")
    adam.add_argument("--dim", type=int, default=100)
    adam.add_argument("--steps", type=int, default=10000)
    newton = commands.add_parser("gauss-newton", help="Gauss-Newton after a finished run")
    newton.add_argument("run_dir")
    newton.add_argument("--points", type=int, default=2000)
    newton.add_argument("--iterations", type=int, default=4)
    newton.add_argument("--dampings", type=float, nargs="+", default=[1e-5, 1e-3])
    for command in (adam, newton):
        command.add_argument("--device", default="cpu", help="torch device: cpu, cuda")
    args = parser.parse_args()
    if args.command == "losses":
        losses(args.dim, args.steps, args.device)
    else:
        gauss_newton(args.run_dir, args.points, args.iterations, args.dampings, args.device)


if __name__ == "__main__":
    main()
