"""The linear solves of a damped Gauss-Newton step (`pinn.training.optim.levenberg_marquardt`).

delta = cholesky_solve(matrix, rhs)         # None when matrix is not positive definite
delta = conjugate_gradient(apply, rhs, diagonal, iterations, tolerance)
delta = conjugate_gradient(apply, rhs, precondition, iterations, tolerance)   # r -> M^-1 r
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
    preconditioner: torch.Tensor | Callable[[torch.Tensor], torch.Tensor],
    iterations: int,
    tolerance: float,
) -> torch.Tensor:
    """(P,) x with apply(x) = rhs for a symmetric positive definite `apply`, by preconditioned
    conjugate gradients from x = 0. `preconditioner` is a (P,) tensor approximating apply's
    diagonal (Jacobi), or a function r (P,) -> M^-1 r (P,) for a symmetric positive definite M
    approximating apply (`pinn.training.optim.nystrom`). Stops when |rhs - apply(x)| <=
    tolerance |rhs| or after `iterations` products."""
    precondition = _jacobi(preconditioner) if torch.is_tensor(preconditioner) else preconditioner
    x = torch.zeros_like(rhs)
    residual = rhs.clone()
    z = precondition(residual)
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
        z = precondition(residual)
        rz, previous = residual.dot(z), rz
        direction = z + (rz / previous) * direction
    return x


def _jacobi(diagonal: torch.Tensor) -> Callable[[torch.Tensor], torch.Tensor]:
    """r -> r / diagonal (the diagonal kept off zero)."""
    inverse = 1.0 / diagonal.clamp_min(torch.finfo(diagonal.dtype).tiny)
    return lambda residual: inverse * residual
