"""KFAC's curvature (`pinn.training.optim.kfac_curvature`): the moving averages, and the
preconditioner against the dense solve of the damped blocks."""

import pytest
import torch
from test_kronecker import spd
from torch import nn

from pinn.training.optim.kfac_curvature import KroneckerCurvature
from pinn.training.optim.kronecker import damp


def curvature_of_one_layer_and_an_unknown():
    """A Linear layer named "" (the whole model: its name is no key of anything else) of
    [W (2, 3) | b (2,)] and one unknown without factors."""
    layer, unknown = nn.Linear(3, 2).double(), torch.zeros(1, dtype=torch.float64)
    shapes = [layer.weight.shape, layer.bias.shape, unknown.shape]
    return KroneckerCurvature(shapes, {"": (0, 1)})


def test_the_preconditioner_is_the_dense_damped_blocks_solve():
    """Two pairs of factors and a diagonal: the direction equals the dense solve of the damped
    blocks, the layer's [W | b] laid out row by row, the unknown's by its diagonal."""
    curvature = curvature_of_one_layer_and_an_unknown()
    pairs = [(spd(4, 0), spd(2, 1)), (spd(4, 2), spd(2, 3))]
    diagonal = torch.tensor([0.0] * 8 + [2.0], dtype=torch.float64)
    curvature.average({"pde": {"": pairs[0]}, "conditions": {"": pairs[1]}}, diagonal, 0.0)
    g = torch.randn(9, generator=torch.Generator().manual_seed(4), dtype=torch.float64)
    tikhonov = curvature.tikhonov(0.1)
    direction = curvature.precondition(g, tikhonov)
    scale = sum(A.diagonal().mean() * B.diagonal().mean() for A, B in pairs)
    assert tikhonov[""] == pytest.approx(0.1 * scale.item())
    assert tikhonov[None] == pytest.approx(0.1 * 2.0)
    dense = sum(torch.kron(*reversed(damp(A, B, tikhonov[""] / 2))) for A, B in pairs)
    block = torch.cat([g[:6].view(2, 3), g[6:8, None]], dim=1).reshape(-1)
    solved = torch.linalg.solve(dense, block).view(2, 4)
    assert torch.allclose(direction[:6].view(2, 3), solved[:, :3], rtol=1e-10, atol=0)
    assert torch.allclose(direction[6:8], solved[:, 3], rtol=1e-10, atol=0)
    assert direction[8].item() == pytest.approx(g[8].item() / (2.0 + 0.2))
    damping = curvature.damping_vector(tikhonov)
    assert damping[:8].eq(tikhonov[""]).all() and damping[8] == tikhonov[None]


def test_the_averages_take_the_first_factors_as_they_are_then_blend():
    curvature = curvature_of_one_layer_and_an_unknown()
    first, second = (spd(4, 0), spd(2, 1)), (spd(4, 2), spd(2, 3))
    ones = torch.ones(9, dtype=torch.float64)
    curvature.average({"pde": {"": first}}, ones, 0.9)
    assert all(torch.equal(a, b) for a, b in zip(curvature.factors["pde"][""], first))
    curvature.average({"pde": {"": second}, "conditions": {"": second}}, 3 * ones, 0.9)
    A, B = curvature.factors["pde"][""]
    assert torch.allclose(A, 0.9 * first[0] + 0.1 * second[0])
    assert torch.allclose(B, 0.9 * first[1] + 0.1 * second[1])
    assert torch.equal(curvature.factors["conditions"][""][0], second[0])  # its first
    assert curvature.diagonal.tolist() == pytest.approx([1.2])  # the unknown's only
