"""The phases of a run, chosen as a list (`TrainSettings.phases`, `trainer.phases`): each runs
in turn from the registry, the history and callbacks name it, and a run killed in any phase of
any order resumes bit for bit."""

import io

import pytest
import torch
from test_callbacks import Calls
from test_resume import WEIGHTS, flat, same_rows, tiny_parts

from pinn import ConfigError, LaplacianEstimator, TrainSettings, fit
from pinn.plots.loss import phase_switches
from pinn.training.phases import PHASES, AdamPhase, LBFGSPhase, phase_class
from pinn.training.phases.base import Phase

ORDERS = {
    "adam": ["adam"],
    "lbfgs": ["lbfgs"],
    "lbfgs,adam": ["lbfgs", "adam"],
    "adam,lbfgs,adam": ["adam", "lbfgs", "adam"],
    "gauss_newton": ["gauss_newton"],
    "adam,gauss_newton": ["adam", "gauss_newton"],
}


def settings_for(phases, **options):
    """Adam 12 steps (points redrawn every 5), L-BFGS 8 iterations, Gauss-Newton 6, a
    checkpoint every 3."""
    defaults = {
        "adam": {"steps": 12, "resample_every": 5},
        "lbfgs": {"steps": 8},
        "gauss_newton": {"steps": 6},
        "log_every": 4,
        "checkpoint_every": 3,
        "progress": False,
    }
    return TrainSettings(phases=phases, **(defaults | options))


def run(settings, **options):
    problem, model, points = tiny_parts()
    return model, fit(problem, model, settings, points, weights=WEIGHTS, **options)


def test_the_registry_finds_each_phase_by_name_and_refuses_others():
    assert phase_class("adam") is AdamPhase and phase_class("lbfgs") is LBFGSPhase
    assert all(issubclass(cls, Phase) and cls.name == name for name, cls in PHASES.items())
    for name, cls in PHASES.items():  # each registered phase has its settings block
        assert isinstance(getattr(TrainSettings(), name), cls.settings_type)
    with pytest.raises(ConfigError, match=r"'sgd' is no phase; choose from adam, lbfgs"):
        TrainSettings(phases=["adam", "sgd"])
    with pytest.raises(ConfigError, match="trainer.phases is empty"):
        TrainSettings(phases=[])
    with pytest.raises(ConfigError, match="trainer.phases must be a list"):
        TrainSettings(phases="adam")
    with pytest.raises(ConfigError, match="trainer.lbfgs has no key step; its keys are steps"):
        TrainSettings(lbfgs={"step": 3})


def test_the_defaults_are_adam_then_lbfgs_as_before():
    settings = TrainSettings()
    assert settings.phases == ["adam", "lbfgs"]
    assert (settings.adam.steps, settings.adam.lr, settings.adam.lr_decay) == (1000, 1e-3, 0.1)
    assert (settings.adam.schedule, settings.adam.resample_every) == ("exponential", 0)
    assert (settings.lbfgs.steps, settings.lbfgs.tolerance) == (1000, 0.0)
    assert (settings.lbfgs.stall_window, settings.lbfgs.stall_decrease) == (100, 1e-3)
    assert settings.lbfgs.history_size == 50


@pytest.mark.parametrize("order", ORDERS)
def test_each_order_runs_its_phases_in_turn_and_names_them(order):
    phases = ORDERS[order]
    calls = Calls()
    _, result = run(settings_for(phases), callbacks=[calls])
    steps = {"adam": 12, "lbfgs": 8, "gauss_newton": 6}
    assert result.steps == sum(steps[name] for name in phases)
    named = [row["phase"] for row in result.history]
    runs = [name for i, name in enumerate(named) if i == 0 or named[i - 1] != name]
    assert runs == [*phases, "final"]
    entered = [call[1:] for call in calls.calls if call[0] == "phase"]
    assert entered == list(zip(phases, [*phases[1:], "done"]))
    switches = phase_switches(result.history)
    assert [name for _, name in switches] == phases[1:]
    if phases[0] == "lbfgs":  # L-BFGS first: its rows from step 1, on the first points drawn
        assert [row["step"] for row in result.history[:8]] == list(range(1, 9))


def test_adam_after_another_phase_logs_from_its_own_first_step():
    _, result = run(settings_for(["lbfgs", "adam"], lbfgs={"steps": 3}, log_every=5))
    adam = [row["step"] for row in result.history if row["phase"] == "adam"]
    assert adam == [3, 8, 13]  # steps 0, 5, 10 of Adam's 12, after L-BFGS's 3


# The matrix-free Gauss-Newton step too: its Hutchinson draws are seeded by the iteration count.
MATRIX_FREE = {"gauss_newton": {"steps": 6, "solver": "cg", "cg_iterations": 50}}
ADAPTED = {"gauss_newton": {"steps": 6, "adapt_damping": True}}  # mu moves: in the state
RESUMED = {order: {} for order in ORDERS} | {
    "adam,gauss_newton (cg)": MATRIX_FREE,
    "adam,gauss_newton (nystrom)": {  # its sketch's draws too
        "gauss_newton": MATRIX_FREE["gauss_newton"]
        | {"preconditioner": "nystrom", "sketch_size": 8}
    },
    "adam,gauss_newton (adapted)": ADAPTED,
    "adam,gauss_newton (redrawn)": {"gauss_newton": {"steps": 6, "resample_every": 2}},
}


