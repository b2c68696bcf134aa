"""Forward Taylor mode: a network's value and input derivatives in a single forward pass.

For u = model(x) and k directions v_1..v_k (rows of a (k, d) matrix; the unit vectors e_j of
the inputs one differentiates in, usually), one pass through the layers carries, per point,

    value    u(x)                                   (N, m)
    first    J v_i,  the directional derivatives    (N, m, k)
    second   v_i^T H v_j for the chosen (i, j)      see `Jet`

by writing the chain rule out layer by layer (the "forward Laplacian" of Li et al. 2023, the
"collapsed Taylor mode" of Dangel et al. 2024). With z a layer's input, J its first-order
terms and S its second-order terms:

    Linear          W z + b     J -> J W^T       S -> S W^T
    elementwise σ   σ(z)        J -> σ'(z) J     S_ij -> σ'(z) S_ij + σ''(z) J_i J_j

"collapsed" carries one second-order row, Σ_i w_i v_i^T H v_i, instead of k: the rule is
linear in S, so the sum can be taken at every layer rather than at the end. With unit
vectors and w = 1 that row is the Laplacian.

Nothing loops over points or directions: each Linear layer is one matmul over all points and
directions per kind of term. Only plain differentiable torch ops are used, so a loss built from
the outputs backpropagates to the parameters with ordinary first-order autograd.

Any pointwise model runs, whatever its forward does with torch operations (skip connections,
gates, Fourier features, a hard constraint u = g + B N around a network): the pass traces it
once per input shape into aten operations and carries the terms through each by its rule
(`pinn.derivatives.taylor_pass`, `pinn.derivatives.rules`). An operation without a rule is
named by `taylor_supported(model, x)`; `register_elementwise` and `register_taylor_rule` add
one.

This module is the public surface; the choice of second-order terms lives in
`pinn.derivatives.orders`, the elementwise functions' derivatives in
`pinn.derivatives.elementwise`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import torch
from torch import nn

from pinn.derivatives.orders import MODES, PairSpec, make_order, require_indices
from pinn.derivatives.taylor_pass import (
    TaylorModeUnsupported,
    propagate,
    trace_model,
    unsupported_message,
)

Tensor = torch.Tensor
Directions = Tensor | Sequence[int]
SECOND_ORDER = MODES


class Jet(NamedTuple):
    """A model's outputs and directional derivatives at N points, for k directions v_i.

    value:  (N, m)      u(x_n)
    first:  (N, m, k)   J(x_n) v_i
    second: v_i^T H(x_n) v_j, laid out by the `second` mode of `taylor_forward`:
            "diagonal"   (N, m, k)      v_i^T H v_i
            "collapsed"  (N, m)         Σ_i w_i v_i^T H v_i
            "full"       (N, m, k, k)   v_i^T H v_j
            "pairs"      (N, m, P)      v_a^T H v_b for each chosen pair (a, b)
            "none"       (N, m, 0)
    """

    value: Tensor
    first: Tensor
    second: Tensor


class GradientHessianDiag(NamedTuple):
    """value (N, m), gradient (N, m, k), hessian_diag (N, m, k) for k chosen inputs."""

    value: Tensor
    gradient: Tensor
    hessian_diag: Tensor


class GradientLaplacian(NamedTuple):
    """value (N, m), gradient (N, m, d) in every input, laplacian (N, m) over chosen inputs."""

    value: Tensor
    gradient: Tensor
    laplacian: Tensor


class GradientHessian(NamedTuple):
    """value (N, m), gradient (N, m, k), hessian (N, m, k, k) for k chosen inputs."""

    value: Tensor
    gradient: Tensor
    hessian: Tensor


# ---- public functions ---------------------------------------------------------------------


def taylor_forward(
    model: nn.Module,
    x: Tensor,
    directions: Directions,
    second: str = "diagonal",
    *,
    weights: Tensor | None = None,
    pairs: PairSpec | None = None,
    taps: dict | None = None,
) -> Jet:
    """Value, first and second directional derivatives of `model` at x in one forward pass.

    Args:
        model: a pointwise callable (N, d) -> (N, m) built from operations with Taylor rules
            (see `taylor_supported`).
        x: (N, d) points.
        directions: the k directions, as floats (k, d) shared by all points or (N, k, d) per
            point; or as input indices, (k,) or (N, k) integers, standing for unit vectors
            e_j (cheaper than one-hot floats per point: the leading affine layers map the d
            unit vectors once and each point picks its own rows).
        second: which v_i^T H v_j to carry: "diagonal", "collapsed" (the weighted sum of the
            diagonal, one row whatever k), "full", "pairs" or "none" (see `Jet` for shapes).
        weights: (k,) weights w_i of the collapsed sum (all ones if None); "collapsed" only.
        pairs: (P, 2) direction indices (i, j) to carry; "pairs" only.
        taps: hooks on calls of the traced model (`pinn.derivatives.taylor_pass.propagate`).

    Returns:
        A `Jet` (value, first, second), differentiable in the model's parameters.

    Raises:
        TaylorModeUnsupported: the model uses an operation this pass has no rule for, or
            cannot be traced.
    """
    if x.ndim != 2 or not x.is_floating_point():
        raise ValueError(f"points must be floats of shape (N, d), got {x.dtype} {tuple(x.shape)}")
    # The seed and order are made of these (the directions as given: a list of indices is the
    # same key each time, its tensor a new one): the static calls' results (a hard
    # constraint's g and B) are kept for later passes with the same points and these.
    reuse = ("forward", second, directions, weights, pairs)
    directions, k = _checked_directions(directions, x)
    order = make_order(second, k, weights, pairs, x)
    terms = propagate(trace_model(model, x), model, x, _seed(directions, x), order, taps, reuse)
    if terms.value.ndim == 1:  # an (N,) output counts as one output
        terms = type(terms)(*(t[..., None] for t in terms))
    if terms.value.ndim != 2 or terms.value.shape[0] != x.shape[0]:
        raise ValueError(
            f"the model must map (N, d) points to (N, m) outputs; got {tuple(terms.value.shape)} "
            f"from input {tuple(x.shape)}"
        )
    return Jet(terms.value, terms.first.movedim(0, -1), order.unpack(terms.second))


def taylor_hessian_diag(
    model: nn.Module, x: Tensor, inputs: Sequence[int] | None = None
) -> GradientHessianDiag:
    """Value, gradient and diagonal second derivatives in the chosen inputs, in one pass.

    x: (N, d) points; inputs: the k input indices to differentiate in (all d if None).
    Returns value (N, m), gradient (N, m, k), hessian_diag (N, m, k): u_{x_j x_j} for j in
    inputs. Only those k directions are carried, so asking for fewer inputs costs less.
    """
    return GradientHessianDiag(*taylor_forward(model, x, _input_indices(inputs, x), "diagonal"))


def taylor_laplacian(
    model: nn.Module, x: Tensor, inputs: Sequence[int] | None = None
) -> GradientLaplacian:
    """Value, gradient and Laplacian in one pass, with one second-order row whatever d.

    x: (N, d) points; inputs: the input indices the Laplacian sums over (all d if None).
    Returns value (N, m), gradient (N, m, d) in every input, laplacian (N, m).

    The gradient covers every input because a PDE with a Laplacian in space usually also
    needs u_t: with (x, y, t) inputs, inputs=(0, 1) gives Δu in space and u_t in one pass.
    """
    dim = x.shape[-1]
    chosen = _input_indices(inputs, x)
    weights = None
    if len(chosen) < dim:
        weights = torch.zeros(dim, dtype=x.dtype, device=x.device).index_fill_(0, chosen, 1.0)
    all_inputs = torch.arange(dim, device=x.device)
    return GradientLaplacian(*taylor_forward(model, x, all_inputs, "collapsed", weights=weights))


def taylor_hessian(
    model: nn.Module, x: Tensor, inputs: Sequence[int] | None = None
) -> GradientHessian:
    """Value, gradient and full Hessian in the chosen inputs, for PDEs with mixed terms.

    x: (N, d) points; inputs: the k input indices to differentiate in (all d if None).
    Returns value (N, m), gradient (N, m, k), hessian (N, m, k, k), symmetric. Only the
    k(k+1)/2 pairs i <= j are carried.
    """
    return GradientHessian(*taylor_forward(model, x, _input_indices(inputs, x), "full"))


def taylor_supported(model: object, x: Tensor) -> tuple[bool, str]:
    """(True, "") if `taylor_forward` can run `model` at points shaped like x, else (False,
    which operation it cannot carry, where the model uses it, and what to do)."""
    if not callable(model):
        return False, f"{type(model).__name__} is not callable"
    try:
        traced = trace_model(model, x)
    except TaylorModeUnsupported as error:
        return False, str(error)
    if traced.unsupported:
        return False, unsupported_message(traced.unsupported)
    return True, ""


def _seed(directions: Tensor, x: Tensor) -> Tensor:
    """The first-order terms of x itself: (k, 1, d) shared by all points, or (k, N, d)."""
    if not directions.is_floating_point():
        directions = torch.eye(x.shape[1], dtype=x.dtype, device=x.device)[directions]
    return directions[:, None] if directions.ndim == 2 else directions.movedim(1, 0)


# ---- checks -------------------------------------------------------------------------------


def _checked_directions(directions: Directions, x: Tensor) -> tuple[Tensor, int]:
    """(directions as a tensor on x's device, k) after checking their shape and range."""
    n_points, dim = x.shape
    directions = torch.as_tensor(directions, device=x.device)
    if directions.is_floating_point():
        if (
            directions.ndim not in (2, 3)
            or directions.shape[-1] != dim
            or (directions.ndim == 3 and directions.shape[0] != n_points)
        ):
            raise ValueError(
                f"float directions must have shape (k, {dim}) or ({n_points}, k, {dim}) for "
                f"points of shape {tuple(x.shape)}, got {tuple(directions.shape)}"
            )
        _require_some(directions.shape[-2])
        return directions.to(x.dtype), directions.shape[-2]
    if directions.dtype == torch.bool or directions.ndim not in (1, 2):
        raise ValueError(
            "directions must be floats of shape (k, d) or (N, k, d), or input indices of shape "
            f"(k,) or (N, k); got {directions.dtype} of shape {tuple(directions.shape)}"
        )
    if directions.ndim == 2 and directions.shape[0] != n_points:
        raise ValueError(
            f"per-point input indices must have shape ({n_points}, k), got "
            f"{tuple(directions.shape)}"
        )
    _require_some(directions.shape[-1])
    require_indices("input", directions, dim)
    return directions.long(), directions.shape[-1]


def _input_indices(inputs: Sequence[int] | None, x: Tensor) -> Tensor:
    dim = x.shape[-1]
    if inputs is None:
        return torch.arange(dim, device=x.device)
    indices = torch.as_tensor(inputs, dtype=torch.long, device=x.device).reshape(-1)
    _require_some(len(indices))
    require_indices("input", indices, dim)
    if len(indices.unique()) != len(indices):
        raise ValueError(f"inputs {list(inputs)} repeat an index; name each input once")
    return indices


def _require_some(k: int) -> None:
    if k < 1:
        raise ValueError("at least one direction (or input) is needed, got none")
