"""fit's callbacks: each history row, checkpoint, change of phase and the end, in order."""

import csv

import pytest
import torch

from pinn import (
    MLP,
    Callback,
    ConfigError,
    HistoryFile,
    PointSampler,
    TrainSettings,
    fit,
    load_checkpoint,
)
from pinn.nn import InputOptions
from pinn.problems.poisson import Poisson
from pinn.training.distributed import World


class Calls(Callback):
    """Records every call: ("row", step, row), ("checkpoint", step, path, saved step),
    ("phase", old, new), ("end", steps, result)."""

    def __init__(self):
        self.calls = []

    def on_row(self, row, state):
        self.calls.append(("row", row["step"], row))

    def on_checkpoint(self, path, step, state):
        self.calls.append(("checkpoint", step, path, load_checkpoint(path)["step"]))

    def on_phase(self, old, new, state):
        self.calls.append(("phase", old, new))

    def on_end(self, result, state):
        self.calls.append(("end", result.steps, result))

    def kinds(self):
        return [call[:2] if call[0] != "phase" else call for call in self.calls]


def tiny_fit(tmp_path, callbacks, world=None, resume_from=None, **settings):
    problem = Poisson(hard_boundary=False)
    model = MLP(
        2,
        1,
        width=8,
        depth=2,
        inputs=InputOptions(lower=problem.domain.lower, upper=problem.domain.upper),
        generator=torch.Generator().manual_seed(0),
    ).double()
    points = PointSampler(
        problem.domain, 64, 32, "sobol", torch.Generator().manual_seed(1), dtype=torch.float64
    )
    options = dict(
        adam={"steps": 20}, lbfgs={"steps": 10}, log_every=5, checkpoint_every=10, progress=False
    )
    return fit(
        problem,
        model,
        TrainSettings(**(options | settings)),
        points,
        checkpoint_path=tmp_path / "checkpoint.pt",
        # history.csv first, as a run's default outputs.loggers has it; one callback as it is
        callbacks=[HistoryFile(tmp_path / "history.csv"), *callbacks]
        if isinstance(callbacks, list)
        else callbacks,
        world=world,
        resume_from=resume_from,
    )


def test_calls_come_in_order_rows_equal_the_history(tmp_path):
    calls = Calls()
    result = tiny_fit(tmp_path, [calls])
    adam_rows = [("row", step) for step in (0, 5, 10, 15)]
    expected = [
        *adam_rows[:2],
        ("checkpoint", 10),  # the state at the start of step 10, before its row
        *adam_rows[2:],
        ("phase", "adam", "lbfgs"),
        *[("row", step) for step in range(21, 26)],
        ("checkpoint", 25),  # between L-BFGS's chunks of log_every iterations
        *[("row", step) for step in range(26, 31)],
        ("phase", "lbfgs", "done"),
        ("row", 30),  # the final row
        ("checkpoint", 30),
        ("end", 30),
    ]
    assert calls.kinds() == expected
    assert [call[2] for call in calls.calls if call[0] == "row"] == result.history
    checkpoints = [call for call in calls.calls if call[0] == "checkpoint"]
    assert all(path == tmp_path / "checkpoint.pt" for _, _, path, _ in checkpoints)
    assert [saved for *_, saved in checkpoints] == [10, 25, 30]  # the file holds that state
    assert calls.calls[-1][2] is result


def test_a_callback_sees_the_row_history_csv_has_just_got(tmp_path):
    class ReadsTheFile(Callback):
        def __init__(self):
            self.matches = []

        def on_row(self, row, state):
            with open(tmp_path / "history.csv") as file:
                last = list(csv.DictReader(file))[-1]
            expected = {key: str(row.get(key, "")) for key in last}
            self.matches.append(last == expected and set(row) <= set(last))

    reader = ReadsTheFile()
    result = tiny_fit(tmp_path, [reader])
    assert len(reader.matches) == len(result.history) and all(reader.matches)


def test_a_callback_changing_its_row_leaves_the_history_alone(tmp_path):
    class Scribbles(Callback):
        def on_row(self, row, state):
            row["loss"] = -1.0

    calls = Calls()
    result = tiny_fit(tmp_path, [Scribbles(), calls], lbfgs={"steps": 0})
    assert all(row["loss"] > 0 for row in result.history)
    assert [call[2] for call in calls.calls if call[0] == "row"] == result.history


def test_without_lbfgs_adam_goes_straight_to_done(tmp_path):
    calls = Calls()
    tiny_fit(tmp_path, [calls], lbfgs={"steps": 0})
    assert [call for call in calls.calls if call[0] == "phase"] == [("phase", "adam", "done")]


def test_a_resumed_run_calls_from_where_it_takes_up(tmp_path):
    class KeepsStep10(Callback):
        def on_checkpoint(self, path, step, state):
            if step == 10:
                self.saved = load_checkpoint(path)

    keep = KeepsStep10()
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    whole = tiny_fit(tmp_path / "a", [keep], lbfgs={"steps": 0})
    calls = Calls()
    resumed = tiny_fit(tmp_path / "b", [calls], lbfgs={"steps": 0}, resume_from=keep.saved)
    rows = [call[2] for call in calls.calls if call[0] == "row"]
    assert [row["step"] for row in rows] == [10, 15, 20]  # the rows before came with the state
    assert rows == resumed.history[2:]
    assert [r["loss"] for r in resumed.history] == [r["loss"] for r in whole.history]
    with open(tmp_path / "b" / "history.csv") as file:
        assert [row["step"] for row in csv.DictReader(file)] == ["0", "5", "10", "15", "20"]


def test_a_finished_run_resumed_only_ends(tmp_path):
    tiny_fit(tmp_path, [], lbfgs={"steps": 0})
    calls = Calls()
    result = tiny_fit(tmp_path, [calls], lbfgs={"steps": 0}, resume_from=tmp_path / "checkpoint.pt")
    assert calls.kinds() == [("end", 20)] and calls.calls[0][2] is result


def test_ranks_other_than_0_call_no_callbacks(tmp_path):
    calls = Calls()
    # A world of one process that is not rank 0: nothing to reduce, but not the main process.
    result = tiny_fit(tmp_path, [calls], lbfgs={"steps": 0}, world=World(rank=1, size=1))
    assert calls.calls == [] and len(result.history) == 5
    assert not (tmp_path / "history.csv").exists()


def test_something_not_a_callback_is_refused_before_any_work(tmp_path):
    with pytest.raises(ConfigError, match=r"callbacks\[2\] is .*, not a pinn.Callback: subclass"):
        tiny_fit(tmp_path, [Calls(), print])
    assert not (tmp_path / "history.csv").exists()
    assert not (tmp_path / "checkpoint.pt").exists()


def test_one_callback_not_in_a_list_is_refused(tmp_path):
    with pytest.raises(ConfigError, match=r"takes a list of pinn.Callback, not one: callbacks=\["):
        tiny_fit(tmp_path, Calls())
