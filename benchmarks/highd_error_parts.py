"""What a `poisson_highd` run gets wrong: its error split by polynomial degree, and the floor
that a stochastic Laplacian puts under the loss of the exact solution.

    python -m pinn problem=poisson_highd hydra.run.dir=outputs/highd
    python benchmarks/highd_error_parts.py outputs/highd [--device cuda]

The run's u = (1 - |x|²) N; its error is written e_N = (u - u_exact) / (1 - |x|²) (points with
1 - |x|² > 0.05). The table gives the share of e_N's variance left unexplained, on held-out
points, by least squares on a constant, the linear terms x_i, and the quadratic ones x_i² and
x_i x_(i+1) (the exact solution's Taylor series has no other quadratic terms), and the cosine
between the run's and the exact solution's coefficients of each group.

The floor: with the sparse estimator of `laplacian.samples` = k of d coordinates, the squared
estimate's expectation is (Δu - f)² + Var, Var = d²/k · (d - k)/(d - 1) · σ², σ² the spread of
∂²u/∂x_i² over i at the point. For the exact solution Δu = f, so its expected loss is E[Var]:
training that lands below it has found a function the stochastic loss prefers to the solution.
"""

from __future__ import annotations

import argparse

import torch
from torch.func import hessian, vmap

from pinn import load_run


def run_draw(problem, count: int, seed: int) -> torch.Tensor:
    """(count, d) float64 points drawn as the run draws its own (the domain's sampler)."""
    return problem.domain.interior_float64(count, torch.Generator().manual_seed(seed), "uniform")


def polynomial_features(x: torch.Tensor) -> dict[str, torch.Tensor]:
    """The groups of monomials: {name: (N, k)}."""
    return {
        "constant": torch.ones(len(x), 1, dtype=x.dtype),
        "linear x_i": x,
        "square x_i^2": x**2,
        "neighbour x_i x_(i+1)": x[:, :-1] * x[:, 1:],
    }


def error_parts(run_dir: str, count: int = 40000, device: str = "cpu") -> None:
    run = load_run(run_dir, device=device)
    problem = run.problem
    dim = problem.domain.dim
    x = run_draw(problem, count, seed=5)
    predicted = torch.from_numpy(run.predict(x.numpy())["u"]).double()
    exact = problem.exact(x)
    bump = 1 - (x**2).sum(1)
    print(f"rel_l2 {float((predicted - exact).norm() / exact.norm()):.3e}")
    keep = bump > 0.05
    x, bump = x[keep], bump[keep]
    network, solution = predicted[keep] / bump, exact[keep] / bump
    groups = polynomial_features(x)
    everything = torch.cat(list(groups.values()), 1)
    half = len(x) // 2
    error = network - solution
    print(f"rms of e_N: {float(error.square().mean().sqrt()):.4f}\n")
    print("| least squares on | e_N's variance left (held out) |")
    print("| --- | ---: |")
    for upto in range(1, len(groups) + 1):
        columns = sum(g.shape[1] for g in list(groups.values())[:upto])
        basis = everything[:, :columns]
        fit = torch.linalg.lstsq(basis[:half], error[:half, None]).solution
        left = error[half:] - (basis[half:] @ fit)[:, 0]
        names = " + ".join(list(groups)[:upto])
        print(f"| {names} | {float(left.square().mean() / error[half:].square().mean()):.3f} |")
    fit_network = torch.linalg.lstsq(everything, network[:, None]).solution[:, 0]
    fit_solution = torch.linalg.lstsq(everything, solution[:, None]).solution[:, 0]
    print("\n| group | exact coefficients' norm | run's minus exact | cosine |")
    print("| --- | ---: | ---: | ---: |")
    start = 0
    for name, group in groups.items():
        run_part = fit_network[start : start + group.shape[1]]
        exact_part = fit_solution[start : start + group.shape[1]]
        start += group.shape[1]
        cosine = torch.dot(run_part, exact_part) / (run_part.norm() * exact_part.norm())
        difference = (run_part - exact_part).norm()
        print(f"| {name} | {exact_part.norm():.3f} | {difference:.3f} | {cosine:.3f} |")
    stochastic_floor(run, problem, dim)


def stochastic_floor(run, problem, dim: int, count: int = 400) -> None:
    samples = int(run.config.laplacian.samples)
    x = run_draw(problem, count, seed=6)
    curvature = torch.diagonal(vmap(hessian(lambda p: problem.exact(p[None])[0]))(x), 0, 1, 2)
    spread = curvature.var(dim=1, unbiased=False)
    variance = dim**2 / samples * (dim - samples) / (dim - 1) * spread
    last, fresh = run.metrics["final_loss"], run.metrics["fresh_loss"]
    print(
        f"\nexpected loss with the sparse estimator (k = {samples}) of the exact solution: "
        f"{float(variance.mean()):.1f}; of the run: its last step's {last:.1f} "
        f"(its loss with exact Laplacians at fresh points: {fresh:.1f})"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run_dir", help="a finished poisson_highd run's directory")
    parser.add_argument("--device", default="cpu", help="where the network runs: cpu, cuda")
    args = parser.parse_args(argv)
    error_parts(args.run_dir, device=args.device)


if __name__ == "__main__":
    main()
