"""What a redraw of the training points costs, by sampler and domain.

What it measures: the time of one `PointSampler.draw()` (interior and boundary points, float32,
as a run with `trainer.adam.resample_every=1` draws them before every step), for each sampling
method, on the domains of the library's problems, and each method's time against uniform
draws on the same domain in the same run. The median of `--repeats` timed draws is reported,
after a few untimed ones (Sobol's net is computed on the first draw of a shape).

    domain                     points (interior + boundary)
    unit square                2540 + 640    (benchmarks/seed_config.py's configuration)
    annulus (Disk - Disk)      2000 + 800    (problems/annulus.py)
    L-shape (Polygon)          2000 + 400    (problems/lshape.py: rejection from its box)
    [-1, 1] x [0, 1] in time   2540 + 240    (problems/burgers.py)
    ball, d = 100              100 + 1       (problems/poisson_highd.py)

How to run (from the repository root):

    python benchmarks/sampling.py
    python benchmarks/sampling.py --threads 1 --repeats 200
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # problems/ beside pinn/

from pinn.geometry import SAMPLING_METHODS, Ball, Box, PointSampler, SpaceTime  # noqa: E402
from pinn.problems.annulus import Annulus  # noqa: E402
from pinn.problems.lshape import LShape  # noqa: E402

CASES = [
    ("unit square", lambda: Box([0.0, 0.0], [1.0, 1.0]), 2540, 640),
    ("annulus", lambda: Annulus.domain, 2000, 800),
    ("L-shape", lambda: LShape.domain, 2000, 400),
    ("[-1, 1] x [0, 1] in time", lambda: SpaceTime(Box([-1.0], [1.0]), 0.0, 1.0), 2540, 240),
    ("ball, d = 100", lambda: Ball([0.0] * 100, 1.0), 100, 1),
]


def draw_ms(
    domain, n_interior: int, n_boundary: int, method: str, repeats: int, device: str = "cpu"
) -> float:
    """Median milliseconds of one draw of n_interior + n_boundary points by `method`, onto
    `device` (drawn on the CPU, copied there; timed until the copy is done)."""
    generator = torch.Generator().manual_seed(0)
    points = PointSampler(domain, n_interior, n_boundary, method, generator, device=device)
    for _ in range(5):
        points.draw()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        points.draw()
        if torch.device(device).type == "cuda":
            torch.cuda.synchronize(device)
        times.append(time.perf_counter() - start)
    return 1e3 * statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=100)
    parser.add_argument("--device", default="cpu", help="where the points go: cpu, cuda")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    print(
        f"ms per draw onto {args.device} (median of {args.repeats}), {args.threads} thread(s); "
        "against uniform:"
    )
    print(f"| domain | points | {' | '.join(SAMPLING_METHODS)} |")
    print("| --- | ---: |" + " ---: |" * len(SAMPLING_METHODS))
    for name, domain_of, n_interior, n_boundary in CASES:
        domain = domain_of()
        ms = {
            m: draw_ms(domain, n_interior, n_boundary, m, args.repeats, args.device)
            for m in SAMPLING_METHODS
        }
        cells = [f"{ms[m]:.3f} ({ms[m] / ms['uniform']:.2f}x)" for m in SAMPLING_METHODS]
        print(f"| {name} | {n_interior} + {n_boundary} | {' | '.join(cells)} |")


if __name__ == "__main__":
    main()
