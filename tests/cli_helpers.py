"""Running `python -m pinn` as a user would, for the tests that need the real command line."""

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def cli_environment(extra_path: Path | None = None) -> dict[str, str]:
    """This process's environment with one torch thread (2 cores, tests side by side)."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HYDRA_FULL_ERROR": "0"}
    if extra_path:
        env["PYTHONPATH"] = os.pathsep.join([str(extra_path), env.get("PYTHONPATH", "")])
    return env


def run_pinn(
    *args: str, extra_path: Path | None = None, timeout: float = 300, cwd: Path = REPO
) -> subprocess.CompletedProcess:
    """`python -m pinn *args` from `cwd` (the repository root); output captured as text."""
    return subprocess.run(
        [sys.executable, "-m", "pinn", *args],
        cwd=cwd,
        env=cli_environment(extra_path),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


# The worked example of the README: a new PDE in its own module plus one yaml.
REACTION_MODULE = '''
from math import pi

import torch

from pinn import Box, Dirichlet, Problem


class ReactionDiffusion(Problem):
    """-u'' + u = (1 + pi^2) sin(pi x) on [0, 1], u(0) = u(1) = 0; exact u = sin(pi x)."""

    domain = Box([0.0], [1.0])
    conditions = [Dirichlet(on="boundary", value=0.0)]

    def residual(self, x, u):
        return -u.d2("x") + u() - (1 + pi**2) * torch.sin(pi * x[:, 0])

    def exact(self, x):
        return torch.sin(pi * x[:, 0])
'''
