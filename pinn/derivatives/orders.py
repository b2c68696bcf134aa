"""Which second-order terms a forward Taylor pass carries, and in what layout it returns them.

An elementwise function adds σ''(z) J_i J_j to the carried second-order term of each pair
(i, j) of directions, and a product of two varying factors a b adds a_i b_j + a_j b_i; an
`Order` says which pairs, by the products it forms:

    Diagonal    v_i^T H v_i for every i         k rows      -> (N, m, k)
    Collapsed   Σ_i w_i v_i^T H v_i             1 row       -> (N, m)
    Full        v_i^T H v_j for i <= j          k(k+1)/2    -> (N, m, k, k)
    ChosenPairs v_a^T H v_b for chosen (a, b)   P rows      -> (N, m, P)
    FirstOnly   nothing                         0 rows      -> (N, m, 0)

Collapsed is the point of "collapsed Taylor mode": the update is linear in the carried terms,
so their sum can be propagated instead of the terms, at the cost of one row whatever k.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

from pinn.errors import validating

Tensor = torch.Tensor
PairSpec = Tensor | Sequence[tuple[int, int]]
Product = Callable[[Tensor, Tensor], Tensor]
MODES = ("diagonal", "collapsed", "full", "pairs", "none")


class Order:
    """The carried second-order terms: `rows` of them.

    quadratic: (k, N or 1, w) first-order terms J -> (rows, N or 1, w) products J_i J_j, or
        None when no rows are carried.
    cross: the first-order terms A, B (k, ...) of two factors and their bilinear product
        (elementwise or matrix, broadcasting over the leading axis) -> the (rows, ...) terms
        product(A_i, B_j) + product(A_j, B_i), or None when no rows are carried.
    unpack: (rows, N, m) final terms -> the public layout (see the module docstring).
    """

    rows: int

    def quadratic(self, first: Tensor) -> Tensor | None:
        raise NotImplementedError

    def cross(self, a: Tensor, b: Tensor, product: Product) -> Tensor | None:
        raise NotImplementedError

    def unpack(self, second: Tensor) -> Tensor:
        return second.movedim(0, -1)


class Diagonal(Order):
    def __init__(self, k: int):
        self.rows = k

    def quadratic(self, first: Tensor) -> Tensor:
        return first * first

    def cross(self, a: Tensor, b: Tensor, product: Product) -> Tensor:
        return 2 * product(a, b)


class Collapsed(Order):
    rows = 1

    def __init__(self, weights: Tensor | None = None):
        self.weights = weights

    def quadratic(self, first: Tensor) -> Tensor:
        squares = first * first
        if self.weights is None:
            return squares.sum(dim=0, keepdim=True)
        return torch.tensordot(self.weights, squares, dims=1)[None]

    def cross(self, a: Tensor, b: Tensor, product: Product) -> Tensor:
        if self.weights is not None:
            a = a * self.weights.view(-1, *[1] * (a.ndim - 1))
        return 2 * product(a, b).sum(dim=0, keepdim=True)

    def unpack(self, second: Tensor) -> Tensor:
        return second[0]


class ChosenPairs(Order):
    def __init__(self, left: Tensor, right: Tensor):
        self.left, self.right = left, right
        self.rows = len(left)
        self.pairs = list(zip(left.tolist(), right.tolist()))

    def quadratic(self, first: Tensor) -> Tensor:
        # One product per pair of unbound rows, stacked: about twice as fast, forward and
        # backward, as first[left] * first[right], whose gathers scatter-add backward.
        rows = first.unbind(0)
        return torch.stack([rows[i] * rows[j] for i, j in self.pairs])

    def cross(self, a: Tensor, b: Tensor, product: Product) -> Tensor:
        return product(a[self.left], b[self.right]) + product(a[self.right], b[self.left])


class Full(ChosenPairs):
    """Every v_i^T H v_j, carrying only i <= j (H is symmetric): k(k+1)/2 rows, not k²."""

    def __init__(self, k: int, device: torch.device):
        left, right = torch.triu_indices(k, k, device=device)
        super().__init__(left, right)
        positions = torch.arange(self.rows, device=device)
        self.row_of = torch.empty(k, k, dtype=torch.long, device=device)
        self.row_of[left, right] = positions
        self.row_of[right, left] = positions

    def unpack(self, second: Tensor) -> Tensor:
        return second[self.row_of].permute(2, 3, 0, 1)  # (k, k, N, m) -> (N, m, k, k)


class FirstOnly(Order):
    rows = 0

    def quadratic(self, first: Tensor) -> None:
        return None  # nothing to carry: the pass skips the second-order terms altogether

    def cross(self, a: Tensor, b: Tensor, product: Product) -> None:
        return None


def make_order(
    mode: str, k: int, weights: Tensor | None, pairs: PairSpec | None, x: Tensor
) -> Order:
    """The `Order` for `mode` (one of MODES) over k directions; x gives dtype and device."""
    if mode not in MODES:
        raise ValueError(f"second={mode!r} is unknown; choose one of {', '.join(MODES)}")
    if weights is not None and mode != "collapsed":
        raise ValueError(f"weights only apply to second='collapsed', not second={mode!r}")
    if pairs is not None and mode != "pairs":
        raise ValueError(f"pairs only apply to second='pairs', not second={mode!r}")
    if mode == "diagonal":
        return Diagonal(k)
    if mode == "collapsed":
        return Collapsed(None if weights is None else _checked_weights(weights, k, x))
    if mode == "full":
        return Full(k, x.device)
    if mode == "pairs":
        return ChosenPairs(*_checked_pairs(pairs, k, x.device))
    return FirstOnly()


def require_indices(kind: str, indices: Tensor, size: int) -> None:
    """Raise IndexError unless every entry of `indices` lies in 0..size-1."""
    if not indices.numel() or not validating():
        return
    low, high = (int(bound) for bound in torch.aminmax(indices))  # one pass, not two
    if low < 0 or high >= size:
        raise IndexError(
            f"{kind} indices must lie in 0..{size - 1}, got values from {low} to {high}"
        )


def _checked_weights(weights: Tensor, k: int, x: Tensor) -> Tensor:
    weights = torch.as_tensor(weights, dtype=x.dtype, device=x.device)
    if weights.shape != (k,):
        raise ValueError(
            f"weights must have shape ({k},), one per direction, got {tuple(weights.shape)}"
        )
    return weights


def _checked_pairs(pairs: PairSpec | None, k: int, device: torch.device) -> tuple[Tensor, Tensor]:
    if pairs is None:
        raise ValueError("second='pairs' needs pairs=[(i, j), ...] of direction indices")
    pairs = torch.as_tensor(pairs, dtype=torch.long, device=device)
    if pairs.ndim != 2 or pairs.shape[1] != 2 or len(pairs) == 0:
        raise ValueError(f"pairs must have shape (P, 2) with P >= 1, got {tuple(pairs.shape)}")
    require_indices("direction", pairs, k)
    return pairs[:, 0], pairs[:, 1]
