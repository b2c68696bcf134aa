"""The README's "From Python" example runs as written, with small step and point counts: the
README is the only manual, so its code must stay the library's."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"

# What the test shrinks (each must be in the example, so a change to it is noticed here).
SMALLER = {
    "AdamSettings(steps=1000)": "AdamSettings(steps=20)",
    "LBFGSSettings(steps=1000)": "LBFGSSettings(steps=10)",
    "progress=True": "progress=False",
    "problem.domain, 4000, 400,": "problem.domain, 300, 40,",
    "pinn.fresh_loss(problem, model, 4000, 400,": "pinn.fresh_loss(problem, model, 300, 40,",
    '"trainer.adam.steps=500"': '"trainer.adam.steps=5", "trainer.gauss_newton.steps=2", '
    '"trainer.progress=false"',
}


def from_python_example() -> str:
    text = README.read_text()
    section = text[text.index("## From Python") :]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_the_from_python_example_runs_and_its_checkpoint_restores_the_model(tmp_path, monkeypatch):
    code = from_python_example()
    for before, after in SMALLER.items():
        assert before in code, f"the README's example no longer has {before!r}"
        code = code.replace(before, after)
    monkeypatch.chdir(tmp_path)  # its runs/ go here
    namespace: dict = {}
    exec(compile(code, "README.md (From Python)", "exec"), namespace)
    assert (tmp_path / "runs" / "py" / "checkpoint.pt").is_file()
    assert (tmp_path / "runs" / "py" / "loss.png").is_file()
    assert (tmp_path / "runs" / "quick" / "metrics.json").is_file()
    errors = namespace["validator"].errors(namespace["model"])
    assert errors["rel_l2"] < 0.5  # trained a little, and the restored weights are the trained
    assert namespace["result"].history[-1]["phase"] == "final"
