"""A resumed run may change its L-BFGS or Gauss-Newton budget: it then ends bit for bit as a
fresh run with the new budget, from any checkpoint where that is possible, and is refused,
saying why, where it is not (a phase already left, fewer steps than taken, Adam, a finished
run, time windows)."""

import io
from pathlib import Path

import pytest
import torch
from omegaconf import OmegaConf
from test_resume import RUN as RESUME_RUN
from test_resume import WEIGHTS, flat, same_rows, tiny_parts

from pinn import ConfigError, TrainSettings, compose_config, fit, save_checkpoint, train
from pinn.run.resume import check_same_run


def settings(lbfgs: int = 6, gauss_newton: int = 8, adam: int = 6) -> TrainSettings:
    return TrainSettings(
        phases=["adam", "lbfgs", "gauss_newton"],
        adam={"steps": adam},
        lbfgs={"steps": lbfgs, "stall_window": 0},
        gauss_newton={"steps": gauss_newton, "stall_window": 0},
        log_every=2,
        checkpoint_every=2,
        progress=False,
    )


def run(budgets: TrainSettings, resume_from=None, checkpoint_path=None):
    """(model, FitResult) of the tiny Poisson problem of test_resume with these settings."""
    problem, model, points = tiny_parts()
    result = fit(
        problem,
        model,
        budgets,
        points,
        weights=WEIGHTS,
        checkpoint_path=checkpoint_path,
        resume_from=resume_from,
    )
    return model, result


def written_while(train_it) -> list[dict]:
    """Every checkpoint `train_it()` writes, as written to disk and read back at that moment
    (the live parameters move on)."""
    written = []

    def keep(path, state):
        buffer = io.BytesIO()
        torch.save(state, buffer)
        written.append(torch.load(io.BytesIO(buffer.getvalue()), weights_only=True))

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("pinn.training.checkpoints.save_checkpoint", keep)
        train_it()
    return written


@pytest.fixture(scope="module")
def checkpoints():
    """Every checkpoint of the run with the budgets of `settings()`."""
    return written_while(lambda: run(settings(), checkpoint_path="unused.pt"))  # not written


def in_phase(checkpoints, phase: str) -> list[dict]:
    return [c for c in checkpoints if c["training"]["phase"] == phase and c["step"] > 0]


def taken(checkpoint: dict) -> int:
    return checkpoint["step"] - checkpoint["training"]["phase_start"]


def assert_ends_as(resumed, fresh, where: str) -> None:
    (resumed_model, resumed_result), (fresh_model, fresh_result) = resumed, fresh
    assert torch.equal(flat(resumed_model), flat(fresh_model)), where
    assert resumed_result.final_loss == fresh_result.final_loss, where
    assert same_rows(resumed_result.history) == same_rows(fresh_result.history), where


@pytest.mark.parametrize("new_budget", [4, 12])
def test_a_changed_gauss_newton_budget_ends_as_a_fresh_run_with_it(checkpoints, new_budget):
    fresh = run(settings(gauss_newton=new_budget))
    assert fresh[1].steps == 6 + 6 + new_budget
    resumable = [c for c in in_phase(checkpoints, "gauss_newton") if taken(c) <= new_budget]
    resumable += in_phase(checkpoints, "lbfgs")  # before the phase: its budget is whole
    assert len(resumable) >= 3
    for checkpoint in resumable:
        where = f"resumed at step {checkpoint['step']} ({checkpoint['training']['phase']})"
        assert_ends_as(run(settings(gauss_newton=new_budget), checkpoint), fresh, where)


def test_a_changed_lbfgs_budget_ends_as_a_fresh_run_with_it(checkpoints):
    fresh = run(settings(lbfgs=10))
    for checkpoint in in_phase(checkpoints, "lbfgs") + in_phase(checkpoints, "adam")[-1:]:
        where = f"resumed at step {checkpoint['step']} ({checkpoint['training']['phase']})"
        assert_ends_as(run(settings(lbfgs=10), checkpoint), fresh, where)


def test_budgets_that_would_not_continue_the_run_are_refused(checkpoints):
    (late,) = [c for c in in_phase(checkpoints, "gauss_newton") if taken(c) == 6]  # of 8
    with pytest.raises(ConfigError, match="has taken 6 gauss_newton steps already; give "):
        run(settings(gauss_newton=5), late)
    with pytest.raises(ConfigError, match="finished its lbfgs phase and gone on to gauss_newton"):
        run(settings(lbfgs=10), late)
    with pytest.raises(ConfigError, match="Adam's learning rate falls over it"):
        run(settings(adam=8), in_phase(checkpoints, "lbfgs")[0])
    assert checkpoints[-1]["training"]["phase"] == "done"
    with pytest.raises(ConfigError, match="the run has finished"):
        run(settings(gauss_newton=12), checkpoints[-1])
    with pytest.raises(ConfigError, match="other settings"):  # any other key: as before
        changed = settings()
        changed.gauss_newton.damping = 1e-6
        run(changed, late)


# test_resume's tiny Poisson run, with Adam then Gauss-Newton.
RUN = [o for o in RESUME_RUN if not o.startswith("trainer.") or "progress" in o] + [
    "trainer.phases=[adam,gauss_newton]",
    "trainer.adam.steps=4",
    "trainer.log_every=2",
    "trainer.checkpoint_every=2",
    "trainer.gauss_newton.stall_window=0",
]


def test_the_command_line_resumes_with_a_changed_budget(tmp_path):
    """`resume=<run dir> trainer.gauss_newton.steps=N`: checked against the checkpoint before
    anything is written, then the fresh run's metrics."""
    written = written_while(
        lambda: train(compose_config([*RUN, "trainer.gauss_newton.steps=10"]), tmp_path / "a")
    )
    (middle,) = [s for s in in_phase(written, "gauss_newton") if s["step"] == 8]
    stopped = tmp_path / "stopped"
    stopped.mkdir()
    save_checkpoint(stopped / "checkpoint.pt", middle)  # as a run killed there
    fresh = train(compose_config([*RUN, "trainer.gauss_newton.steps=6"]), tmp_path / "fresh")
    resumed = train(
        compose_config([*RUN, "trainer.gauss_newton.steps=6", f"resume={stopped}"]),
        tmp_path / "resumed",
    )
    for key in ("rel_l2", "max_abs_error", "final_loss", "steps"):
        assert resumed[key] == fresh[key], key
    with pytest.raises(ConfigError, match="has taken 4 gauss_newton steps already"):
        train(
            compose_config([*RUN, "trainer.gauss_newton.steps=3", f"resume={stopped}"]),
            tmp_path / "refused",
        )
    assert not (tmp_path / "refused" / "metrics.json").exists()


def test_time_windows_keep_their_budgets():
    saved = OmegaConf.to_container(compose_config(["problem=convection"]), resolve=True)
    current = OmegaConf.to_container(
        compose_config(["problem=convection", "trainer.gauss_newton.steps=40"]), resolve=True
    )
    with pytest.raises(ConfigError, match="trainer.gauss_newton.steps=40 \\(saved: 25\\)"):
        check_same_run(saved, current, Path("run/checkpoint.pt"))
    single = {**saved, "windows": {**saved["windows"], "count": 0}}
    check_same_run(single, {**current, "windows": single["windows"]}, Path("run/checkpoint.pt"))
