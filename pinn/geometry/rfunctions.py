"""R-functions: smooth formulas for the inside of a shape and the distance to its boundary.

A shape's *level* function is positive inside, zero on the boundary and negative outside, and
grows like the distance near a smooth piece of boundary (Rvachev's R-functions; Sukumar &
Srivastava 2022, "Exact imposition of boundary conditions with distance functions in
physics-informed deep neural networks", CMAME 389). Levels combine like booleans:

    inside A and B:   conjunction(a, b) = a + b - sqrt(a² + b²)
    inside A or B:    disjunction(a, b) = a + b + sqrt(a² + b²)
    outside A:        -a

Each result is again a level function (>= 0 exactly where the combination holds), smooth except
where both arguments vanish (the corners of the combined shape), where its derivatives are
those of a + b: finite, so no NaN reaches a gradient.

A piece of boundary is a *carrier* f (zero on a line, plane or sphere containing the piece)
and a *trim* t (>= 0 on the part of the carrier that is the piece). `trimmed_distance` turns
them into a function that is zero exactly on the piece and positive elsewhere; `equivalence`
joins several pieces into one, zero on each of them.

Everything here is built from torch operations, so torch.func and autograd differentiate it.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import reduce

import torch

Tensor = torch.Tensor


def conjunction(a: Tensor, b: Tensor) -> Tensor:
    """(N,) level of the intersection of two shapes, from their (N,) levels."""
    return a + b - _safe_sqrt(a * a + b * b, 0.0)


def disjunction(a: Tensor, b: Tensor) -> Tensor:
    """(N,) level of the union of two shapes, from their (N,) levels."""
    return a + b + _safe_sqrt(a * a + b * b, 0.0)


def conjoin(levels: Sequence[Tensor]) -> Tensor:
    """(N,) level of the intersection of any number of shapes."""
    return reduce(conjunction, levels)


def trimmed_distance(carrier: Tensor, trim: Tensor | None) -> Tensor:
    """(N,) zero exactly where carrier = 0 and trim >= 0 (Sukumar & Srivastava, eq. 21).

    Positive elsewhere. Near the piece it grows like |carrier|, so a normalised carrier (unit
    gradient on it) keeps that slope. The carrier is positive on the domain's side of the
    piece, and on the piece itself (where the formula has a kink) the result takes the
    carrier's one-sided derivatives: finite, so a derivative of u = g + φ N asked at such a
    point (then masked away) cannot turn the loss's gradient into NaN. Without a trim the
    whole carrier is the piece: the result is the carrier itself.
    """
    if trim is None:
        return carrier
    square = carrier * carrier
    bump = (_safe_sqrt(trim * trim + square * square, 0.0) - trim) / 2
    return _safe_sqrt(square + bump * bump, carrier)


def _safe_sqrt(value: Tensor, at_zero: Tensor | float) -> Tensor:
    """sqrt(value), with `at_zero` (its value and derivatives) where value is exactly 0."""
    positive = value > 0
    root = torch.sqrt(torch.where(positive, value, torch.ones_like(value)))
    return torch.where(positive, root, at_zero)


def equivalence(distances: Sequence[Tensor]) -> Tensor:
    """(N,) 1 / Σ_i 1/φ_i of k (N,) distances: zero wherever one φ_i is, ~φ_i next to piece i.

    Computed as Π_j φ_j / Σ_i Π_{j≠i} φ_j (prefix and suffix products: O(k)), which stays
    finite where one φ_i is exactly zero, after dividing every φ by their largest (a constant
    for differentiation, and the formula is homogeneous), so many small φ do not underflow.
    """
    if len(distances) == 1:
        return distances[0]
    scale = torch.stack(distances).abs().amax(dim=0).detach()
    scale = scale.clamp_min(torch.finfo(scale.dtype).tiny)
    scaled = [d / scale for d in distances]
    prefix, suffix = [torch.ones_like(scale)], [torch.ones_like(scale)]
    for d in scaled[:-1]:
        prefix.append(prefix[-1] * d)
    for d in reversed(scaled[1:]):
        suffix.append(suffix[-1] * d)
    suffix.reverse()
    others = reduce(torch.add, [p * s for p, s in zip(prefix, suffix)])
    # Where two φ_i are zero (a corner), so is `others`: the result is 0 there, and the
    # division is kept off that point so that no derivative turns into NaN.
    corner = others == 0
    safe = torch.where(corner, torch.ones_like(others), others)
    return torch.where(corner, torch.zeros_like(others), scale * prefix[-1] * scaled[-1] / safe)
