"""The run directory's rules: another run's results are never mixed with or written over, a
directory is one run's at a time (a lock the OS releases), an unwritable one is refused."""

import errno
import json
import logging
import os
import signal
import subprocess
import sys
import time

import cli_helpers
import numpy as np
import pytest
import torch

import pinn.training.checkpoints
import pinn.training.loop
from pinn import compose_config, load_checkpoint, train
from pinn.errors import ConfigError, OutputError, RunDirectoryError
from pinn.run.rundir import LOCK_NAME, claim_run_dir

FAST = [
    "trainer.adam.steps=20",
    "trainer.lbfgs.steps=5",
    "trainer.gauss_newton.steps=5",
    "trainer.bfgs.steps=5",
    "trainer.log_every=5",
    "trainer.checkpoint_every=5",
    "trainer.progress=false",
    "problem.n_interior=32",
    "problem.n_boundary=16",
    "model.width=4",
    "model.depth=1",
    "threads=1",
]


def an_earlier_run(run_dir):
    """The files an earlier run left (its results, plots, a tensorboard folder), and a user's."""
    run_dir.mkdir(parents=True, exist_ok=True)
    for name in ("config.yaml", "metrics.json", "history.csv", "solution.png", "loss.pdf"):
        (run_dir / name).write_text("earlier\n")
    (run_dir / "tensorboard").mkdir()
    (run_dir / "tensorboard" / "events").write_text("earlier\n")
    (run_dir / "notes.txt").write_text("mine\n")


def test_a_directory_holding_another_run_is_refused_naming_the_ways_out(tmp_path):
    an_earlier_run(tmp_path)
    with pytest.raises(RunDirectoryError) as refused, claim_run_dir(tmp_path):
        pass
    message = str(refused.value)
    assert f"{tmp_path} holds the results of another run (config.yaml, metrics.json" in message
    assert "hydra.run.dir at its default" in message
    assert f"resume={tmp_path}" in message and "overwrite=true" in message
    assert "\n" not in message
    assert (tmp_path / "metrics.json").read_text() == "earlier\n"  # nothing touched


def test_overwrite_removes_the_earlier_runs_files_and_only_those(tmp_path):
    an_earlier_run(tmp_path)
    (tmp_path / ".hydra").mkdir()
    with claim_run_dir(tmp_path, overwrite=True):
        left = sorted(p.name for p in tmp_path.iterdir())
    assert left == [".hydra", LOCK_NAME, "notes.txt"]


@pytest.mark.parametrize("delay", [False, True])
def test_overwrite_empties_the_log_this_process_appends_to_there(tmp_path, delay):
    """Hydra opens <job>.log in the run directory (appending) before pinn sees it: overwritten,
    the log holds this run's lines only, not the earlier run's."""
    an_earlier_run(tmp_path)
    (tmp_path / "__main__.log").write_text("the earlier run's line\n")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "other.log").write_text("another folder's\n")
    logger = logging.getLogger("pinn.test_overwrite_log")
    handlers = [
        logging.FileHandler(tmp_path / "__main__.log", delay=delay),
        logging.FileHandler(tmp_path / "elsewhere" / "other.log", delay=delay),
    ]
    for handler in handlers:
        logger.addHandler(handler)
    try:
        with claim_run_dir(tmp_path, overwrite=True):
            logger.warning("this run's line")
    finally:
        for handler in handlers:
            logger.removeHandler(handler)
            handler.close()
    assert (tmp_path / "__main__.log").read_text() == "this run's line\n"
    assert (tmp_path / "elsewhere" / "other.log").read_text() == (
        "another folder's\nthis run's line\n"
    )


def test_resuming_in_place_keeps_the_run(tmp_path):
    an_earlier_run(tmp_path)
    with claim_run_dir(tmp_path, overwrite=True, resuming_in_place=True):
        assert (tmp_path / "metrics.json").read_text() == "earlier\n"


