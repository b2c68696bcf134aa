"""Balls in many dimensions."""

import torch

from pinn import Ball


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
