"""conf/experiment/: each ablation the documentation names composes, passes the checks, picks
its problem and changes what its comment says; more overrides go on top of it."""

import pytest

from pinn.config import CONF_DIR, check_config, compose_config

EXPERIMENTS = sorted(path.stem for path in (CONF_DIR / "experiment").glob("*.yaml"))
# experiment: (its problem's module, a key it sets, that key's value)
EXPECTED = {
    "burgers_deepxde": ("burgers", "trainer.adam.schedule", "constant"),
    "convection_one_network": ("convection", "windows.count", 0),
    "cylinder_gauss_newton": ("cylinder", "trainer.phases", ["adam", "lbfgs", "gauss_newton"]),
    "helmholtz_deepxde": ("helmholtz", "model.width", 150),
    "poisson_kfac": ("poisson", "trainer.phases", ["adam", "kfac"]),
    "poisson_soft": ("poisson", "problem.params", {"hard_boundary": False}),
}


def test_every_experiment_is_checked_here():
    assert sorted(EXPECTED) == EXPERIMENTS


@pytest.mark.parametrize("name", EXPERIMENTS)
def test_an_experiment_picks_its_problem_and_its_settings(name):
    module, key, value = EXPECTED[name]
    config = check_config(compose_config([f"experiment={name}"]))
    assert config.problem.target.startswith(f"pinn.problems.{module}.")
    block = config
    for part in key.split("."):
        block = getattr(block, part)
    assert block == value


def test_overrides_go_on_top_of_an_experiment():
    plain = check_config(compose_config(["experiment=poisson_soft"]))
    changed = check_config(compose_config(["experiment=poisson_soft", "trainer.weighting=lra"]))
    assert (plain.trainer.weighting, changed.trainer.weighting) == ("fixed", "lra")
    assert changed.problem.weights == {"dirichlet": 100.0}
