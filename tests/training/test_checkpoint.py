"""Checkpoints: atomic writes keep the last good file; bad files get a clear error."""

import errno
import os

import pytest
import torch

from pinn import CheckpointError, load_checkpoint, save_checkpoint
from pinn.errors import OutputError
from pinn.training.history import HistoryCSV


def test_round_trip(tmp_path):
    path = tmp_path / "checkpoint.pt"
    save_checkpoint(path, {"step": 7, "model": {"w": torch.arange(3.0)}, "history": [{"a": 1.0}]})
    state = load_checkpoint(path)
    assert state["step"] == 7
    assert torch.equal(state["model"]["w"], torch.arange(3.0))
    assert state["history"] == [{"a": 1.0}]


def test_a_write_that_dies_midway_leaves_the_previous_checkpoint(tmp_path, monkeypatch):
    path = tmp_path / "checkpoint.pt"
    save_checkpoint(path, {"step": 1})

    def dies_midway(obj, file):
        file.write(b"half a checkpoint")
        raise KeyboardInterrupt("killed while writing")

    monkeypatch.setattr(torch, "save", dies_midway)
    with pytest.raises(KeyboardInterrupt):
        save_checkpoint(path, {"step": 2})
    monkeypatch.undo()
    assert load_checkpoint(path)["step"] == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint.pt"]  # no temp files left


def test_corrupt_and_foreign_files_are_refused(tmp_path):
    corrupt = tmp_path / "corrupt.pt"
    corrupt.write_bytes(b"not a torch file at all")
    with pytest.raises(CheckpointError, match="not a readable pinn checkpoint"):
        load_checkpoint(corrupt)

    foreign = tmp_path / "foreign.pt"
    torch.save({"weights": torch.zeros(2)}, foreign)
    with pytest.raises(CheckpointError, match="not a pinn checkpoint"):
        load_checkpoint(foreign)

    with pytest.raises(CheckpointError, match="no checkpoint at"):
        load_checkpoint(tmp_path / "missing.pt")


@pytest.mark.parametrize(
    "failure, reason",
    [
        (OSError(errno.ENOSPC, "No space left on device"), "No space left on device"),
        (RuntimeError("[enforce fail at inline_container.cc:672] . unexpected pos 64"), "full?"),
    ],
)
def test_a_full_disk_is_one_line_naming_the_file_and_keeps_the_last_checkpoint(
    tmp_path, monkeypatch, failure, reason
):
    path = tmp_path / "checkpoint.pt"
    save_checkpoint(path, {"step": 1})

    def full(obj, file):
        file.write(b"part of a checkpoint")
        raise failure

    monkeypatch.setattr(torch, "save", full)
    with pytest.raises(OutputError) as failed:
        save_checkpoint(path, {"step": 2})
    monkeypatch.undo()
    message = str(failed.value)
    assert message.startswith(f"cannot write the checkpoint {path}: ") and reason in message
    assert "the last one written there is unchanged" in message and "\n" not in message
    assert load_checkpoint(path)["step"] == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint.pt"]  # no temp file


def test_a_checkpoint_under_a_regular_file_is_refused_in_one_line(tmp_path):
    (tmp_path / "file").write_text("")
    with pytest.raises(OutputError, match=r"cannot write the checkpoint .*file/run/checkpoint.pt"):
        save_checkpoint(tmp_path / "file" / "run" / "checkpoint.pt", {"step": 1})


def test_the_checkpoint_gets_the_mode_of_any_new_file(tmp_path):
    previous = os.umask(0o027)
    try:
        save_checkpoint(tmp_path / "checkpoint.pt", {"step": 1})
        (tmp_path / "other").write_text("")
    finally:
        os.umask(previous)
    assert (tmp_path / "checkpoint.pt").stat().st_mode & 0o777 == 0o640
    assert (tmp_path / "other").stat().st_mode & 0o777 == 0o640


def test_a_history_that_cannot_be_written_names_the_file():
    with pytest.raises(OutputError, match=r"cannot write the history /dev/full: No space left"):
        HistoryCSV("/dev/full").update([{"step": 0, "loss": 1.0}])
