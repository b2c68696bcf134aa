"""The linear solves of a damped Gauss-Newton step (`pinn.training.optim.levenberg_marquardt`).

delta = cholesky_solve(matrix, rhs)         # None when matrix is not positive definite
delta = conjugate_gradient(apply, rhs, diagonal, iterations, tolerance)
"""

from __future__ import annotations

from collections.abc import Callable

import torch


def cholesky_solve(matrix: torch.Tensor, rhs: torch.Tensor) -> torch.Tensor | None:
    """matrix^-1 rhs by Cholesky; None when the matrix is not positive definite."""
    factor, info = torch.linalg.cholesky_ex(matrix)
    if info.item() != 0:
        return None
    return torch.cholesky_solve(rhs[:, None], factor)[:, 0]


def conjugate_gradient(
    apply: Callable[[torch.Tensor], torch.Tensor],
    rhs: torch.Tensor,
    preconditioner: torch.Tensor,
    iterations: int,
    tolerance: float,
) -> torch.Tensor:
    """(P,) x with apply(x) = rhs for a symmetric positive definite `apply`, by preconditioned
    conjugate gradients from x = 0; `preconditioner` (P,) approximates apply's diagonal. Stops
    when |rhs - apply(x)| <= tolerance |rhs| or after `iterations` products."""
    x = torch.zeros_like(rhs)
    residual = rhs.clone()
    inverse = 1.0 / preconditioner.clamp_min(torch.finfo(rhs.dtype).tiny)
    z = inverse * residual
    direction = z.clone()
    rz = residual.dot(z)
    target = tolerance * rhs.norm()
    for _ in range(iterations):
        if residual.norm() <= target:
            break
        product = apply(direction)
        alpha = rz / direction.dot(product)
        x += alpha * direction
        residual -= alpha * product
        z = inverse * residual
        rz, previous = residual.dot(z), rz
        direction = z + (rz / previous) * direction
    return x
