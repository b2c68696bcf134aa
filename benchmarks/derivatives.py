"""Time and peak memory of one PINN training step, per way of computing the Laplacian.

What it measures: for inputs of dimension d in {2, 3, 10, 100, 1000}, a tanh MLP (3 hidden
layers) and N points in [-1, 1]^d, ONE TRAINING STEP: the Laplacian of the network at the
points, the residual loss mean((Δu + f)²), backward to the weights, zeroing the grads. It
reports the median time of a step (ms) and the step's peak memory (MiB) for

    vmap        torch.func.vmap(jacrev(jacrev(u))) of the single-point network, the diagonal
                summed: the full Hessian, the way a plain script does it (the baseline)
    autograd    pinn.laplacian(engine="autograd"): nested reverse mode, one pass per dimension
    taylor      pinn.laplacian(engine="taylor"): one forward Taylor-mode pass
    compiled    the same pass (without the pointwise check) compiled with torch.compile
                (`pinn.training.compiling.CompiledLoss`, as `trainer.compile=true` compiles a
                training step): compiled before the timing, which a step's time does not include
    sparse      pinn.stochastic_laplacian(method="sparse"), s random coordinates
    rademacher  pinn.stochastic_laplacian(method="rademacher"), s ±1 directions
    functorch   pinn.laplacian(engine="functorch"), the baseline inside pinn (opt-in)

and the ratios against the baseline measured in the same run (at d = 1000 the full Hessian is
out of reach, so the baseline there is autograd). The exact methods are checked against the
float64 vmap Laplacian on a sample of the points (max relative difference); the stochastic
ones report their relative RMS error against it instead.

Every (method, d) case runs in a fresh subprocess (`--case METHOD D`, an internal option), so
its peak memory is its own. On CPU torch keeps no allocator statistics, so the peak is the
process's peak resident set size (VmHWM, reset through /proc/self/clear_refs just before the
steps; getrusage's ru_maxrss where that is unavailable), minus its RSS just before the first
step. On CUDA it is torch.cuda.max_memory_allocated over the memory allocated before.

How to run (from the repository root):

    python benchmarks/derivatives.py                        # the full table (minutes)
    python benchmarks/derivatives.py --threads 1            # one CPU thread
    python benchmarks/derivatives.py --dtype float64 --reps 10
    python benchmarks/derivatives.py --device cuda          # on a GPU
    python benchmarks/derivatives.py --methods vmap,functorch,autograd,taylor
    python benchmarks/derivatives.py --quick --threads 1    # smoke test, small sizes
"""

from __future__ import annotations

import argparse
import copy
import gc
import json
import math
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

import pinn
from pinn.derivatives.stochastic import stochastic_laplacian
from pinn.derivatives.taylor import taylor_forward
from pinn.training.compiling import CompiledLoss

Laplacian = Callable[[nn.Module, torch.Tensor], torch.Tensor]
EXACT = ("vmap", "functorch", "autograd", "taylor", "compiled")
STOCHASTIC = ("sparse", "rademacher")
METHODS = EXACT + STOCHASTIC
DEFAULT_METHODS = "vmap,autograd,taylor,compiled,sparse,rademacher"
DTYPES = {"float32": torch.float32, "float64": torch.float64}
RESULT_TAG = "RESULT "
MIB = 2**20


@dataclass(frozen=True)
class Case:
    """One input dimension: network width, number of points, methods (the first is the baseline)."""

    dim: int
    width: int
    points: int
    methods: tuple[str, ...]


FULL_CASES = (
    Case(2, 64, 2540, EXACT),
    Case(3, 64, 2540, EXACT),
    Case(10, 64, 2000, EXACT + STOCHASTIC),
    Case(100, 128, 1000, EXACT + STOCHASTIC),
    Case(1000, 128, 256, ("autograd",) + STOCHASTIC),
)
QUICK_CASES = (
    Case(10, 16, 32, EXACT + STOCHASTIC),
    Case(50, 16, 16, ("autograd", "sparse")),
)


# ---- the Laplacians ------------------------------------------------------------------------