def hold_lock(run_dir):
    """A process that claims `run_dir` and sleeps; returns it once it holds the lock."""
    code = (
        "import sys, time\nfrom pinn.run.rundir import claim_run_dir\n"
        f"with claim_run_dir({str(run_dir)!r}):\n    print('held', flush=True)\n"
        "    time.sleep(float(sys.argv[1]))\n"
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", code, "60"],
        cwd=cli_helpers.REPO,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout.readline() == "held\n"
    return holder


@pytest.mark.parametrize("ending", ["terminate", "sigkill"])
def test_a_second_run_is_refused_while_the_first_lives(tmp_path, ending):
    holder = hold_lock(tmp_path)
    try:
        held_by = rf"another run \(process {holder.pid}\)"
        with pytest.raises(RunDirectoryError, match=held_by), claim_run_dir(tmp_path):
            pass
    finally:
        # A clean end (SIGTERM runs no handler here: the process ends) or a SIGKILL: either
        # way the OS releases the lock.
        holder.send_signal(signal.SIGKILL if ending == "sigkill" else signal.SIGTERM)
        holder.wait()
    with claim_run_dir(tmp_path):
        assert (tmp_path / LOCK_NAME).read_text() == f"{os.getpid()}\n"


@pytest.mark.slow  # whole CLI runs; the library-level tests above are fast
def test_the_cli_refuses_a_second_run_and_overwrite_replaces_it(tmp_path):
    first = cli_helpers.run_pinn(*FAST, f"hydra.run.dir={tmp_path}", timeout=120)
    assert first.returncode == 0, first.stderr
    before = (tmp_path / "metrics.json").read_bytes()
    again = cli_helpers.run_pinn(*FAST, "seed=1", f"hydra.run.dir={tmp_path}", timeout=120)
    assert again.returncode == 1
    assert (
        again.stderr.strip()
        .splitlines()[-1]
        .startswith(f"pinn: error: {tmp_path} holds the results of another run")
    )
    assert (tmp_path / "metrics.json").read_bytes() == before
    replaced = cli_helpers.run_pinn(
        *FAST, "seed=1", "overwrite=true", f"hydra.run.dir={tmp_path}", timeout=120
    )
    assert replaced.returncode == 0, replaced.stderr
    assert "seed: 1" in (tmp_path / "config.yaml").read_text()
    assert load_checkpoint(tmp_path / "checkpoint.pt")["config"]["seed"] == 1
    assert json.loads((tmp_path / "metrics.json").read_text()) != json.loads(before)


def test_an_unwritable_run_directory_is_refused_before_any_work(tmp_path, monkeypatch):
    (tmp_path / "a_file").write_text("")
    built = []
    monkeypatch.setattr(sys.modules["pinn.run.train"], "load_problem", lambda *a: built.append(a))
    with pytest.raises(OutputError, match=r"a_file/run cannot be written: Not a directory"):
        train(compose_config(FAST), tmp_path / "a_file" / "run")
    assert built == []  # refused before the problem was even loaded


def test_config_yaml_is_written_with_the_first_checkpoint_only(tmp_path, monkeypatch):
    def refuse(model, points):
        raise ConfigError("refused at the first step")

    monkeypatch.setattr(pinn.training.loop, "check_pointwise", refuse)
    with pytest.raises(ConfigError, match="refused at the first step"):
        train(compose_config(FAST), tmp_path / "failed")
    assert not (tmp_path / "failed" / "config.yaml").exists()
    monkeypatch.undo()

    written = []
    original = pinn.training.checkpoints.save_checkpoint

    def save(path, state):
        written.append((path.parent / "config.yaml").exists())
        original(path, state)

    monkeypatch.setattr(pinn.training.checkpoints, "save_checkpoint", save)
    train(compose_config(FAST), tmp_path / "run")
    assert written[0] is False and all(written[1:])  # it came with the first checkpoint
    saved = load_checkpoint(tmp_path / "run" / "checkpoint.pt")
    assert "seed: 0" in (tmp_path / "run" / "config.yaml").read_text()
    assert saved["config"]["model"]["width"] == 4
    mode = (tmp_path / "run" / "checkpoint.pt").stat().st_mode & 0o777
    assert mode == (tmp_path / "run" / "metrics.json").stat().st_mode & 0o777


def test_a_full_disk_mid_run_ends_in_one_line_and_keeps_the_last_checkpoint(tmp_path, monkeypatch):
    calls = []
    original = torch.save

    def fills_the_disk(obj, file):
        calls.append(1)
        if len(calls) == 2:
            file.write(b"half")
            raise RuntimeError("[enforce fail at inline_container.cc:672] . unexpected pos 64")
        original(obj, file)

    monkeypatch.setattr(torch, "save", fills_the_disk)
    run_dir = tmp_path / "run"
    with pytest.raises(OutputError) as failed:
        train(compose_config(FAST), run_dir)
    message = str(failed.value)
    assert f"cannot write the checkpoint {run_dir / 'checkpoint.pt'}: " in message
    assert "is the disk full?" in message and "\n" not in message
    monkeypatch.undo()
    assert load_checkpoint(run_dir / "checkpoint.pt")["step"] == 5  # the first one, intact
    assert not list(run_dir.glob(".checkpoint.pt.*"))  # no temporary file left
    assert not (run_dir / "metrics.json").exists()


def test_the_lock_is_released_when_training_fails(tmp_path):
    with pytest.raises(ConfigError):
        train(compose_config([*FAST, "model.activation=relu"]), tmp_path)
    start = time.monotonic()
    with claim_run_dir(tmp_path):  # free again at once
        assert time.monotonic() - start < 1


def test_an_output_that_cannot_be_written_ends_the_run_naming_it(tmp_path, monkeypatch):
    def full(path, **arrays):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))

    monkeypatch.setattr(np, "savez", full)
    with pytest.raises(OutputError) as failed:
        train(compose_config(FAST), tmp_path)
    prediction = tmp_path / "prediction.npz"
    assert str(failed.value) == f"cannot write {prediction}: No space left on device"
    assert load_checkpoint(tmp_path / "checkpoint.pt")["training"]["phase"] == "done"


