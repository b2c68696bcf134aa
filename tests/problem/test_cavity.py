"""The lid-driven cavity: its exact wall conditions, the regularised lid and its parameters."""

import math

import numpy as np
import pytest
import torch
from omegaconf import OmegaConf

from pinn import ConfigError, compose_config, load_problem
from pinn.problems.cavity import GHIA_U, GHIA_V, Cavity

F64 = torch.float64


def test_every_wall_condition_holds_exactly():
    problem = Cavity()
    s = torch.linspace(0, 1, 11, dtype=F64)
    zero, one = torch.zeros_like(s), torch.ones_like(s)
    lid = torch.stack([s, one], dim=1)
    g, b = problem.hard_constraint(lid)
    torch.testing.assert_close(g[:, 0], problem.lid(s))
    assert g[:, 1].abs().max() == 0 and b[:, :2].abs().max() < 1e-12
    for walls in (torch.stack([zero, s], 1), torch.stack([one, s], 1), torch.stack([s, zero], 1)):
        g, b = problem.hard_constraint(walls)
        assert g[:, :2].abs().max() < 1e-12 and b[:, :2].abs().max() < 1e-12
    inside = torch.tensor([[0.5, 0.5], [0.1, 0.9], [0.9, 0.05]], dtype=F64)
    g, b = problem.hard_constraint(inside)
    assert (b > 0).all() and (b[:, 2] == 1).all()  # the pressure is free everywhere


def test_the_lid_is_one_but_near_its_corners():
    problem = Cavity()
    x = torch.tensor([0.0, 0.01, 0.05, 0.1, 0.5, 0.9, 1.0], dtype=F64)
    lid = problem.lid(x)
    assert lid[0].abs() < 1e-12 and lid[-1].abs() < 1e-12 and lid[4] == pytest.approx(1.0)
    assert lid[1] == pytest.approx(1 - math.exp(-0.5), rel=1e-6)  # cosh(24.5) / cosh(25)
    assert (lid[3] > 0.99).all() and (lid[5] > 0.99).all() and 0.9 < lid[2] < 0.95
    sharper = Cavity(lid_sharpness=200.0).lid(x)
    assert sharper[1] > lid[1] and sharper[0].abs() < 1e-12


def test_ghia_reference_is_for_re_100_and_the_solve_up_to_re_1000():
    problem = Cavity()
    assert problem.has_reference
    reference = problem.reference()
    points, u = reference["u"]
    np.testing.assert_array_equal(points[:, 0], 0.5)
    np.testing.assert_array_equal(u, GHIA_U[:, 1])
    points, v = reference["v"]
    np.testing.assert_array_equal(points[:, 1], 0.5)
    np.testing.assert_array_equal(v, GHIA_V[:, 1])
    # problems/cavity_reference.py's solve (tests/problem/test_cavity_reference.py) up to 1000,
    # for lids no sharper than c = 50, where it was measured converged.
    assert Cavity(reynolds=400.0).has_reference and Cavity(reynolds=1000.0).has_reference
    assert not Cavity(reynolds=2000.0).has_reference
    assert not Cavity(reynolds=1000.0, lid_sharpness=100.0).has_reference


def test_cavity_re1000_is_the_cavity_at_re_1000():
    def loaded(*overrides):
        cfg = compose_config(list(overrides))
        return cfg.problem, load_problem(cfg.problem.target, dict(cfg.problem.params))

    own, own_problem = loaded("problem=cavity_re1000")
    overridden, overridden_problem = loaded("problem=cavity", "problem.params.reynolds=1000")
    assert own.target == overridden.target and own.params == overridden.params
    # The same run too: every setting but the Reynolds number is the cavity's.
    own_run = compose_config(["problem=cavity_re1000"])
    overridden_run = compose_config(["problem=cavity", "problem.params.reynolds=1000"])
    assert OmegaConf.to_container(own_run) == OmegaConf.to_container(overridden_run)
    assert (own_problem.reynolds, own_problem.lid_sharpness) == (1000.0, 50.0)
    for name, (points, values) in own_problem.reference().items():
        other_points, other_values = overridden_problem.reference()[name]
        np.testing.assert_array_equal(points, other_points)
        np.testing.assert_array_equal(values, other_values)
        assert len(values) == 129


def test_a_users_variant_yaml_takes_a_library_problems_yaml_by_its_defaults(tmp_path, monkeypatch):
    # docs/how-to/add-a-pde.md's way: conf/problem/<name>.yaml in the folder pinn runs from
    (tmp_path / "conf" / "problem").mkdir(parents=True)
    (tmp_path / "conf" / "problem" / "cavity_400.yaml").write_text(
        "# @package _global_\ndefaults:\n  - cavity\n  - _self_\n"
        "problem:\n  params:\n    reynolds: 400.0\n"
    )
    monkeypatch.chdir(tmp_path)
    variant = OmegaConf.to_container(compose_config(["problem=cavity_400"]))
    overridden = compose_config(["problem=cavity", "problem.params.reynolds=400"])
    assert variant == OmegaConf.to_container(overridden)
    assert variant["problem"]["params"]["reynolds"] == 400.0


@pytest.mark.parametrize("key", ["reynolds", "lid_sharpness"])
@pytest.mark.parametrize("bad", [0, -1.0, True, math.inf, "100"])
def test_bad_parameters_are_refused(key, bad):
    with pytest.raises(ConfigError, match=f"problem.params.{key} must be a number > 0"):
        Cavity(**{key: bad})
