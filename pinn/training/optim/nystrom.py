"""A randomised Nyström preconditioner for the damped normal equations (A + mu I) x = b, A = J^T J
(Frangella, Tropp & Udell 2023, "Randomized Nyström preconditioning", SIAM J. Matrix Anal. Appl.).

    sketch = NystromSketch.of(normal_products, size, columns, generator)
    precondition = sketch.inverse(mu)              # r (P,) -> P^-1 r (P,), for conjugate_gradient

`normal_products(V)` takes a (P, s) block and gives A V (P, s): s products J^T (J v), averaged
over the processes as every conjugate-gradient product is, so every process holds the same
sketch. The draw Omega (P, s) is Gaussian from the caller's generator (on the CPU: the same on
every process and device, and on resume when the caller seeds it by the evaluation count).

The sketch (their Algorithm 2.1): Omega orthonormalised, Y = A Omega, a shift nu = sqrt(P) eps
|Y|_F (theirs is |Y|_2, at most sqrt(s) smaller) added, Y_nu = Y + nu Omega, so that the s x s
core Omega^T Y_nu is positive definite in floating point; B = Y_nu core^-1/2 = U Sigma V^T;
Lambda = Sigma^2 - nu, the directions with Lambda <= nu (A of rank below s) left out. U (P, s)
and Lambda (s,) give the rank-s Nyström approximation A_nys = U Lambda U^T = Y (Omega^T Y)^+ Y^T
of A, exact on the range of Omega. The preconditioner (their eq. 5.3), for the damping mu:

    P^-1 = (lambda_s + mu) U (Lambda + mu I)^-1 U^T + (I - U U^T)

It maps the top s eigen-directions of A + mu I to about lambda_s + mu and leaves the rest, whose
eigenvalues are at most about lambda_s + mu already: the preconditioned system's condition
number is about (lambda_s + mu) / mu instead of (lambda_1 + mu) / mu, small once s exceeds the
effective dimension tr(A (A + mu I)^-1) (their Theorem 5.1: s >= 2 d_eff + 1 gives at most 28,
with high probability). The Jacobi preconditioner fixes only the parameters' scales (A's
diagonal); a PINN's J^T J is ill-conditioned along directions mixing every parameter, with a
spectrum that falls fast: what a low-rank sketch captures.

Cost: s products of J^T J (each about two backward passes of the rows, as a CG iteration), once
per Jacobian (the sketch does not depend on mu: refusals reuse it), then O(P s^2) for the QR and
SVD, and P s 8 bytes held. Each application is two (P, s) products.

The row-space system (J J^T + mu I) y = -r, delta = J^T y (the "rows" solver's, for R < P),
needs no solver or sketch of its own when R is large: its iterates from y = 0 span, mapped by
J^T, the same Krylov subspaces as the parameter-space ones (J^T (J J^T)^k r = (J^T J)^k J^T r),
and its eigenvalues are those of J^T J + mu I (and mu, R - P more times where R > P), so
conjugate gradients on it converge at the rate the same spectrum sets, at the same cost per
iteration (one J v and one J^T u), and a Nyström sketch of J J^T would capture the same top
eigenvalues. It would only trade vectors of P entries for vectors of R. The Nyström-preconditioned
CG in parameter space therefore serves a large R as well as a large P, and holds neither an
R x R nor an R x P matrix.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch

from pinn.errors import require_int


@dataclass(frozen=True)
class NystromSketch:
    """A = J^T J's rank-s Nyström approximation U diag(eigenvalues) U^T.

    Attributes:
        basis: U (P, s), orthonormal columns.
        eigenvalues: Lambda (s,), descending, > 0 (s at most the sketch's size: directions in
            which A is zero to rounding are left out).
    """

    basis: torch.Tensor
    eigenvalues: torch.Tensor

    @classmethod
    def of(
        cls,
        normal_products: Callable[[torch.Tensor], torch.Tensor],
        size: int,
        columns: int,
        generator: torch.Generator,
        dtype: torch.dtype = torch.float64,
        device: torch.device | str = "cpu",
    ) -> NystromSketch:
        """The sketch of the (P, P) matrix that `normal_products` applies to a (P, s) block, from
        `size` Gaussian columns drawn from `generator` (at most P: `size` is cut to `columns`)."""
        require_int("sketch_size", size, minimum=1)
        size = min(size, columns)
        draw = torch.randn(columns, size, generator=generator, dtype=dtype)
        omega, _ = torch.linalg.qr(draw.to(device))  # orthonormal: a well-conditioned core
        products = normal_products(omega)
        # The shift keeps the core positive definite where A is (numerically) of lower rank
        # (at least the smallest normal number: A = 0 has a norm of 0).
        norm = torch.linalg.norm(products).item()  # Frobenius: bounds |Y|_2, and NaN-safe
        if not math.isfinite(norm):  # a J of NaN or inf: no sketch (the step is refused anyway)
            return cls(omega[:, :0], products.new_zeros(0))
        shift = max(math.sqrt(columns) * torch.finfo(dtype).eps * norm, torch.finfo(dtype).tiny)
        shifted = products + shift * omega
        root = _times_inverse_root(shifted, omega.T @ shifted, shift)
        basis, singular, _ = torch.linalg.svd(root, full_matrices=False)
        eigenvalues = singular.square() - shift
        # Directions at or below the shift are rounding, not A's (A of rank < s): dropped, so
        # that lambda_s is A's smallest sketched eigenvalue, which an undamped (mu = 0) solve
        # divides by.
        kept = eigenvalues > shift
        return cls(basis[:, kept], eigenvalues[kept])

    def inverse(self, mu: float) -> Callable[[torch.Tensor], torch.Tensor]:
        """r (P,) -> P^-1 r = (lambda_s + mu) U (Lambda + mu)^-1 U^T r + r - U U^T r."""
        basis, eigenvalues = self.basis, self.eigenvalues
        if not len(eigenvalues):  # A = 0: nothing to precondition
            return lambda residual: residual
        scale = (eigenvalues[-1] + mu) / (eigenvalues + mu) - 1  # (s,)

        def apply(residual: torch.Tensor) -> torch.Tensor:
            return residual + basis @ (scale * (basis.T @ residual))

        return apply


def _times_inverse_root(block: torch.Tensor, core: torch.Tensor, floor: float) -> torch.Tensor:
    """(P, s) B = block core^-1/2 for the symmetric (s, s) `core`, so that B B^T = block core^-1
    block^T: by its Cholesky factor L (B^T = L^-1 block^T), or, where rounding left it
    indefinite, by its eigendecomposition with eigenvalues raised to `floor`."""
    core = (core + core.T) / 2
    factor, info = torch.linalg.cholesky_ex(core)
    if info.item() == 0:
        return torch.linalg.solve_triangular(factor, block.T, upper=False).T
    values, vectors = torch.linalg.eigh(core)
    return block @ vectors / values.clamp_min(floor).sqrt()
