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


def load_script(name: str):
    """The module benchmarks/<name>.py (not a package: loaded from its path)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_optimizers_compares_uniform_and_residual_points_in_each_second_phase():
    """Each second-order method of benchmarks/optimizers.py runs once on points redrawn
    uniformly and once on points redrawn by residual, at the same interval, and the overrides
    compose over a yaml that sets its own refinement (burgers: RAD in bfgs every 100)."""
    import pinn

    script = load_script("optimizers")
    args = script.argparse.Namespace(
        scale=0.5, adam_factor=2, lbfgs=200, bfgs=300, redraw=50, gn_redraw=5
    )
    made = script.methods(args, adam_steps=1000, gn_steps=40)
    assert set(made) == {
        "adam",
        *(f"adam+{short}{rad}" for short in ("lbfgs", "gn", "bfgs") for rad in ("", "+rad")),
    }
    adam = pinn.compose_config(["problem=burgers", *made["adam"]]).trainer
    assert list(adam.phases) == ["adam"] and adam.adam.steps == 1000
    for short, phase, steps, every in (
        ("lbfgs", "lbfgs", 100, 50),
        ("gn", "gauss_newton", 20, 5),
        ("bfgs", "bfgs", 150, 50),
    ):
        uniform = pinn.compose_config(["problem=burgers", *made[f"adam+{short}"]])
        rad = pinn.compose_config(["problem=burgers", *made[f"adam+{short}+rad"]])
        for cfg in (uniform, rad):
            assert list(cfg.trainer.phases) == ["adam", phase]
            assert cfg.trainer.adam.steps == 500 and cfg.trainer[phase].steps == steps
        assert (uniform.trainer[phase].resample_every, uniform.trainer[phase].refine_every) == (
            every,
            0,
        )
        assert (rad.trainer[phase].resample_every, rad.trainer[phase].refine_every) == (0, every)
        assert rad.refinement.method == "rad"
        assert uniform.refinement.method == "none"  # no RAD left over from the yaml