def vmap_laplacian(
    model: nn.Module, x: torch.Tensor, chunk_size: int | None = None
) -> torch.Tensor:
    """(N,) Laplacian from the full per-point Hessian, vmap(jacrev(jacrev(u))), diagonal summed."""

    def single(point: torch.Tensor) -> torch.Tensor:
        return model(point).squeeze(-1)  # (d,) -> (): the network at one point

    hessian = torch.func.jacrev(torch.func.jacrev(single))  # (d,) -> (d, d)
    hessians = torch.func.vmap(hessian, chunk_size=chunk_size)(x)
    return hessians.diagonal(dim1=-2, dim2=-1).sum(dim=-1)


def compiled_laplacian(model: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """(N,) Laplacian from one collapsed Taylor pass, as a training step's planned field has it
    (without pinn.laplacian's per-call pointwise check, which a compiled step does not make)."""
    return taylor_forward(model, x, list(range(x.shape[1])), "collapsed").second[:, 0]


def make_laplacian(method: str, samples: int, seed: int) -> Laplacian:
    """The (model, (N, d) points) -> (N,) Laplacian (or its estimate) of one method."""
    if method == "vmap":
        return vmap_laplacian
    if method == "compiled":
        return CompiledLoss(compiled_laplacian, required=True)
    if method in STOCHASTIC:
        generator = torch.Generator().manual_seed(seed)
        return lambda model, x: stochastic_laplacian(model, x, samples, generator, method)[:, 0]
    return lambda model, x: pinn.laplacian(model, x, engine=method)[:, 0]


# ---- one case, in its own process --------------------------------------------------------


def train_step(
    model: nn.Module, x: torch.Tensor, source: torch.Tensor, laplacian: Laplacian
) -> None:
    """Laplacian at the points, loss mean((Δu + f)²), backward to the weights, zero the grads."""
    loss = (laplacian(model, x) + source).square().mean()
    loss.backward()
    model.zero_grad(set_to_none=True)


def timed_step(
    model: nn.Module,
    x: torch.Tensor,
    source: torch.Tensor,
    laplacian: Laplacian,
    device: torch.device,
) -> float:
    """Seconds taken by one `train_step`, synchronising a GPU before and after."""
    synchronize(device)
    start = time.perf_counter()
    train_step(model, x, source, laplacian)
    synchronize(device)
    return time.perf_counter() - start


def synchronize(device: torch.device) -> None:
    """Wait for the GPU's queued work (a no-op on CPU)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


class PeakMemory:
    """The rise of peak memory over the level at `start()`, in bytes (RSS on CPU)."""

    def __init__(self, device: torch.device):
        self.device = device
        self.base = 0
        self.source = "torch.cuda.max_memory_allocated" if device.type == "cuda" else ""

    def start(self) -> None:
        """Take the baseline level and reset the high-water mark."""
        gc.collect()
        if self.device.type == "cuda":
            synchronize(self.device)
            torch.cuda.reset_peak_memory_stats(self.device)
            self.base = torch.cuda.memory_allocated(self.device)
            return
        self.base = current_rss()
        self.source = "VmHWM" if reset_peak_rss() else "ru_maxrss"

    def rise(self) -> int:
        """Bytes the peak rose above the baseline since `start()`."""
        if self.device.type == "cuda":
            synchronize(self.device)
            return torch.cuda.max_memory_allocated(self.device) - self.base
        peak = proc_status_bytes("VmHWM") if self.source == "VmHWM" else maxrss_bytes()
        return max(peak - self.base, 0)


def proc_status_bytes(key: str) -> int:
    """A memory line of /proc/self/status (VmRSS, VmHWM: kB) in bytes."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024
    raise KeyError(key)


def current_rss() -> int:
    """Resident set size now, in bytes (the peak so far where /proc is unavailable)."""
    try:
        return proc_status_bytes("VmRSS")
    except OSError:
        return maxrss_bytes()


def maxrss_bytes() -> int:
    """getrusage's peak RSS in bytes (KiB on Linux, bytes on macOS)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024


def reset_peak_rss() -> bool:
    """Reset the kernel's peak-RSS mark (Linux >= 4.0); False where that is not possible.

    Needed because ru_maxrss of a child process starts at its parent's peak (it is inherited
    through fork/exec), which would hide any step that stays below it.
    """
    try:
        Path("/proc/self/clear_refs").write_text("5")
        proc_status_bytes("VmHWM")
    except (OSError, KeyError):
        return False
    return True


def setup(
    args: argparse.Namespace, device: torch.device, dtype: torch.dtype
) -> tuple[nn.Module, torch.Tensor, torch.Tensor]:
    """The model, the (N, d) points in [-1, 1]^d and the source term f at them."""
    generator = torch.Generator().manual_seed(args.seed)
    model = pinn.MLP(args.dim, 1, args.width, args.depth, "tanh", generator=generator)
    model = model.to(device=device, dtype=dtype)
    x = 2 * torch.rand(args.points, args.dim, generator=generator, dtype=torch.float64) - 1
    x = x.to(device=device, dtype=dtype)
    source = torch.sin(math.pi * x).mean(dim=1)
    return model, x, source


def check(args: argparse.Namespace, model: nn.Module, x: torch.Tensor) -> tuple[str, float]:
    """Agreement with the float64 vmap Laplacian on a sample of the points.

    Exact methods: max |Δu - Δu_ref| / max |Δu_ref|. Stochastic ones: the relative RMS error
    sqrt(mean((est - Δu_ref)²) / mean(Δu_ref²)) over `args.draws` independent estimates.
    """
    model64 = copy.deepcopy(model).double()
    sample = x[: args.check_points].double()
    reference = vmap_laplacian(model64, sample, chunk_size=4).detach()
    laplacian = make_laplacian(args.method, args.samples, args.seed + 1)
    if args.method in STOCHASTIC:
        estimates = torch.stack([laplacian(model64, sample).detach() for _ in range(args.draws)])
        error = (estimates - reference).square().mean() / reference.square().mean()
        return "rel_rms_error", error.sqrt().item()
    difference = (laplacian(model64, sample).detach() - reference).abs().max()
    return "max_rel_diff", (difference / reference.abs().max()).item()


def run_case(args: argparse.Namespace) -> dict:
    """Measure one (method, d) case: median step time, peak memory rise, agreement."""
    device, dtype = torch.device(args.device), DTYPES[args.dtype]
    model, x, source = setup(args, device, dtype)
    laplacian = make_laplacian(args.method, args.samples, args.seed + 1)
    # One step on two points first, so that one-time costs (lazy imports: torch.func pulls in
    # torch._dynamo, ~80 MiB; thread pools) are paid before the baseline and do not count.
    # The compiled step primes on all the points: compiling for their shape is not a step's.
    prime = len(x) if args.method == "compiled" else 2
    train_step(model, x[:prime], source[:prime], laplacian)
    memory = PeakMemory(device)
    memory.start()  # before the first full step, so the step's own transients count
    for _ in range(args.warmup):
        train_step(model, x, source, laplacian)
    times = [timed_step(model, x, source, laplacian, device) for _ in range(args.reps)]
    rise = memory.rise()
    kind, value = check(args, model, x)  # after the measurement: it does not count
    return {
        "method": args.method,
        "dim": args.dim,
        "ms": 1e3 * statistics.median(times),
        "mib": rise / MIB,
        "memory_source": memory.source,
        "check_kind": kind,
        "check": value,
    }


# ---- the driver ----------------------------------------------------------------------------


def case_command(args: argparse.Namespace, case: Case, method: str) -> list[str]:
    """The command line that measures one case in a fresh interpreter."""
    command = [sys.executable, str(Path(__file__).resolve()), "--case", method, str(case.dim)]
    options = {
        "--width": case.width,
        "--points": case.points,
        "--depth": args.depth,
        "--dtype": args.dtype,
        "--device": args.device,
        "--warmup": args.warmup,
        "--reps": args.reps,
        "--samples": samples_for(args, case),
        "--draws": args.draws,
        "--check-points": args.check_points,
        "--seed": args.seed,
    }
    if args.threads is not None:
        options["--threads"] = args.threads
    for key, value in options.items():
        command += [key, str(value)]
    return command


def samples_for(args: argparse.Namespace, case: Case) -> int:
    """Stochastic directions per point: --samples, but at most d/2.

    At s = d the "sparse" estimate is the exact Laplacian, at about the exact methods' cost.
    """
    return max(1, min(args.samples, case.dim // 2))


def measure(args: argparse.Namespace, case: Case, method: str) -> dict:
    """Run one case in a subprocess; its result, or {"error": why} if it failed."""
    try:
        done = subprocess.run(
            case_command(args, case, method),
            capture_output=True,
            text=True,
            timeout=args.case_timeout,
        )
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {args.case_timeout:g} s"}
    for line in done.stdout.splitlines():
        if line.startswith(RESULT_TAG):
            return json.loads(line[len(RESULT_TAG) :])
    if done.returncode < 0:
        return {"error": f"killed by signal {-done.returncode} (out of memory?)"}
    last = (done.stderr.strip().splitlines() or ["no output"])[-1]
    return {"error": f"exit code {done.returncode}: {last}"}


def ratio(numerator: float | None, denominator: float | None, digits: int = 2) -> str:
    """numerator / denominator formatted, or n/a when either is missing or zero."""
    if not numerator or not denominator:
        return "n/a"
    return f"{numerator / denominator:.{digits}f}"


def check_text(result: dict) -> str:
    """The agreement column: relative difference (exact) or relative RMS error (stochastic)."""
    if result["method"] == "vmap":
        return "reference"
    if result["check_kind"] == "rel_rms_error":
        return f"rel RMS err {result['check']:.3f}"
    return f"max rel diff {result['check']:.1e}"


def table_rows(args: argparse.Namespace, case: Case, results: dict[str, dict]) -> list[str]:
    """Markdown rows of one dimension; ratios against the case's baseline (its first method)."""
    baseline = case.methods[0]
    base = results.get(baseline, {})
    rows = []
    for method, result in results.items():
        name = f"{method} (baseline)" if method == baseline else method
        if method in STOCHASTIC:
            name = f"{method}, s = {samples_for(args, case)}"
        head = f"| {case.dim} | {case.width} | {case.points} | {name} |"
        if "error" in result:
            why = result["error"].replace("|", "/")
            rows.append(f"{head} failed: {why} | n/a | n/a | n/a | n/a |")
            continue
        speed = ratio(base.get("ms"), result["ms"])
        memory = ratio(result["mib"], base.get("mib")) if base.get("mib", 0) >= 1 else "n/a"
        rows.append(
            f"{head} {result['ms']:.2f} | {speed} | {result['mib']:.1f} | {memory} | "
            f"{check_text(result)} |"
        )
    return rows


