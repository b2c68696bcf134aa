"""Data-parallel training under torchrun: 2 processes on the CPU (gloo, one thread each).

The fit-level runs are in tests/training/distributed_worker.py; the CLI runs are `torchrun -m pinn`.
"""

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import torch

from pinn import MLP
from pinn.derivatives.engines import Engine
from pinn.geometry import Batch, BoundaryPoints
from pinn.nn import InputOptions
from pinn.problem import loss_terms
from pinn.problems.inverse_poisson import InversePoisson
from pinn.training.distributed import World, launched, rank_seed
from pinn.training.strategies.weighting import LossWeights

ROOT = Path(__file__).resolve().parents[2]
WORKER = Path(__file__).with_name("distributed_worker.py")
TORCHRUN = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node"]


def environment() -> dict[str, str]:
    env = dict(os.environ, OMP_NUM_THREADS="1")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(ROOT / "tests"), env.get("PYTHONPATH", "")])
    return env


# A worker aborting (std::terminate: a joinable thread destroyed), seen on this project's 2-core
# machine under load since 2026-12-06 (4 of ~20 runs of this file beside a full test run, none
# of 6 alone): the run is repeated once, its results then checked as any run's. Not yet
# understood (issue 45's note).
EXIT_ABORT = "terminate called without an active exception"


def torchrun(processes: int, arguments: list[str], timeout: float = 240, **options):
    for _ in range(2):
        command = [*TORCHRUN, str(processes), "--master-port", str(free_port()), *arguments]
        done = subprocess.run(
            command,
            cwd=ROOT,
            env=environment(),
            capture_output=True,
            text=True,
            timeout=timeout,
            **options,
        )
        if done.returncode == 0 or EXIT_ABORT not in (done.stderr or ""):
            return done
    return done


def free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def worker(mode: str, out: Path) -> list[dict]:
    done = torchrun(2, [str(WORKER), mode, str(out)])
    assert done.returncode == 0, done.stderr[-3000:]
    return [torch.load(out / f"rank{r}.pt", weights_only=False) for r in range(2)]


# ---- fit over two processes --------------------------------------------------------------------


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    out = tmp_path_factory.mktemp("train")
    return out, worker("train", out)


def test_adam_lbfgs_and_bfgs_leave_identical_parameters_unknowns_and_weights(trained):
    _, (first, second) = trained
    for mine, theirs in zip(first["parameters"], second["parameters"]):
        assert torch.equal(mine, theirs)
    assert first["unknowns"] == second["unknowns"]
    assert first["unknowns"]["kappa"] != 1.0  # kappa trained
    # The rows both processes logged carry the same (averaged) losses and LRA weights; only
    # rank 0 validates, so only its rows have a rel_l2.
    assert [row["phase"] for row in first["history"]][-1] == "final"
    for mine, theirs in zip(first["history"], second["history"], strict=True):
        assert repr({k: v for k, v in mine.items() if k != "rel_l2"}) == repr(theirs)
    assert any(row["weight_data"] != 10.0 for row in first["history"])  # LRA moved them


def test_rar_adds_points_alike_and_keeps_the_processes_identical(tmp_path):
    first, second = worker("rar", tmp_path)
    assert first["added"] == second["added"] == 16  # 8 at each of steps 10 and 20
    for mine, theirs in zip(first["parameters"], second["parameters"], strict=True):
        assert torch.equal(mine, theirs)
    assert first["unknowns"] == second["unknowns"]
    for mine, theirs in zip(first["history"], second["history"], strict=True):
        assert repr({k: v for k, v in mine.items() if k != "rel_l2"}) == repr(theirs)


def test_resumed_from_a_checkpoint_in_adam_lbfgs_or_bfgs_ends_bit_identical(trained):
    out, results = trained
    resumed = sorted(out.glob("rank*_resumed_*.pt"))
    assert len(resumed) == 6  # three checkpoints (Adam, L-BFGS, BFGS), two processes each
    for path in resumed:
        rank = int(path.name[4])
        expected, got = results[rank], torch.load(path, weights_only=False)
        for mine, theirs in zip(expected["parameters"], got["parameters"]):
            assert torch.equal(mine, theirs)
        assert got["unknowns"] == expected["unknowns"]
        assert repr(got["history"]) == repr(expected["history"])  # NaN rates compare equal


