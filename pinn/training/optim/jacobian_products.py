"""The Jacobian of the residual rows as the products a Gauss-Newton step takes of it.

    J = DenseJacobian(matrix)                  # an (R, P) matrix at hand
    J = MatrixFreeJacobian(rows, params)       # (R,) rows still attached to the parameters' graph
    J.mv(v)                                    # (R,) J v
    J.rmv(u)                                   # (P,) J^T u
    J.column_squares(probes, generator)        # (P,) diag(J^T J)

`DenseJacobian` holds the matrix (`matrix`) and gives diag(J^T J) exactly. `MatrixFreeJacobian`
never forms an (R, P) or (P, P) array:

- J^T u is one backward pass of the rows with cotangent u;
- J v comes from the same graph differentiated twice: g(w) = J^T w is linear in a dummy
  w (R,), built once with `create_graph`, and J v = d <g(w), v> / dw, one backward of that
  graph per product (the "double backward" trick: it needs no forward mode, so it works
  through whatever the residual engine did, autograd's inner derivatives included). The
  graph is built at the first J^T u asked for (w = u), so a step's gradient J^T r and its
  J v products share that backward pass;
- diag(J^T J) is estimated by Hutchinson's method in row space: for z with independent
  entries +-1, E[(J^T z)^2] = diag(J^T J), averaged over `probes` draws (relative error about
  sqrt(2 / probes) per entry). It sets the first damping and the Jacobi preconditioner of
  the conjugate-gradient solve, where an estimate serves. The draws come from the caller's
  generator, so a seeded run (and a resumed one) takes the same steps.

Memory: the graph of one evaluation of the rows and its backward (a few times a training
step's), instead of the dense Jacobian's R P 8 bytes and its per-point quantities' N q P 8.
Time: a product costs about two backward passes of the rows, so a conjugate-gradient solve of
k products costs about 2k training steps.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch


class DenseJacobian:
    """An (R, P) matrix, cast to `dtype`."""

    def __init__(self, matrix: torch.Tensor, dtype: torch.dtype = torch.float64):
        self.matrix = matrix.detach().to(dtype)
        self.shape = tuple(self.matrix.shape)

    def mv(self, v: torch.Tensor) -> torch.Tensor:
        return self.matrix @ v

    def rmv(self, u: torch.Tensor) -> torch.Tensor:
        return self.matrix.T @ u

    def column_squares(self, probes: int = 0, generator: torch.Generator | None = None):
        """(P,) diag(J^T J), exactly (the arguments are for the matrix-free estimate)."""
        return self.matrix.square().sum(dim=0)


class MatrixFreeJacobian:
    """The Jacobian of attached `rows` (R,) with respect to `params`, through autograd.

    Products take and give `dtype` tensors; they are computed in the rows' own dtype.
    Parameters the rows do not depend on have zero columns.
    """

    matrix = None

    def __init__(
        self,
        rows: torch.Tensor,
        params: Sequence[torch.Tensor],
        dtype: torch.dtype = torch.float64,
    ):
        if not rows.requires_grad:
            raise ValueError(
                "MatrixFreeJacobian needs rows attached to the parameters' graph "
                "(made with gradients enabled)"
            )
        self.rows, self.params, self.dtype = rows, list(params), dtype
        self._made_at = self._flat([p.detach() for p in self.params]).clone()
        self.shape = (rows.numel(), sum(p.numel() for p in self.params))
        self._dual: torch.Tensor | None = None
        self._transposed: list[torch.Tensor] = []

    def rmv(self, u: torch.Tensor) -> torch.Tensor:
        """(P,) J^T u for u (R,). The first product is taken with its graph kept (at w = u,
        `mv`): a Gauss-Newton or KFAC step's gradient J^T r and its later J v products share
        one backward pass."""
        self._require_unmoved()
        u = u.to(self.rows.dtype)
        if self._dual is None:
            return self._flat(self._keep_transposed(u.detach().clone()))
        return self._flat(self._backward(self.rows, u))

    def mv(self, v: torch.Tensor) -> torch.Tensor:
        """(R,) J v for v (P,)."""
        self._require_unmoved()
        if self._dual is None:
            self._keep_transposed(torch.zeros_like(self.rows))
        pieces = list(v.to(self.rows.dtype).split([p.numel() for p in self.params]))
        used = [(g, c.view_as(g)) for g, c in zip(self._transposed, pieces) if g.requires_grad]
        product = None
        if used:
            outputs, cotangents = zip(*used)
            (product,) = torch.autograd.grad(
                outputs, self._dual, cotangents, retain_graph=True, allow_unused=True
            )
        if product is None:  # no parameter reaches the rows
            return torch.zeros(self.shape[0], dtype=self.dtype, device=self.rows.device)
        return product.detach().to(self.dtype)

    def column_squares(self, probes: int, generator: torch.Generator) -> torch.Tensor:
        """(P,) a Hutchinson estimate of diag(J^T J) from `probes` draws of +-1 row vectors
        (drawn on the CPU from `generator`, so the estimate does not depend on the device)."""
        total = torch.zeros(self.shape[1], dtype=self.dtype, device=self.rows.device)
        for _ in range(probes):
            signs = torch.randint(0, 2, (self.shape[0],), generator=generator) * 2 - 1
            total += self.rmv(signs.to(self.rows.device, self.dtype)).square()
        return total / max(probes, 1)

    # ---- autograd -----------------------------------------------------------------------

    def _require_unmoved(self) -> None:
        """The graph's backward reads the parameters' storage: refuse products once they hold
        other values than the rows were made at (writes through `.data` escape autograd's own
        check). One comparison of all of them: one wait for the device per product, not one
        per parameter tensor (`pinn.syncs`)."""
        if not torch.equal(self._flat([p.detach() for p in self.params]), self._made_at):
            raise RuntimeError(
                "the parameters moved since these rows were made: their matrix-free Jacobian "
                "is that of the old values; evaluate the rows again"
            )

    def _keep_transposed(self, w: torch.Tensor) -> list[torch.Tensor]:
        """g(w) = J^T w with its graph, kept: linear in w, so d<g, v>/dw = J v at any w."""
        self._dual = w.requires_grad_()
        self._transposed = self._backward(self.rows, self._dual, create_graph=True)
        return self._transposed

    def _backward(self, rows, cotangent, create_graph=False) -> list[torch.Tensor]:
        """d <rows, cotangent> / d params, one tensor per parameter (zeros where unused)."""
        grads = torch.autograd.grad(
            rows,
            self.params,
            cotangent,
            retain_graph=True,
            create_graph=create_graph,
            allow_unused=True,
        )
        return [torch.zeros_like(p) if g is None else g for g, p in zip(grads, self.params)]

    def _flat(self, tensors: Sequence[torch.Tensor]) -> torch.Tensor:
        return torch.cat([t.detach().reshape(-1) for t in tensors]).to(self.dtype)