def footnotes(args: argparse.Namespace, cases: tuple[Case, ...], results: dict) -> list[str]:
    """What the columns mean, and why a dimension has no vmap baseline."""
    sources = {r.get("memory_source") for rs in results.values() for r in rs.values()} - {None}
    notes = [
        f"- ms/step: median of {args.reps} steps after {args.warmup} warm-up step(s); a step is "
        "the Laplacian at the N points, the loss mean((Δu + f)²), backward to the weights and "
        "zeroing the grads. x faster = baseline ms / method ms.",
        f"- peak MiB: rise of the step's peak memory ({', '.join(sorted(sources)) or 'n/a'}) "
        "over the level just before the first full-size step (warm-up steps count; a priming "
        "step on 2 points runs before, so lazy imports do not), in a fresh process per row. "
        "memory vs baseline = method MiB / baseline MiB (below 1: less memory); n/a "
        "where the baseline rose by less than 1 MiB, which is within the allocator's noise.",
        f"- check: against the float64 vmap(jacrev(jacrev)) Laplacian on {args.check_points} "
        "of the points: max |Δu - ref| / max |ref| for exact methods; for the stochastic ones "
        f"(s = {args.samples} samples, at most d/2) the relative RMS error over {args.draws} "
        "independent estimates per point.",
        "- autograd, taylor and functorch go through pinn.laplacian, which checks on every call "
        "that the model is pointwise (two forward passes on 8 points); the times include it.",
    ]
    for case in cases:
        if case.methods[0] == "vmap" or case.dim not in results:
            continue
        failed = "error" in results[case.dim].get(case.methods[0], {"error": "not run"})
        hessian_mib = case.points * case.dim**2 * DTYPES[args.dtype].itemsize / MIB
        notes.append(
            f"- d = {case.dim}: vmap(jacrev(jacrev)) is not run: its Hessians alone take "
            f"N d² numbers = {hessian_mib:.3g} MiB per step, and every tensor it saves for the "
            f"backward N d width numbers. The baseline there is {case.methods[0]}"
            + (", which failed, so the ratios are n/a." if failed else ".")
        )
    return notes


