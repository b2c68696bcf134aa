"""The refinement's keys: the method in the `refinement` group, the interval each phase's
(`trainer.<phase>.refine_every`); `refinement.every`, Adam's interval before, refused naming its
new place, and a saved run's config that has it read as the run computed."""

from pathlib import Path

import pytest
from hydra.errors import HydraException
from omegaconf import OmegaConf

from pinn import ConfigError, compose_config
from pinn.config.docs import key_docs
from pinn.config.schema import check_config, upgraded
from pinn.run.reporting import one_line
from pinn.run.resume import check_same_run

CHECKPOINT = Path("run/checkpoint.pt")
MOVED = "config key 'refinement.every' has moved: write trainer.adam.refine_every=<steps>"


def test_refinement_every_is_refused_saying_where_it_went():
    with pytest.raises(HydraException) as composing:  # python -m pinn refinement.every=250
        compose_config(["refinement.method=rad", "refinement.every=250"])
    assert one_line(composing.value, key_docs()).startswith(MOVED)
    with pytest.raises(ConfigError) as checking:  # the key added to the config regardless
        check_config(compose_config(["+refinement.every=250"]))
    assert str(checking.value).startswith(MOVED) and "\n" not in str(checking.value)


def test_every_phase_has_a_refine_every_and_the_method_names_them():
    config = check_config(
        compose_config(
            [
                "refinement.method=rad",
                "trainer.phases=[adam,lbfgs,gauss_newton]",
                "trainer.lbfgs.refine_every=100",
                "trainer.gauss_newton.refine_every=10",
            ]
        )
    )
    trainer = config.trainer
    assert (trainer.adam.refine_every, trainer.lbfgs.refine_every) == (0, 100)
    assert trainer.gauss_newton.refine_every == 10
    docs = key_docs()
    for phase in ("adam", "lbfgs", "gauss_newton", "bfgs"):
        assert "refinement.method" in docs[f"trainer.{phase}.refine_every"]
    assert "refine_every" in docs["refinement.method"]


@pytest.mark.parametrize(
    "overrides, message",
    [
        (
            ["trainer.bfgs.refine_every=5"],
            "trainer.bfgs.refine_every=5 refines the points by their residual, but "
            "refinement.method=none",
        ),
    ],
)
def test_settings_that_do_not_fit_together_are_refused_by_the_schema(overrides, message):
    with pytest.raises(ConfigError) as refused:
        check_config(compose_config(overrides))
    assert message in str(refused.value) and "\n" not in str(refused.value)
    # A method no listed phase refines by is no error: a yaml's refinement, its phase taken out
    # on the command line (fit warns of it).
    check_config(compose_config(["problem=burgers", "trainer.phases=[adam,gauss_newton]"]))


def saved_before(method: str, every: int) -> dict:
    """A run's config as a pinn with `refinement.every` saved it."""
    config = OmegaConf.to_container(compose_config(["problem=poisson"]), resolve=True)
    for phase in ("adam", "lbfgs", "gauss_newton", "bfgs"):
        del config["trainer"][phase]["refine_every"]
    config["refinement"] = {**config["refinement"], "method": method, "every": every}
    return config


def test_a_saved_run_that_refined_reads_as_adam_refining_at_that_interval():
    config = upgraded(saved_before("rad", 250))
    assert "every" not in config["refinement"] and config["refinement"]["method"] == "rad"
    assert config["trainer"]["adam"]["refine_every"] == 250
    assert (
        config["trainer"]["adam"]["steps"] == saved_before("rad", 250)["trainer"]["adam"]["steps"]
    )
    current = OmegaConf.to_container(
        compose_config(
            ["problem=poisson", "refinement.method=rad", "trainer.adam.refine_every=250"]
        ),
        resolve=True,
    )
    check_same_run(saved_before("rad", 250), current, CHECKPOINT)  # the same run
    with pytest.raises(ConfigError, match=r"trainer.adam.refine_every=250 \(saved: 500\)"):
        check_same_run(saved_before("rad", 500), current, CHECKPOINT)


def test_a_saved_run_that_did_not_refine_reads_as_no_phase_refining():
    config = upgraded(saved_before("none", 500))
    assert "every" not in config["refinement"]
    assert "refine_every" not in config["trainer"]["adam"]  # pinn's default, 0, fills it
    current = OmegaConf.to_container(compose_config(["problem=poisson"]), resolve=True)
    check_same_run(saved_before("none", 500), current, CHECKPOINT)
