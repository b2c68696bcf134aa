"""Every script in benchmarks/ takes `--device` (cpu by default), so each can be run on a GPU."""

import ast
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
SCRIPTS = sorted(BENCHMARKS.glob("*.py"))


def device_options(script: Path) -> list[ast.Call]:
    """The `add_argument("--device", ...)` calls of `script`."""
    calls = [node for node in ast.walk(ast.parse(script.read_text())) if isinstance(node, ast.Call)]
    return [
        call
        for call in calls
        if isinstance(call.func, ast.Attribute)
        and call.func.attr == "add_argument"
        and call.args
        and isinstance(call.args[0], ast.Constant)
        and call.args[0].value == "--device"
    ]


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda path: path.name)
def test_each_benchmark_takes_a_device(script):
    assert device_options(script), f"{script.name} has no --device option"
