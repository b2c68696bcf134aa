"""The time-dependent library problems refuse a parameter that is not a number > 0, naming it
(a string from the command line included: a ConfigError, never a TypeError)."""

import math

import pytest

from pinn import ConfigError
from pinn.problems.allen_cahn import AllenCahn
from pinn.problems.kdv import KdV


@pytest.mark.parametrize(("problem", "key"), [(AllenCahn, "diffusion"), (KdV, "mu")])
@pytest.mark.parametrize("bad", [0.0, -1e-4, math.nan, math.inf, "small", True])
def test_a_bad_parameter_is_refused_by_its_key(problem, key, bad):
    with pytest.raises(ConfigError, match=f"problem.params.{key} must be a number > 0, got"):
        problem(**{key: bad})


@pytest.mark.parametrize(("problem", "key"), [(AllenCahn, "diffusion"), (KdV, "mu")])
def test_a_good_parameter_is_kept(problem, key):
    assert getattr(problem(**{key: 3e-3}), key) == 3e-3
