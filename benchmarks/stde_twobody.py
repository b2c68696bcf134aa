"""STDE's own training (sail-sg/stde) on one of pinn's `poisson_highd` coefficient draws.

STDE's published errors for the two-body Poisson problem are for one coefficient draw that their
`main.py` makes unseeded, so they cannot be compared with any fixed draw. This script runs their
code, with the settings of their `scripts/insep.sh`, on the c_i pinn draws, so that the two
trainings meet on the same problem (README, "High dimensions"). It imports STDE from a checkout
and runs in an environment of its own (JAX, not torch); nothing of STDE is part of pinn.

    git clone https://github.com/sail-sg/stde /tmp/stde
    python -m venv /tmp/jaxenv && /tmp/jaxenv/bin/pip install "jax[cpu]" dm-haiku optax \\
        ml_collections pydantic absl-py shortuuid jaxtyping tqdm pandas matplotlib wandb folx
    # the coefficients, in pinn's environment:
    python -c "import numpy as np; from pinn.problems.poisson_highd import PoissonHighD; \\
        np.save('c100_0.npy', PoissonHighD(100, coefficient_seed=0).coefficients.numpy())"
    /tmp/jaxenv/bin/python benchmarks/stde_twobody.py /tmp/stde c100_0.npy --runs 1

Prints one row per network seed: the lowest relative L2 error of the evaluations every 1000 steps
(STDE's statistic), the last, and the seconds.
"""

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("stde", type=Path, help="a checkout of sail-sg/stde")
    parser.add_argument("coefficients", type=Path, help=".npy of the d - 1 coefficients c_i")
    parser.add_argument("--runs", type=int, default=5, help="network seeds 0, 1, ... (STDE: 5)")
    parser.add_argument("--steps", type=int, default=10000)
    parser.add_argument(
        "--device", default="cpu", choices=["cpu", "cuda"], help="JAX's platform for STDE's runs"
    )
    return parser.parse_args()


def stde_config(stde_config_class, dim: int, steps: int):
    """STDE's `Config` with scripts/insep.sh's settings for PoissonTwobody."""
    config = stde_config_class()
    equation = config.eqn_cfg
    equation.name, equation.dim = "PoissonTwobody", dim
    equation.batch_size = equation.batch_size_boundary = 100
    equation.enforce_boundary, equation.boundary_weight = True, 0.0
    equation.rand_batch_size, equation.hess_diag_method = 16, "sparse_stde"
    config.test_cfg.batch_size, config.test_cfg.eval_every = 200, 1000
    config.test_cfg.show_stats, config.test_cfg.data_on_gpu = False, False
    config.gd_cfg.epochs = steps
    return config


def main() -> None:
    args = parse_args()
    sys.path.insert(0, str(args.stde))
    os.environ["JAX_PLATFORMS"] = args.device  # read when JAX starts: before its import
    import jax

    # STDE's code predates these removals from JAX's top level.
    jax.tree_leaves, jax.tree_map = jax.tree_util.tree_leaves, jax.tree_util.tree_map
    import stde.train
    from stde.config import Config

    # train() reads its speed back from absl's log file, which exists only under main.py.
    speed_log = Path(tempfile.mkdtemp()) / "speed.log"
    speed_log.write_text("x, 0it/s\n" * 4)
    stde.train.absl_log.get_log_file_name = lambda: str(speed_log)

    pinn_draw = np.load(args.coefficients)
    config = stde_config(Config, dim=len(pinn_draw) + 1, steps=args.steps)
    # STDE holds d coefficients and uses the first d - 1; the field is not declared, hence setattr.
    object.__setattr__(config.eqn_cfg, "coeffs", np.concatenate([pinn_draw, [0.0]])[None])
    print(f"d = {len(pinn_draw) + 1}, sum of c_i = {pinn_draw.sum():.2f}, JAX on {args.device}")
    print("| network seed | lowest rel_l2 | last rel_l2 | s |\n| ---: | ---: | ---: | ---: |")
    for seed in range(args.runs):
        config.rng_seed = seed
        np.random.seed(seed)
        start = time.perf_counter()
        _, _, errors, _, _ = stde.train.train(config, False, seed, False)
        elapsed = time.perf_counter() - start
        print(f"| {seed} | {min(errors):.3e} | {errors[-1]:.3e} | {elapsed:.0f} |", flush=True)


if __name__ == "__main__":
    main()
