"""One check of pinn on a one-GPU machine, in under 5 minutes; prints what it found.

    python benchmarks/gpu_check.py                 # cuda where torch sees one, else the CPU half
    python benchmarks/gpu_check.py --quick         # fewer steps: a smoke test of the script

1. The tests marked `gpu` (`pytest -m gpu`): resume mid-L-BFGS on cuda, no host sync between
   logged rows, the CUDA-graph step (`trainer.compile=reduce-overhead`) against eager, the
   quasi-Newton states loaded onto cuda.
2. Seconds per Adam step, L-BFGS iteration and Gauss-Newton iteration of the default `poisson`
   network and points, on the CPU and on cuda in the same run (a table).
3. Reduced `poisson` and `burgers` runs with `device=<device>` through `pinn.train` (metrics).
4. A run interrupted mid-L-BFGS (its checkpoint kept), resumed on the device: it must end
   exactly as the uninterrupted run.

Without a CUDA GPU it runs the CPU half (the table's CPU column, 3 and 4 on the CPU) and says
that the GPU half did not run; `--device cuda` there stops with that message instead.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch
from omegaconf import OmegaConf

import pinn
from pinn.config.schema import check_config
from pinn.problem import load_problem
from pinn.problems.poisson import Poisson
from pinn.run.build import build_model

ROOT = Path(__file__).resolve().parent.parent
# Per phase: (the block's settings, iterations timed). Gauss-Newton's matrix-free solve is its
# `auto` above `dense_limit`; at 921 parameters it is the dense one.
PHASES = {
    "adam": ({"steps": 60}, 60),
    "lbfgs": ({"steps": 20, "stall_window": 0}, 20),
    "gauss_newton": ({"steps": 8}, 8),
}
REDUCED = {
    "poisson": ["trainer.adam.steps=300", "trainer.gauss_newton.steps=30"],
    "burgers": [
        "trainer.adam.steps=300",
        "trainer.bfgs.steps=100",
        "problem.n_interior=2000",
        "refinement.candidates=20000",
    ],
}


def run_gpu_tests() -> int:
    """`pytest -m gpu` in one process; returns its exit status."""
    command = [sys.executable, "-m", "pytest", "-m", "gpu", "-n0", "-q", "tests"]
    print("$", " ".join(command), flush=True)
    return subprocess.run(command, cwd=ROOT).returncode


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def seconds_per_iteration(device: torch.device, phase: str, scale: float) -> float:
    """Median seconds of an iteration of `phase` on the default poisson network and 1000 + 400
    points (float32), from the history's times (the first logged row, with compile-free warm-up,
    excluded)."""
    cfg = pinn.compose_config(["problem=poisson", f"device={device}", "dtype=float32"])
    config = check_config(cfg)
    problem = load_problem(cfg.problem.target, OmegaConf.to_container(cfg.problem.params))
    model = build_model(problem, config.model, 0).to(device)
    generator = torch.Generator().manual_seed(1)
    points = pinn.PointSampler(
        problem.domain, 1000, 400, "sobol", generator, dtype=torch.float32, device=device
    )
    block, count = PHASES[phase]
    count = max(3, int(count * scale))
    settings = pinn.TrainSettings(
        phases=[phase],
        **{phase: block | {"steps": count}},
        log_every=1,
        progress=False,
        compile="false",
    )
    result = pinn.fit(problem, model, settings, points)
    synchronize(device)
    times = [row["time_s"] for row in result.history if row["phase"] == phase]
    return statistics.median(b - a for a, b in zip(times[1:], times[2:]))


def timing_table(devices: list[torch.device], scale: float) -> None:
    print("\nseconds per iteration, default poisson network (921 parameters), 1000 points")
    print(f"| phase | {' | '.join(str(d) for d in devices)} |")
    print(f"| --- | {' | '.join('---:' for _ in devices)} |")
    for phase in PHASES:
        cells = [f"{seconds_per_iteration(d, phase, scale):.4f}" for d in devices]
        print(f"| {phase} | {' | '.join(cells)} |", flush=True)


def reduced_runs(device: torch.device, scale: float, folder: Path) -> None:
    print(f"\nreduced runs on {device}")
    for name, overrides in REDUCED.items():
        overrides = [_scaled(o, scale) for o in overrides]
        cfg = pinn.compose_config([f"problem={name}", f"device={device}", *overrides])
        cfg.trainer.progress = False
        started = time.perf_counter()
        metrics = pinn.train(cfg, folder / name)
        seconds = time.perf_counter() - started
        print(
            f"  {name}: rel_l2 {metrics['rel_l2']:.3e}, final loss {metrics['final_loss']:.3e}, "
            f"{metrics['steps']} steps, {seconds:.1f} s ({' '.join(overrides)})",
            flush=True,
        )


def _scaled(override: str, scale: float) -> str:
    key, value = override.split("=")
    return f"{key}={max(2, int(int(value) * scale))}" if key.endswith(".steps") else override


class _KeepFirstLBFGSCheckpoint(pinn.Callback):
    """Copies the first checkpoint written during L-BFGS to `kept`."""

    def __init__(self, kept: Path):
        self.kept, self.done = kept, False

    def on_checkpoint(self, path, step, state) -> None:
        if state.phase == "lbfgs" and not self.done:
            shutil.copy(path, self.kept)
            self.done = True


def resume_mid_lbfgs(device: torch.device, folder: Path) -> bool:
    """A poisson run (Adam, then L-BFGS) with a checkpoint every 7 steps; resumed from its first
    checkpoint mid-L-BFGS (read on the CPU, as every checkpoint is), it must end bit for bit as
    the uninterrupted run. Returns whether it did."""
    kept = folder / "mid_lbfgs.pt"

    def run(resume_from=None, callbacks=()):
        problem = Poisson(hard_boundary=False)
        model = pinn.MLP(2, 1, 16, 2, generator=torch.Generator().manual_seed(0)).to(device)
        generator = torch.Generator().manual_seed(1)
        points = pinn.PointSampler(problem.domain, 256, 64, "sobol", generator, device=device)
        settings = pinn.TrainSettings(
            adam={"steps": 30, "resample_every": 10},
            lbfgs={"steps": 20},
            log_every=5,
            checkpoint_every=7,
            progress=False,
            compile="false",
        )
        path = folder / ("resumed.pt" if resume_from else "checkpoint.pt")
        result = pinn.fit(
            problem,
            model,
            settings,
            points,
            checkpoint_path=path,
            resume_from=resume_from,
            callbacks=list(callbacks),
        )
        return model, result

    model, result = run(callbacks=[_KeepFirstLBFGSCheckpoint(kept)])
    step = pinn.load_checkpoint(kept)["step"]
    resumed_model, resumed = run(resume_from=kept)
    same = all(torch.equal(a, b) for a, b in zip(model.parameters(), resumed_model.parameters()))
    same = same and resumed.final_loss == result.final_loss
    print(
        f"\nresumed on {device} from step {step} (mid-L-BFGS): "
        + (
            "ends exactly as the uninterrupted run"
            if same
            else "DIFFERS from the uninterrupted run"
        )
    )
    return same


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--device", default=None, help="cuda (the default where torch sees a GPU) or cpu"
    )
    parser.add_argument("--quick", action="store_true", help="a tenth of the steps")
    parser.add_argument("--skip-tests", action="store_true", help="not the gpu-marked tests")
    args = parser.parse_args(argv)
    has_cuda = torch.cuda.is_available()
    device = torch.device(args.device or ("cuda" if has_cuda else "cpu"))
    if device.type == "cuda" and not has_cuda:
        print("gpu_check: --device cuda, but torch sees no CUDA GPU: nothing of the GPU half ran")
        return 2
    if device.type != "cuda":
        print("gpu_check: no CUDA GPU in use: the CPU half only (the GPU half needs cuda)")
    scale = 0.1 if args.quick else 1.0
    print(f"torch {torch.__version__}, pinn {pinn.__version__}, device {device}", end="")
    print(f" ({torch.cuda.get_device_name(device)})" if device.type == "cuda" else "")
    failed = 0
    if device.type == "cuda" and not args.skip_tests:
        failed += run_gpu_tests() != 0
    devices = [torch.device("cpu")] + ([device] if device.type != "cpu" else [])
    timing_table(devices, scale)
    with tempfile.TemporaryDirectory() as folder:
        reduced_runs(device, scale, Path(folder))
        failed += not resume_mid_lbfgs(device, Path(folder))
    print("\ngpu_check:", "all passed" if not failed else f"{failed} check(s) FAILED")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
