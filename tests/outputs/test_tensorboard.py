"""The loggers of `outputs.loggers`: tensorboard's event file holds history.csv's rows,
history.csv comes as the run goes; bad choices refused up front."""

import csv
import math
import sys
from pathlib import Path

import pytest
from tensorboard_helpers import events

import pinn.run.train
from pinn import Callback, ConfigError, compose_config, load_checkpoint, train
from pinn.config.schema import check_config
from pinn.outputs.tensorboard import TENSORBOARD_DIR
from pinn.run.resume import check_same_run

TENSORBOARD = "outputs.loggers=[history,tensorboard]"
TINY = [
    "trainer.adam.steps=20",
    "trainer.lbfgs.steps=5",
    "trainer.gauss_newton.steps=5",
    "trainer.bfgs.steps=5",
    "trainer.log_every=5",
    "trainer.checkpoint_every=10",
    "trainer.progress=false",
    "problem.n_interior=64",
    "problem.n_boundary=32",
    "problem.params.hard_boundary=false",  # a second loss term, "dirichlet"
    "model.width=8",
    "model.depth=2",
    "threads=1",
]


def history_scalars(path: Path) -> dict[str, list[tuple[int, float]]]:
    """What the logger should have written, from history.csv: {tag: [(step, value), ...]}."""
    with open(path) as file:
        rows = list(csv.DictReader(file))
    columns = {"loss": "loss", "loss/pde": "pde", "loss/dirichlet": "dirichlet"}
    columns |= {"rel_l2": "rel_l2", "lr": "lr"}
    if rows and "gn_length" in rows[0]:  # a run with a Gauss-Newton phase
        columns |= {"gauss_newton/length": "gn_length", "gauss_newton/damping": "gn_damping"}
    return {
        tag: [
            (int(row["step"]), float(row[column]))
            for row in rows
            if row[column] != "" and not math.isnan(float(row[column]))
        ]
        for tag, column in columns.items()
    }


def assert_same(logged, expected):
    assert sorted(logged) == sorted(expected)
    for tag, points in expected.items():
        assert [step for step, _ in logged[tag]] == [step for step, _ in points], tag
        # TensorBoard keeps scalars as float32
        assert [value for _, value in logged[tag]] == pytest.approx(
            [value for _, value in points], rel=1e-6
        ), tag


def test_the_event_file_holds_every_history_row(tmp_path):
    old = tmp_path / TENSORBOARD_DIR / "events.out.tfevents.0.old"  # an earlier run's
    old.parent.mkdir()
    old.write_bytes(b"not an event file")
    train(compose_config([*TINY, TENSORBOARD]), tmp_path)
    assert not old.exists() and len(list(old.parent.iterdir())) == 1
    logged = events(tmp_path / TENSORBOARD_DIR)
    expected = history_scalars(tmp_path / "history.csv")
    assert_same(logged, expected)
    assert [step for step, _ in logged["lr"]] == [0, 5, 10, 15]  # Adam's rows only
    assert len(logged["loss"]) == 4 + 5 + 1  # Adam, L-BFGS, final
    assert len(logged["rel_l2"]) == 4 + 1 + 1  # L-BFGS validates every log_every iterations


def test_a_run_resumed_with_the_logger_logs_the_rows_from_before_too(tmp_path, monkeypatch):
    class KeepsStep10(Callback):
        def on_checkpoint(self, path, step, state):
            if step == 10:
                (tmp_path / "early").mkdir()
                (tmp_path / "early" / "checkpoint.pt").write_bytes(Path(path).read_bytes())

    monkeypatch.setattr(pinn.run.train, "run_loggers", lambda names, run_dir: [KeepsStep10()])
    train(compose_config(TINY), tmp_path / "whole")  # no logger
    monkeypatch.undo()
    assert load_checkpoint(tmp_path / "early" / "checkpoint.pt")["step"] == 10
    resumed = tmp_path / "resumed"
    train(compose_config([*TINY, TENSORBOARD, f"resume={tmp_path / 'early'}"]), resumed)
    expected = history_scalars(resumed / "history.csv")
    assert [step for step, _ in expected["loss"]][:3] == [0, 5, 10]
    assert_same(events(resumed / TENSORBOARD_DIR), expected)


def test_an_unknown_logger_is_refused_before_any_work(tmp_path):
    message = r"outputs.loggers: 'wandb' is no logger; choose from history, tensorboard"
    with pytest.raises(ConfigError, match=message):
        train(compose_config([*TINY, "outputs.loggers=[history,wandb]"]), tmp_path / "run")
    assert not (tmp_path / "run").exists()


def test_the_key_of_before_0_2_is_refused_saying_where_it_went(tmp_path):
    with pytest.raises(ConfigError, match=r"'logger' has moved: write outputs.loggers=\[history,"):
        check_config(compose_config([*TINY, "+logger=tensorboard"]))


def test_without_the_history_logger_history_csv_comes_at_the_end(tmp_path):
    class ReadsTheFile(Callback):
        seen = []

        def on_row(self, row, state):
            self.seen.append((tmp_path / "history.csv").exists())

    reader = ReadsTheFile()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(pinn.run.train, "run_loggers", lambda names, run_dir: [reader])
        train(compose_config([*TINY, "outputs.loggers=[]"]), tmp_path)
    assert reader.seen and not any(reader.seen)  # not written as the run went
    with open(tmp_path / "history.csv") as file:
        assert len(list(csv.DictReader(file))) == len(reader.seen)


def test_tensorboard_missing_is_refused_naming_the_extra(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch.utils.tensorboard", None)  # import fails
    with pytest.raises(ConfigError, match=r'pip install "pinn-torch\[tensorboard\]"'):
        train(compose_config([*TINY, TENSORBOARD]), tmp_path / "run")
    assert not (tmp_path / "run").exists()


def test_loggers_may_change_on_resume(tmp_path):
    saved = {"outputs": {"loggers": ["history"]}, "model": {"width": 8}}
    loggers = {"loggers": ["history", "tensorboard"]}
    check_same_run(saved, {"outputs": loggers, "model": {"width": 8}}, tmp_path)
    with pytest.raises(ConfigError, match="model.width=16"):
        check_same_run(saved, {"outputs": loggers, "model": {"width": 16}}, tmp_path)


def test_a_run_of_before_0_2_with_its_logger_key_resumes(tmp_path):
    saved = {"logger": None, "model": {"width": 8}}  # no outputs.loggers: pinn's default
    loggers = {"loggers": ["history", "tensorboard"]}
    check_same_run(saved, {"outputs": loggers, "model": {"width": 8}}, tmp_path)
