"""The config's phase keys: trainer.phases and a block per phase, checked by the schema,
explained by --help, and fixed on resume (only trainer.progress and checkpoint_every move)."""

from pathlib import Path

import pytest
from omegaconf import OmegaConf

from pinn import ConfigError, compose_config, train
from pinn.config.docs import key_docs
from pinn.config.schema import check_config
from pinn.run.resume import check_same_run
from pinn.training.phases import PHASES
from pinn.training.settings import TrainSettings


def resolved(*overrides):
    return OmegaConf.to_container(compose_config(list(overrides)), resolve=True)


def test_every_phase_has_its_block_in_the_config_and_each_key_its_explanation():
    cfg = compose_config([])
    # TrainSettings' list, the default (poisson.yaml, the default problem, sets its own)
    assert TrainSettings().phases == ["adam", "lbfgs"]
    assert list(cfg.trainer.phases) == ["adam", "bfgs"]
    docs = key_docs()
    for name in PHASES:
        block = cfg.trainer[name]
        assert set(block) == set(PHASES[name].settings_type.__dataclass_fields__), name
        assert all(docs[f"trainer.{name}.{key}"] for key in block), name
    assert docs["trainer.phases"].startswith("training methods in order")


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("trainer.phases=[adam,sgd]", "trainer.phases: 'sgd' is no phase; choose from adam, lbfgs"),
        ("trainer.phases=[]", "trainer.phases is empty"),
        ("trainer.adam.steps=-1", "trainer.adam.steps must be"),
        ("trainer.lbfgs.tolerance=2.0", "trainer.lbfgs.tolerance must be in [0, 1)"),
    ],
)
def test_wrong_phase_settings_are_refused_in_one_line(override, message, tmp_path):
    with pytest.raises(ConfigError) as refused:
        train(compose_config([override]), run_dir=tmp_path)
    assert message in str(refused.value) and "\n" not in str(refused.value)


def test_the_old_flat_keys_point_at_their_new_place():
    for old, new in [
        ("trainer.steps", "trainer.adam.steps"),  # phases-rename: keep
        ("trainer.lbfgs_steps", "trainer.lbfgs.steps"),  # phases-rename: keep
        ("trainer.lbfgs_stall_window", "trainer.lbfgs.stall_window"),  # phases-rename: keep
        ("trainer.resample_every", "trainer.adam.resample_every"),  # phases-rename: keep
    ]:
        with pytest.raises(ConfigError, match=f"did you mean {new}\\?"):
            check_config(compose_config([f"+{old}=1"]))


def test_on_resume_the_phases_and_their_settings_are_fixed_but_display_keys_free():
    saved, path = resolved(), Path("run/checkpoint.pt")
    check_same_run(saved, resolved("trainer.progress=false", "trainer.checkpoint_every=7"), path)
    # checked against the checkpoint instead (tests/training/test_budgets.py)
    check_same_run(saved, resolved("trainer.lbfgs.steps=5"), path)
    for changed in ("trainer.phases=[lbfgs]", "trainer.adam.lr=0.01", "trainer.adam.steps=5"):
        with pytest.raises(ConfigError, match=changed.split("=")[0]) as refused:
            check_same_run(saved, resolved(changed), path)
        assert "\n" not in str(refused.value)


def test_a_run_saved_before_a_key_existed_resumes_with_that_keys_default():
    saved, path = resolved(), Path("run/checkpoint.pt")
    del saved["trainer"]["causal"]  # as a checkpoint written before trainer.causal was added
    check_same_run(saved, resolved(), path)  # the current default: chunks 0, what it ran with
    with pytest.raises(ConfigError, match=r"trainer.causal.chunks=8 \(saved: 0\)"):
        check_same_run(saved, resolved("trainer.causal.chunks=8"), path)


def test_the_block_of_a_phase_neither_run_lists_is_not_compared_on_resume():
    """A library yaml may come to set a block of a phase a run was not started with (poisson's
    `trainer.bfgs.resample_every`): it changes no number of an [adam,lbfgs] run."""
    started = ("trainer.phases=[adam,lbfgs]",)
    saved, path = resolved(*started, "trainer.bfgs.resample_every=0"), Path("run/checkpoint.pt")
    check_same_run(saved, resolved(*started, "trainer.bfgs.resample_every=100"), path)
    with pytest.raises(ConfigError, match=r"trainer.lbfgs.resample_every=100 \(saved: 0\)"):
        check_same_run(saved, resolved(*started, "trainer.lbfgs.resample_every=100"), path)
    with pytest.raises(ConfigError, match=r"trainer.bfgs.resample_every=100 \(saved: 0\)"):
        listed = ("trainer.phases=[adam,bfgs]",)
        check_same_run(
            resolved(*listed, "trainer.bfgs.resample_every=0"),
            resolved(*listed, "trainer.bfgs.resample_every=100"),
            path,
        )
