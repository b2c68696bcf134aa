"""Ctrl-C (SIGINT) and SIGTERM: the run stops at a step boundary with its state checkpointed,
says how to continue in one line, exits 130 / 143, and resumed ends bit for bit like a run
never stopped. From Python the handlers live only while `fit` runs, in the main thread."""

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import cli_helpers
import pytest
from test_resume import RUN, SETTINGS, WEIGHTS, assert_same_outcome, tiny_parts

from pinn import fit, load_checkpoint
from pinn.errors import TrainingInterrupted
from pinn.training.interrupts import Interrupts


def last_row(history: Path) -> tuple[int, str] | None:
    """(step, phase) of history.csv's last whole row, None before it has one."""
    try:
        lines = history.read_text().splitlines(keepends=True)
    except FileNotFoundError:
        return None
    rows = [line for line in lines[1:] if line.endswith("\n")]
    if not rows:
        return None
    step, phase = rows[-1].split(",")[:2]
    return int(step), phase


def interrupt_in(run_dir: Path, phase: str, number: int) -> tuple[subprocess.Popen, str, int]:
    """Start the run, send signal `number` once history.csv shows it in `phase` past its first
    row; returns the ended process, its stderr and the step seen."""
    process = subprocess.Popen(
        [sys.executable, "-m", "pinn", *RUN, f"hydra.run.dir={run_dir}"],
        cwd=cli_helpers.REPO,
        env=cli_helpers.cli_environment(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    seen = None
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and process.poll() is None:
            row = last_row(run_dir / "history.csv")
            if row and row[1] == phase and row[0] > (0 if phase == "adam" else 301):
                seen = row[0]
                process.send_signal(number)
                break
            time.sleep(0.002)
        _, stderr = process.communicate(timeout=60)
    finally:
        process.kill()
    assert seen is not None, "the run ended before it could be interrupted: make it longer"
    return process, stderr, seen


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory) -> Path:
    run_dir = tmp_path_factory.mktemp("uninterrupted")
    result = cli_helpers.run_pinn(*RUN, f"hydra.run.dir={run_dir}", timeout=120)
    assert result.returncode == 0, result.stderr
    return run_dir


# Each case is two CLI runs: with the slow tests. In process, `fit` stopping on a signal is fast.
SLOW = pytest.mark.slow


@pytest.mark.parametrize(
    ("number", "phase"),
    [
        pytest.param(signal.SIGINT, "adam", id="SIGINT-adam", marks=SLOW),
        pytest.param(signal.SIGINT, "lbfgs", id="SIGINT-lbfgs", marks=SLOW),
        pytest.param(signal.SIGTERM, "adam", id="SIGTERM-adam", marks=SLOW),
        pytest.param(signal.SIGTERM, "lbfgs", id="SIGTERM-lbfgs", marks=SLOW),
    ],
)
def test_a_signal_checkpoints_says_how_to_continue_and_resumes_exactly(
    uninterrupted, tmp_path, phase, number
):
    run_dir = tmp_path / "run"
    process, stderr, seen = interrupt_in(run_dir, phase, number)
    assert process.returncode == 128 + number  # 130, 143
    saved = load_checkpoint(run_dir / "checkpoint.pt")
    assert saved["training"]["phase"] == phase and saved["step"] >= seen
    assert stderr.strip().splitlines()[-1] == (
        f"interrupted at step {saved['step']}; continue with resume={run_dir}"
    )
    assert "Traceback" not in stderr
    assert not (run_dir / "metrics.json").exists()
    assert (run_dir / "config.yaml").exists()

    resumed = cli_helpers.run_pinn(
        *RUN, f"resume={run_dir}", f"hydra.run.dir={run_dir}", timeout=120
    )
    assert resumed.returncode == 0, resumed.stderr
    assert_same_outcome(run_dir, uninterrupted)


# ---- from Python ----------------------------------------------------------------------------


class SignalsAtRow:
    """A validator that sends this process `number` at its `at`-th call (a history row)."""

    def __init__(self, number: int, at: int):
        self.number, self.at, self.calls = number, at, 0

    def errors(self, model):
        self.calls += 1
        if self.calls == self.at:
            os.kill(os.getpid(), self.number)
        return {"rel_l2": 0.0, "max_abs_error": 0.0}


def test_fit_stops_on_a_signal_and_restores_the_handlers(tmp_path):
    before = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    problem, model, points = tiny_parts()
    path = tmp_path / "checkpoint.pt"
    with pytest.raises(TrainingInterrupted) as stopped:
        fit(problem, model, SETTINGS, points, WEIGHTS, SignalsAtRow(signal.SIGTERM, 3), path)
    # Rows at steps 0, 5, 10: the signal came during step 10, so step 11 is checkpointed.
    assert (stopped.value.step, stopped.value.exit_code) == (11, 143)
    said = f"interrupted at step 11 (SIGTERM); continue with resume_from={path}"
    assert str(stopped.value) == said
    saved = load_checkpoint(path)
    assert (saved["step"], saved["training"]["phase"]) == (11, "adam")
    assert (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)) == before


def test_without_a_checkpoint_a_signal_is_left_to_the_caller():
    # Nothing to save: fit installs no handler, and the caller's own gets the signal. (A
    # recording handler, not Python's KeyboardInterrupt: an exception raised from a signal
    # handler surfaces wherever the interpreter happens to be, a finaliser that swallows it
    # included, so asserting on it would be flaky.)
    problem, model, points = tiny_parts()
    received = []
    previous = signal.signal(signal.SIGINT, lambda number, frame: received.append(number))
    try:
        fit(problem, model, SETTINGS, points, WEIGHTS, SignalsAtRow(signal.SIGINT, 2))
    finally:
        signal.signal(signal.SIGINT, previous)
    assert received == [signal.SIGINT]


def test_handlers_are_installed_only_in_the_main_thread_and_only_inside_the_block():
    before = signal.getsignal(signal.SIGINT)
    with Interrupts() as interrupts:
        assert signal.getsignal(signal.SIGINT) == interrupts._handle
        os.kill(os.getpid(), signal.SIGINT)
        assert interrupts.received == signal.SIGINT  # recorded, not raised
        with pytest.raises(KeyboardInterrupt):  # a second one stops at once
            os.kill(os.getpid(), signal.SIGINT)
    assert signal.getsignal(signal.SIGINT) == before

    seen = []

    def in_a_thread():
        with Interrupts():
            seen.append(signal.getsignal(signal.SIGINT))

    thread = threading.Thread(target=in_a_thread)
    thread.start()
    thread.join()
    assert seen == [before]


class PeersSignalled:
    """A world of two whose other process is signalled before the `at`-th check."""

    size = 2

    def __init__(self, at: int):
        self.at, self.calls = at, []

    def any(self, flag: bool) -> bool:
        self.calls.append(flag)
        return flag or len(self.calls) >= self.at


def test_a_peers_signal_stops_this_process_at_the_same_check():
    world = PeersSignalled(at=3)
    interrupts = Interrupts(enabled=True, world=world)
    assert [interrupts.requested() for _ in range(4)] == [False, False, True, True]
    assert world.calls == [False, False, False]  # agreed once: no more collectives
    with pytest.raises(TrainingInterrupted) as stopped:
        interrupts.stop(7, "run/checkpoint.pt")
    assert stopped.value.step == 7 and stopped.value.exit_code == 143  # its peers' SIGTERM
    assert Interrupts(enabled=False, world=world).requested() is False
    assert world.calls == [False, False, False]  # a disabled one asks nobody
