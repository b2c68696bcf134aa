"""history.csv written as the run goes: rows appended, columns that appear late kept."""

import csv

from pinn.training.history import HistoryCSV


def read(path):
    with open(path) as file:
        return list(csv.DictReader(file))


def test_rows_are_appended_as_they_come(tmp_path):
    path = tmp_path / "history.csv"
    history = [{"step": 0, "loss": 1.0}]
    writer = HistoryCSV(path)
    writer.update(history)
    assert read(path) == [{"step": "0", "loss": "1.0"}]
    history.append({"step": 1, "loss": 0.5})
    writer.update(history)
    writer.update(history)  # nothing new: nothing written twice
    assert read(path) == [{"step": "0", "loss": "1.0"}, {"step": "1", "loss": "0.5"}]


def test_a_late_column_rewrites_the_file_with_every_column(tmp_path):
    path = tmp_path / "history.csv"
    writer = HistoryCSV(path)
    history = [{"step": 0, "loss": 1.0}]
    writer.update(history)
    history.append({"step": 1, "loss": 0.5, "rel_l2": 0.1})
    writer.update(history)
    assert read(path) == [
        {"step": "0", "loss": "1.0", "rel_l2": ""},
        {"step": "1", "loss": "0.5", "rel_l2": "0.1"},
    ]


def test_a_fresh_writer_replaces_an_old_file(tmp_path):
    path = tmp_path / "history.csv"
    path.write_text("step,loss\n7,9.0\n8,9.0\n")
    HistoryCSV(path).update([{"step": 0, "loss": 1.0}])
    assert read(path) == [{"step": "0", "loss": "1.0"}]