def print_header(args: argparse.Namespace) -> None:
    """torch version, threads, dtype, device."""
    print("# One training step per Laplacian method\n")
    quick = ", --quick sizes" if args.quick else ""
    print(
        f"torch {torch.__version__}, threads {torch.get_num_threads()}, dtype {args.dtype}, "
        f"device {args.device}, MLP tanh with {args.depth} hidden layers{quick}"
    )
    print()


def run_all(args: argparse.Namespace) -> None:
    """Measure every selected case in its own subprocess and print the table."""
    chosen = args.methods.split(",")
    cases = QUICK_CASES if args.quick else FULL_CASES
    print_header(args)
    results: dict[int, dict[str, dict]] = {}
    rows = []
    for case in cases:
        results[case.dim] = {m: measure(args, case, m) for m in case.methods if m in chosen}
        rows += table_rows(args, case, results[case.dim])
    print("| d | width | N | method | ms/step | x faster | peak MiB | memory vs baseline | check |")
    print("| ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | --- |")
    print("\n".join(rows))
    print()
    print("\n".join(footnotes(args, cases, results)))


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Command-line options; --quick shrinks the sizes and the repetitions."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes: a smoke test")
    parser.add_argument("--threads", type=int, default=None, help="torch.set_num_threads")
    parser.add_argument("--dtype", choices=list(DTYPES), default="float32")
    parser.add_argument("--device", default="cpu", help="cpu or cuda")
    parser.add_argument("--methods", default=DEFAULT_METHODS, help=f"comma list of {METHODS}")
    parser.add_argument("--warmup", type=int, default=None, help="warm-up steps (default 2)")
    parser.add_argument("--reps", type=int, default=None, help="timed steps (default 5)")
    parser.add_argument("--samples", type=int, default=None, help="stochastic directions (16)")
    parser.add_argument("--draws", type=int, default=8, help="estimates per point in the check")
    parser.add_argument("--check-points", type=int, default=32, help="points in the check")
    parser.add_argument("--depth", type=int, default=3, help="hidden layers")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--case-timeout", type=float, default=1800.0, help="seconds per case")
    parser.add_argument("--case", nargs=2, metavar=("METHOD", "D"), help=argparse.SUPPRESS)
    parser.add_argument("--width", type=int, default=64, help=argparse.SUPPRESS)
    parser.add_argument("--points", type=int, default=256, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    unknown = set(args.methods.split(",")) - set(METHODS)
    if unknown:
        parser.error(f"unknown method(s) {sorted(unknown)}; choose from {', '.join(METHODS)}")
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        parser.error("--device cuda was asked for, but CUDA is not available")
    defaults = {"warmup": (1, 2), "reps": (2, 5), "samples": (4, 16)}
    for key, (quick, full) in defaults.items():
        if getattr(args, key) is None:
            setattr(args, key, quick if args.quick else full)
    return args


def main(argv: list[str] | None = None) -> None:
    """The table, or with --case one measurement printed as a RESULT json line."""
    args = parse_args(argv)
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    if args.case is None:
        run_all(args)
        return
    args.method, args.dim = args.case[0], int(args.case[1])
    print(RESULT_TAG + json.dumps(run_case(args)), flush=True)


if __name__ == "__main__":
    main()