@pytest.mark.parametrize("order", RESUMED)
def test_a_run_resumed_from_any_checkpoint_of_any_order_ends_bit_identical(
    order, written_checkpoints
):
    order, options = order.split(" ")[0], RESUMED[order]
    settings = settings_for(ORDERS[order], **options)
    model, result = run(settings, checkpoint_path="unused.pt")
    states = [torch.load(io.BytesIO(data), weights_only=True) for data in written_checkpoints]
    where = {(s["training"]["phase_index"], s["training"]["phase"]) for s in states}
    assert {name for _, name in where} == {*ORDERS[order], "done"}  # every phase checkpointed
    for state in states:
        assert state["training"]["phases"] == ORDERS[order]
        resumed_model, resumed = run(settings, checkpoint_path="unused.pt", resume_from=state)
        at = f"resumed at step {state['step']} ({state['training']['phase']})"
        assert torch.equal(flat(resumed_model), flat(model)), at
        assert resumed.final_loss == result.final_loss, at
        assert same_rows(resumed.history) == same_rows(result.history), at


def test_resuming_with_another_phase_list_is_refused_in_one_line(written_checkpoints):
    run(settings_for(["adam", "lbfgs"]), checkpoint_path="unused.pt")
    state = torch.load(io.BytesIO(written_checkpoints[2]), weights_only=True)
    with pytest.raises(ConfigError) as refused:
        run(settings_for(["lbfgs", "adam"]), resume_from=state)
    message = str(refused.value)
    assert "\n" not in message
    assert "trained with trainer.phases=['adam', 'lbfgs'], this run has ['lbfgs', 'adam']" in (
        message
    )
    assert "give trainer.phases=[adam,lbfgs]" in message


@pytest.mark.parametrize(
    "block, message",
    [
        ({"damping": -1.0}, "trainer.gauss_newton.damping must be a finite number >= 0, got -1.0"),
        ({"damping": True}, "trainer.gauss_newton.damping must be a finite number >= 0, got True"),
        ({"solver": "qr"}, "trainer.gauss_newton.solver must be one of auto, parameters, rows"),
        ({"cg_iterations": 0}, "trainer.gauss_newton.cg_iterations must be a whole number >= 1"),
        ({"line_search": 1.5}, "trainer.gauss_newton.line_search must be a whole number >= 0"),
        ({"stall_decrease": 1.0}, "trainer.gauss_newton.stall_decrease must be in [0, 1)"),
        ({"max_tries": 0}, "trainer.gauss_newton.max_tries must be a whole number >= 1"),
        ({"adapt_damping": "yes"}, "trainer.gauss_newton.adapt_damping must be true or false"),
    ],
)
def test_bad_gauss_newton_settings_are_refused_naming_the_key(block, message):
    with pytest.raises(ConfigError) as refused:
        TrainSettings(phases=["gauss_newton"], gauss_newton=block)
    assert message in str(refused.value)


@pytest.mark.parametrize("phase", ["lbfgs", "bfgs", "gauss_newton", "kfac"])
@pytest.mark.parametrize(
    "block, message",
    [
        ({"stall_decrease": False}, "stall_decrease must be in [0, 1), got False"),
        ({"stall_decrease": float("nan")}, "stall_decrease must be in [0, 1), got nan"),
        ({"stall_window": -1}, "stall_window must be a whole number >= 0"),
        ({"resample_every": 2.5}, "resample_every must be a whole number >= 0"),
        ({"refine_every": True}, "refine_every must be a whole number >= 0"),
        ({"steps": "10"}, "steps must be a whole number >= 0"),
    ],
)
def test_the_stop_and_redraw_keys_are_checked_alike_in_every_second_order_phase(
    phase, block, message
):
    with pytest.raises(ConfigError) as refused:
        TrainSettings(phases=[phase], **{phase: block})
    assert f"trainer.{phase}.{message}" in str(refused.value)


@pytest.mark.parametrize("key", ["lr", "lr_decay"])
def test_a_bool_adam_rate_is_refused_as_no_number(key):
    with pytest.raises(ConfigError, match=f"trainer.adam.{key} must be a number > 0, got True"):
        TrainSettings(phases=["adam"], adam={key: True})


def test_a_phase_of_no_steps_is_skipped_unannounced():
    calls = Calls()
    _, result = run(settings_for(["adam", "lbfgs"], lbfgs={"steps": 0}), callbacks=[calls])
    assert result.steps == 12
    assert [call for call in calls.calls if call[0] == "phase"] == [("phase", "adam", "done")]


def test_a_stochastic_laplacian_refuses_the_phases_that_need_an_exact_loss():
    problem, model, points = tiny_parts()
    estimator = LaplacianEstimator(1, "sparse", torch.Generator().manual_seed(0))
    with pytest.raises(ConfigError, match=r"lbfgs needs a deterministic one .*phases=\[adam\]"):
        fit(problem, model, settings_for(["lbfgs", "adam"]), points, estimator=estimator)


def test_the_progress_bar_names_the_phase_it_is_in(capsys):
    run(settings_for(["lbfgs", "adam"], progress=True))
    shown = capsys.readouterr().err
    assert shown.index("lbfgs:") < shown.index("adam:") < shown.index("done:")
    assert "/20" in shown  # the bar counts every phase's steps: 8 + 12
