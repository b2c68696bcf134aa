"""Damped Kronecker-factored blocks (`pinn.training.optim.kronecker`): the solves of one and two
pairs against dense ones, and the damping's split between the factors."""

import pytest
import torch

from pinn.training.optim.kronecker import damp, kronecker_solve


def spd(n, seed):
    g = torch.Generator().manual_seed(seed)
    m = torch.randn(n, n, generator=g, dtype=torch.float64)
    return m @ m.T + 0.1 * torch.eye(n, dtype=torch.float64)


@pytest.mark.parametrize("pairs", [1, 2])
def test_kronecker_solve_equals_the_dense_solve(pairs):
    factors = [(spd(5, 2 * k), spd(3, 2 * k + 1)) for k in range(pairs)]
    gradient = torch.randn(3, 5, generator=torch.Generator().manual_seed(9), dtype=torch.float64)
    dense = sum(torch.kron(B, A) for A, B in factors)
    solved = kronecker_solve(factors, gradient)
    expected = torch.linalg.solve(dense, gradient.reshape(-1)).reshape(3, 5)
    assert (solved - expected).abs().max() <= 1e-10 * expected.abs().max()


def test_damping_is_split_between_the_factors_by_their_scales():
    A, B = spd(4, 0) * 100.0, spd(3, 1)
    damped_a, damped_b = damp(A, B, 1e-2)
    pi = ((A.trace() / 4) / (B.trace() / 3)).sqrt()
    eye4, eye3 = torch.eye(4, dtype=torch.float64), torch.eye(3, dtype=torch.float64)
    assert torch.allclose(damped_a - A, pi * 0.1 * eye4)
    assert torch.allclose(damped_b - B, 0.1 / pi * eye3)