def test_the_cli_refuses_a_directory_before_hydra_writes_into_it(tmp_path, monkeypatch, capsys):
    import pinn.__main__

    an_earlier_run(tmp_path)
    monkeypatch.setattr(sys, "argv", ["pinn", *FAST, f"hydra.run.dir={tmp_path}"])
    monkeypatch.setattr(sys, "path", list(sys.path))  # cli() puts the working directory first
    with pytest.raises(SystemExit) as ended:
        pinn.__main__.cli()
    assert ended.value.code == 1
    error = capsys.readouterr().err.strip()
    assert error.startswith(f"pinn: error: {tmp_path} holds the results of another run")
    assert "\n" not in error
    # Hydra never started: no .hydra/ config and no log appended to the earlier run's.
    assert not (tmp_path / ".hydra").exists() and not list(tmp_path.glob("*.log"))
    assert (tmp_path / "metrics.json").read_text() == "earlier\n"


@pytest.mark.parametrize(
    "arguments",
    [
        ["overwrite=true"],  # replaced by the run itself, once its checks pass
        ["resume={run}"],  # continued in place
        ["-m", "seed=1,2"],  # a sweep's jobs have directories of their own
        ["--help"],
    ],
)
def test_the_early_check_lets_through_what_train_allows(tmp_path, arguments):
    from pinn.run.rundir import check_cli_run_dir

    an_earlier_run(tmp_path)
    given = [a.format(run=tmp_path) for a in arguments] + [f"hydra.run.dir={tmp_path}"]
    check_cli_run_dir(given)
    assert (tmp_path / "metrics.json").read_text() == "earlier\n"  # nothing removed early


def test_the_early_check_refuses_an_unwritable_directory_and_resume_elsewhere(tmp_path):
    from pinn.run.rundir import check_cli_run_dir

    (tmp_path / "a_file").write_text("")
    with pytest.raises(OutputError, match=r"a_file/run cannot be written: Not a directory"):
        check_cli_run_dir([f"hydra.run.dir={tmp_path / 'a_file' / 'run'}"])
    an_earlier_run(tmp_path / "done")
    with pytest.raises(RunDirectoryError, match="holds the results of another run"):
        check_cli_run_dir([f"resume={tmp_path / 'other'}", f"hydra.run.dir={tmp_path / 'done'}"])
