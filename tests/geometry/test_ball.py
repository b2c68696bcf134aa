"""Balls in many dimensions."""

import pytest
import torch

from pinn import Ball, ConfigError
from pinn.geometry import SpaceTime


def test_a_ball_in_a_thousand_dimensions_draws_points():
    # Its volume and surface underflow a float (about 1e-1000): they stand at the smallest
    # positive float, so the sphere still counts as a boundary and points are drawn on it.
    ball = Ball([0.0] * 1000, 1.0)
    generator = torch.Generator().manual_seed(0)
    inside = ball.sample_interior(50, generator, "uniform", dtype=torch.float64)
    on = ball.sample_boundary(20, generator, "uniform", dtype=torch.float64)
    assert inside.shape == (50, 1000) and (inside.norm(dim=1) < 1).all()
    assert on.points.shape == (20, 1000)
    torch.testing.assert_close(on.points.norm(dim=1), torch.ones(20, dtype=torch.float64))
    assert 0 < ball.volume < 1e-300 and ball.part_names == ("sphere",)


def test_radius_uniform_points_spread_evenly_in_radius():
    # In 50 dimensions, uniform in volume puts the median radius at 0.5^(1/50) = 0.986;
    # radial="radius" spreads the radii evenly over [0, 1) instead (quartiles 0.25, 0.5, 0.75).
    generator = torch.Generator().manual_seed(0)
    by_volume = Ball([0.0] * 50, 2.0).sample_interior(4000, generator, "sobol", torch.float64)
    assert by_volume.norm(dim=1).median() / 2 > 0.98
    ball = Ball([1.0] * 50, 2.0, radial="radius")
    points = ball.sample_interior(4000, generator, "sobol", torch.float64)
    radii = (points - 1).norm(dim=1) / 2
    assert (radii < 1).all()
    quartiles = radii.quantile(torch.tensor([0.25, 0.5, 0.75], dtype=torch.float64))
    expected = torch.tensor([0.25, 0.5, 0.75], dtype=torch.float64)
    torch.testing.assert_close(quartiles, expected, atol=2e-3, rtol=0)


def test_interior_weights_integrate_with_either_radial_density():
    # ∫ |x|² over the unit ball in d dimensions is V d / (d + 2): weighted sums of both draws
    # reach it, while the plain mean of the radius-uniform points misses it by far.
    d, n = 6, 2**14
    for radial, tolerance in (("volume", 1e-3), ("radius", 2e-2)):
        ball = Ball([0.0] * d, 1.0, radial=radial)
        points = ball.sample_interior(n, torch.Generator().manual_seed(1), "sobol", torch.float64)
        weights = ball.interior_weights(points)
        exact = ball.volume * d / (d + 2)
        assert abs((weights * points.square().sum(dim=1)).sum() / exact - 1) < tolerance, radial
        assert abs(weights.sum() / ball.volume - 1) < tolerance, radial
    plain = ball.volume * points.square().sum(dim=1).mean()
    assert abs(plain / exact - 1) > 0.4


def test_an_unknown_radial_density_is_refused_with_the_choices():
    message = "Ball radial='shell' is unknown; choose one of volume, radius"
    with pytest.raises(ConfigError, match=message):
        Ball([0.0, 0.0, 0.0], 1.0, radial="shell")
    assert "radial='radius'" in repr(Ball([0.0] * 3, 1.0, radial="radius"))
    assert "radial" not in repr(Ball([0.0] * 3, 1.0))


def test_space_time_weights_carry_the_ball_density():
    # ∫_0^2 ∫_ball |x|² t dx dt = V d / (d + 2) · 2 over a radius-uniform ball in 4-D.
    ball = Ball([0.0] * 4, 1.0, radial="radius")
    domain = SpaceTime(ball, 0.0, 2.0)
    points = domain.sample_interior(2**14, torch.Generator().manual_seed(2), "sobol", torch.float64)
    weights = domain.interior_weights(points)
    integrand = points[:, :-1].square().sum(dim=1) * points[:, -1]
    exact = ball.volume * 4 / 6 * 2
    assert abs((weights * integrand).sum() / exact - 1) < 2e-2