def test_the_checkpoint_holds_each_process_generator(trained):
    out, _ = trained
    state = torch.load(out / "run.pt", weights_only=False)
    training = state["training"]
    assert training["processes"] == 2 and len(training["ranks"]) == 2
    first, second = (rank["sampler"]["generator"] for rank in training["ranks"])
    assert not torch.equal(first, second)
    assert torch.equal(training["sampler"]["generator"], first)


def test_loss_and_gradient_equal_one_process_holding_both_shares(tmp_path):
    shares = worker("gradient", tmp_path)
    for name in ("loss", "terms", "gradient"):
        assert repr(shares[0][name]) == repr(shares[1][name])  # averaged: the same everywhere
    # One process, both shares of points, the same model.
    problem = InversePoisson(n_observations=20)
    domain = problem.domain
    model = MLP(
        2,
        1,
        width=8,
        depth=2,
        inputs=InputOptions(lower=domain.lower, upper=domain.upper),
        generator=torch.Generator().manual_seed(0),
    ).double()
    unknowns = problem.attach_unknowns(torch.float64, torch.device("cpu"))
    interior = torch.cat([share["interior"] for share in shares])
    points, normals, part = (torch.cat(column) for column in zip(*(s["boundary"] for s in shares)))
    boundary = BoundaryPoints(points, normals, part, domain.part_names, domain)
    terms = loss_terms(problem, model, Batch(interior, boundary), Engine("auto", model, interior))
    loss = LossWeights({"dirichlet": 10.0, "data": 10.0}).total(terms)
    loss.backward()
    assert torch.allclose(shares[0]["loss"], loss.detach(), rtol=1e-12, atol=0)
    for name, value in terms.items():
        assert torch.allclose(shares[0]["terms"][name], value.detach(), rtol=1e-12, atol=0)
    parameters = [*model.parameters(), *unknowns.parameters()]
    for averaged, single in zip(shares[0]["gradient"], parameters, strict=True):
        assert torch.allclose(averaged, single.grad, rtol=1e-12, atol=1e-15)
    assert not torch.equal(shares[0]["interior"], shares[1]["interior"])  # shares of their own


# ---- the CLI under torchrun ---------------------------------------------------------------------

RUN = [
    "problem=poisson",
    "dtype=float64",
    "threads=1",
    "trainer.progress=false",
    "problem.n_interior=64",
    "problem.n_boundary=32",
    "model.width=8",
    "model.depth=2",
    "trainer.adam.steps=30",
    "trainer.lbfgs.steps=10",
    "trainer.gauss_newton.steps=10",
    "trainer.log_every=5",
    "trainer.adam.resample_every=5",
]


def cli(processes: int | None, run_dir: Path, *extra: str, timeout: float = 240):
    arguments = ["-m", "pinn", *RUN, f"hydra.run.dir={run_dir}", *extra]
    if processes is None:
        command = [sys.executable, *arguments]
        kwargs = dict(cwd=ROOT, env=environment(), capture_output=True, text=True)
        return subprocess.run(command, timeout=timeout, **kwargs)
    return torchrun(processes, arguments, timeout)


LONGER = [
    "trainer.adam.steps=400",
    "trainer.phases=[adam,gauss_newton,bfgs]",
    "trainer.lbfgs.steps=20",
    "trainer.gauss_newton.steps=20",
    "trainer.bfgs.steps=20",
    "trainer.checkpoint_every=10",
]


@pytest.fixture(scope="module")
def two_processes(tmp_path_factory) -> Path:
    """The run directory of an uninterrupted 2-process CLI run (RUN + LONGER)."""
    run_dir = tmp_path_factory.mktemp("two") / "run"
    done = cli(2, run_dir, *LONGER)
    assert done.returncode == 0, done.stderr[-3000:]
    return run_dir


@pytest.mark.slow  # whole torchrun or CLI runs: with the slow tests (in-process checks stay fast)
def test_one_process_under_torchrun_is_the_run_without_it_and_two_write_one_directory(
    tmp_path, two_processes
):
    alone, one, two = tmp_path / "alone", tmp_path / "one", two_processes
    for processes, run_dir in ((None, alone), (1, one)):
        done = cli(processes, run_dir, *LONGER)
        assert done.returncode == 0, done.stderr[-3000:]
    metrics = {d: json.loads((d / "metrics.json").read_text()) for d in (alone, one, two)}
    for key in ("rel_l2", "max_abs_error", "final_loss", "steps"):
        assert metrics[one][key] == metrics[alone][key]
    saved = [torch.load(d / "checkpoint.pt", weights_only=False)["model"] for d in (alone, one)]
    assert all(torch.equal(saved[0][k], saved[1][k]) for k in saved[0])
    assert metrics[two]["final_loss"] != metrics[alone]["final_loss"]  # twice the points
    # Rank 0 alone wrote, and rank 1 nothing in the temporary directory Hydra gave it.
    assert (two / "history.csv").exists() and (two / ".hydra").is_dir()
    scratch = Path(tempfile.gettempdir())
    assert not (scratch / ".hydra").exists() and not (scratch / "__main__.log").exists()


