"""Checkpoints: atomic writes keep the last good file; bad files get a clear error."""

import pytest
import torch

from pinn import CheckpointError, load_checkpoint, save_checkpoint


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
