"""Damped Kronecker-factored blocks: their damping and their solves (KFAC's preconditioner).

    damped = damp(A, B, tikhonov)             # (A + pi sqrt(t) I, B + sqrt(t) / pi I)
    V = kronecker_solve([(A1, B1), (A2, B2)], G)   # B1 V A1 + B2 V A2 = G, for one or two pairs

A layer's block of the Gauss-Newton matrix, for its (out, in) weight matrix V flattened row by
row, is approximated by B ⊗ A: it maps V to B V A (A (in, in) from the layer's inputs, B
(out, out) from the gradients of the rows with respect to its outputs). A PINN loss has two
kinds of terms, the PDE's and the conditions', each with its own pair (Dangel, Müller &
Zeinhofer 2024), so the block is B1 ⊗ A1 + B2 ⊗ A2, and it is still solved exactly, with one
Cholesky and one symmetric eigendecomposition per factor size (Martens & Grosse 2015, App. B):
with A1 = L L^T and L^-1 A2 L^-T = U diag(a) U^T, P = L U gives A1 = P P^T, A2 = P diag(a) P^T;
likewise Q, b for the B's; then B1 V A1 + B2 V A2 = Q (V' + diag(b) V' diag(a)) P^T with
V' = Q^T V P, so V' = (Q^-1 G P^-T) / (1 + b a^T) elementwise.
"""

from __future__ import annotations

import torch

Pair = tuple[torch.Tensor, torch.Tensor]


def damp(A: torch.Tensor, B: torch.Tensor, tikhonov: float) -> Pair:
    """(A + pi sqrt(t) I, B + sqrt(t) / pi I): the Tikhonov term t I of the block B ⊗ A split
    between its factors by Martens & Grosse's (2015, §6.3) pi = sqrt((tr A / dim A) /
    (tr B / dim B)), so that each factor is damped in proportion to its own scale (their
    product then holds B ⊗ A + t I and the cross terms pi sqrt(t) B ⊗ I + ...)."""
    scale_a = A.diagonal().mean().clamp_min(torch.finfo(A.dtype).tiny)
    scale_b = B.diagonal().mean().clamp_min(torch.finfo(B.dtype).tiny)
    pi = (scale_a / scale_b).sqrt()
    root = tikhonov**0.5
    return _plus_identity(A, pi * root), _plus_identity(B, root / pi)


def _plus_identity(matrix: torch.Tensor, amount: torch.Tensor) -> torch.Tensor:
    damped = matrix.clone()
    damped.diagonal().add_(amount)
    return damped


def kronecker_solve(pairs: list[Pair], gradient: torch.Tensor) -> torch.Tensor:
    """(out, in) V with sum_k B_k V A_k = gradient, for one or two pairs of symmetric positive
    definite factors A_k (in, in), B_k (out, out)."""
    if len(pairs) == 1:
        A, B = pairs[0]
        left = torch.cholesky_solve(gradient, torch.linalg.cholesky(B))
        return torch.cholesky_solve(left.T, torch.linalg.cholesky(A)).T
    if len(pairs) != 2:
        raise ValueError(f"kronecker_solve takes one or two pairs of factors, got {len(pairs)}")
    (A1, B1), (A2, B2) = pairs
    lower_a, basis_a, values_a = _joint_basis(A1, A2)
    lower_b, basis_b, values_b = _joint_basis(B1, B2)
    # Q^-1 G P^-T = U_b^T L_b^-1 G L_a^-T U_a
    inner = _lower_solve(lower_b, gradient)
    inner = _lower_solve(lower_a, inner.T).T
    inner = basis_b.T @ inner @ basis_a
    inner = inner / (1 + values_b[:, None] * values_a[None, :])
    # V = Q^-T V' P^-1 = L_b^-T U_b V' U_a^T L_a^-1
    outer = basis_b @ inner @ basis_a.T
    outer = _upper_solve(lower_b, outer)
    return _upper_solve(lower_a, outer.T).T


def _joint_basis(first: torch.Tensor, second: torch.Tensor):
    """(L, U, values): first = L L^T, L^-1 second L^-T = U diag(values) U^T."""
    lower = torch.linalg.cholesky(first)
    whitened = _lower_solve(lower, _lower_solve(lower, second).T)
    values, basis = torch.linalg.eigh((whitened + whitened.T) / 2)
    return lower, basis, values


def _lower_solve(lower: torch.Tensor, rhs: torch.Tensor) -> torch.Tensor:
    """L^-1 rhs."""
    return torch.linalg.solve_triangular(lower, rhs, upper=False)


def _upper_solve(lower: torch.Tensor, rhs: torch.Tensor) -> torch.Tensor:
    """L^-T rhs."""
    return torch.linalg.solve_triangular(lower.T, rhs, upper=True)