@pytest.mark.slow  # whole torchrun or CLI runs: with the slow tests (in-process checks stay fast)
def test_resuming_with_another_number_of_processes_is_refused(tmp_path, two_processes):
    again = cli(None, tmp_path / "again", *LONGER, f"resume={two_processes}")
    assert again.returncode == 1
    assert "written by a run of 2 process(es), this one has 1" in again.stderr
    assert "torchrun --nproc_per_node=2" in again.stderr


@pytest.mark.slow  # whole torchrun or CLI runs: with the slow tests (in-process checks stay fast)
@pytest.mark.parametrize("phase", ["adam", "gauss_newton", "bfgs"])
def test_a_killed_two_process_run_resumes_bit_identical(tmp_path, two_processes, phase):
    whole, killed, resumed = two_processes, tmp_path / "killed", tmp_path / "resumed"
    # The same run, every process killed (SIGKILL) once a checkpoint in `phase` is on disk.
    arguments = ["-m", "pinn", *RUN, *LONGER, f"hydra.run.dir={killed}"]
    launcher = subprocess.Popen(
        [*TORCHRUN, "2", "--master-port", str(free_port()), *arguments],
        cwd=ROOT,
        env=environment(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 120
        while launcher.poll() is None and time.monotonic() < deadline:
            state = peek(killed / "checkpoint.pt")
            if state and state["step"] > 0 and state["training"]["phase"] == phase:
                kill_tree(launcher.pid)  # the workers first: they run in sessions of their own
                break
            time.sleep(0.005)
    finally:
        launcher.wait(timeout=60)
    saved = torch.load(killed / "checkpoint.pt", weights_only=False)
    assert saved["training"]["phase"] == phase, "killed too late: make the run longer"
    time.sleep(1)
    assert not (killed / "metrics.json").exists()  # every process died with the launcher
    done = cli(2, resumed, *LONGER, f"resume={killed}")
    assert done.returncode == 0, done.stderr[-3000:]
    ends = [torch.load(d / "checkpoint.pt", weights_only=False) for d in (whole, resumed)]
    assert all(torch.equal(ends[0]["model"][k], ends[1]["model"][k]) for k in ends[0]["model"])
    assert (ends[0]["loss"], ends[0]["step"]) == (ends[1]["loss"], ends[1]["step"])
    untimed = [
        [{k: v for k, v in row.items() if k != "time_s"} for row in e["history"]] for e in ends
    ]
    assert repr(untimed[0]) == repr(untimed[1])


@pytest.mark.slow  # two torchrun runs each (Interrupts' agreement is tested in process too)
@pytest.mark.parametrize("target", ["launcher", "rank 1"])
def test_a_signal_stops_every_process_at_one_step_and_resumes_bit_identical(
    tmp_path, two_processes, target
):
    # SIGTERM to torchrun (it forwards the signal to each process, at slightly different
    # moments), or to one process only: all stop at the same step, one checkpoint holds it.
    whole, stopped, resumed = two_processes, tmp_path / "stopped", tmp_path / "resumed"
    arguments = ["-m", "pinn", *RUN, *LONGER, f"hydra.run.dir={stopped}"]
    launcher = subprocess.Popen(
        [*TORCHRUN, "2", "--master-port", str(free_port()), *arguments],
        cwd=ROOT,
        env=environment(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while launcher.poll() is None and time.monotonic() < deadline:
            state = peek(stopped / "checkpoint.pt")
            if state and state["step"] > 0 and state["training"]["phase"] == "adam":
                pid = launcher.pid if target == "launcher" else worker_of_rank(launcher.pid, 1)
                os.kill(pid, signal.SIGTERM)
                break
            time.sleep(0.005)
        _, stderr = launcher.communicate(timeout=120)
    finally:
        launcher.kill()
    said = [line for line in stderr.splitlines() if "interrupted at step" in line]
    assert len(said) == 1, stderr[-3000:]  # rank 0 speaks for both
    saved = torch.load(stopped / "checkpoint.pt", weights_only=False)
    assert said[0].endswith(f"interrupted at step {saved['step']}; continue with resume={stopped}")
    assert saved["training"]["phase"] == "adam", "stopped too late: make the run longer"
    assert not (stopped / "metrics.json").exists()
    done = cli(2, resumed, *LONGER, f"resume={stopped}")
    assert done.returncode == 0, done.stderr[-3000:]
    ends = [torch.load(d / "checkpoint.pt", weights_only=False) for d in (whole, resumed)]
    assert all(torch.equal(ends[0]["model"][k], ends[1]["model"][k]) for k in ends[0]["model"])
    assert (ends[0]["loss"], ends[0]["step"]) == (ends[1]["loss"], ends[1]["step"])


def worker_of_rank(launcher: int, rank: int) -> int:
    """The process id of torchrun `launcher`'s worker of `rank` (Linux /proc)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        children = Path(f"/proc/{launcher}/task/{launcher}/children").read_text().split()
        for child in map(int, children):
            with contextlib.suppress(OSError):
                environ = Path(f"/proc/{child}/environ").read_bytes().split(b"\0")
                if f"RANK={rank}".encode() in environ:
                    return child
        time.sleep(0.01)
    raise AssertionError(f"no worker of rank {rank} under process {launcher}")


def kill_tree(pid: int) -> None:
    """SIGKILL `pid`'s descendants, deepest first, then `pid` itself (Linux /proc)."""
    children = Path(f"/proc/{pid}/task/{pid}/children")
    for child in children.read_text().split() if children.exists() else []:
        kill_tree(int(child))
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def peek(path: Path) -> dict | None:
    """The checkpoint at `path`, or None while there is none (it is replaced atomically)."""
    try:
        return torch.load(path, weights_only=False)
    except (FileNotFoundError, EOFError, RuntimeError):
        return None


@pytest.mark.slow  # whole torchrun or CLI runs: with the slow tests (in-process checks stay fast)
def test_a_process_that_dies_ends_the_run_and_leaves_the_checkpoint(tmp_path):
    # Two processes started as torchrun starts them, without its agent (which would stop the
    # survivor itself): rank 1 is killed part-way, and rank 0 must say so and stop, not hang.
    run_dir = tmp_path / "run"
    extra = ["trainer.adam.steps=100000", "trainer.checkpoint_every=20", "distributed.timeout_s=60"]
    command = [sys.executable, "-m", "pinn", *RUN, f"hydra.run.dir={run_dir}", *extra]
    port = str(free_port())
    ranks = [
        subprocess.Popen(
            command,
            cwd=ROOT,
            env=environment()
            | dict(RANK=str(r), LOCAL_RANK=str(r), WORLD_SIZE="2", MASTER_PORT=port)
            | dict(MASTER_ADDR="127.0.0.1"),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for r in range(2)
    ]
    checkpoint = run_dir / "checkpoint.pt"
    started = time.monotonic()
    while not checkpoint.exists() and time.monotonic() - started < 120:
        time.sleep(0.2)
    assert checkpoint.exists()
    ranks[1].kill()
    _, stderr = ranks[0].communicate(timeout=45)  # at once, not after the 60 s timeout
    assert ranks[0].returncode == 1
    assert "pinn: error: process 0 of 2 lost the others" in stderr
    assert "Its last checkpoint stays readable" in stderr
    state = torch.load(checkpoint, weights_only=False)  # whole
    assert state["training"]["processes"] == 2


# ---- in process ----------------------------------------------------------------------------------


def test_a_single_process_is_a_world_of_one(monkeypatch):
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK"):
        monkeypatch.delenv(name, raising=False)
    assert launched() is None
    world = World.current()
    assert (world.rank, world.size, world.is_main) == (0, 1, True)
    loss, terms = torch.tensor(2.0), {"pde": torch.tensor(2.0)}
    assert world.average_loss(terms, loss) == (terms, loss)  # untouched, not copied
    assert world.gather("x") == ["x"]


def test_rank_zero_keeps_the_seed_and_other_ranks_draw_apart():
    assert rank_seed(7, 0) == 7
    seeds = {rank_seed(7, rank) for rank in range(64)}
    assert len(seeds) == 64 and all(0 <= s < 2**63 for s in seeds)


def test_a_bad_torchrun_environment_is_refused(monkeypatch):
    monkeypatch.setenv("RANK", "2")
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("LOCAL_RANK", "0")
    with pytest.raises(ValueError, match=r"RANK=2 is not in \[0, WORLD_SIZE=2\)"):
        launched()
