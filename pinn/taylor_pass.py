"""The forward Taylor pass itself: carry value, first- and second-order terms layer by layer.

With z a layer's input value, J its (k, N, w) first-order terms and S its (rows, N, w)
second-order terms (which ones: `pinn.taylor_orders`):

    affine (Linear, Rescale, Identity)   A z + b   J -> J A^T        S -> S A^T
    elementwise σ (activations)          σ(z)      J -> σ'(z) J      S -> σ'(z) S + σ''(z) J_i J_j
    FourierFeatures                      the linear map x -> 2π x B, then σ = sin and cos

Past the first nonlinear layer the terms travel as one packed (1 + k + rows, N, w) tensor, so
an affine layer is a single matmul over every row. Before it, S is zero and J is often the
same for all points, (k, 1, w): those are kept apart and unexpanded, which makes the first
Linear layer cost k rows instead of N k.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from pinn.embeddings import FourierFeatures
from pinn.models import Rescale
from pinn.taylor_activations import ACTIVATION_RULES, ActivationRule
from pinn.taylor_orders import Order

Tensor = torch.Tensor
AFFINE_LAYERS = (nn.Linear, Rescale, nn.Identity)


def propagate(layers: list[nn.Module], x: Tensor, directions: Tensor, order: Order) -> Tensor:
    """The terms at the output, (1 + k + order.rows, N, m): rows [value, first, second].

    layers: the model's leaf layers in call order, each `is_supported`.
    x: (N, d) points.
    directions: (k, d) or (N, k, d) floats, or (k,) or (N, k) input indices (unit vectors).
    """
    # Until the first nonlinear layer the second-order terms are zero and the first-order ones
    # are often the same for every point: carry them unpacked and unexpanded while that lasts.
    n_affine = next((i for i, layer in enumerate(layers) if not _is_affine(layer)), len(layers))
    value, first = _seed(layers[:n_affine], x, directions)
    if n_affine == len(layers):
        return _pack(value, first, None, order)
    packed = _nonlinear(layers[n_affine], value, first, None, order)
    k = first.shape[0]
    for layer in layers[n_affine + 1 :]:
        if _is_affine(layer):
            packed = _affine_packed(layer, packed)
        else:
            packed = _nonlinear(layer, packed[0], packed[1 : 1 + k], packed[1 + k :], order)
    return packed


def _seed(prefix: list[nn.Module], x: Tensor, directions: Tensor) -> tuple[Tensor, Tensor]:
    """(N, w) value and (k, N or 1, w) first-order terms after the leading affine layers."""
    if directions.is_floating_point():
        first = directions[:, None] if directions.ndim == 2 else directions.movedim(1, 0)
        return _affine_unpacked(prefix, x, first)
    identity = torch.eye(x.shape[1], dtype=x.dtype, device=x.device)
    if directions.ndim == 1:
        return _affine_unpacked(prefix, x, identity[directions][:, None])
    # Per-point unit vectors: map all d of them through the affine layers once, then pick
    # each point's rows, rather than multiplying an (N, k, d) one-hot tensor.
    value, columns = _affine_unpacked(prefix, x, identity[:, None])
    return value, columns[:, 0][directions].movedim(1, 0)


def _affine_unpacked(
    layers: list[nn.Module], value: Tensor, first: Tensor
) -> tuple[Tensor, Tensor]:
    """(N, w) value and (k, N or 1, w) first-order terms through affine layers."""
    for layer in layers:
        value = layer(value)  # the module's own arithmetic, so values match it exactly
        first = _linear_part(layer, first)
    return value, first


def _affine_packed(layer: nn.Module, packed: Tensor) -> Tensor:
    """(R, N, w) packed terms -> (R, N, w') through an affine layer."""
    out = _linear_part(layer, packed)  # one matmul over all rows
    offset = _offset(layer, packed.dtype)
    if offset is not None:
        # Only the value row moves: derivatives of a constant vanish. In place on the fresh
        # product is safe for autograd (a product saves its inputs, not its output).
        out[0].add_(offset)
    return out


def _linear_part(layer: nn.Module, terms: Tensor) -> Tensor:
    if isinstance(layer, nn.Linear):
        return terms @ layer.weight.T
    if isinstance(layer, Rescale):
        return terms / layer.half_width.to(terms.dtype)
    return terms


def _offset(layer: nn.Module, dtype: torch.dtype) -> Tensor | None:
    if isinstance(layer, nn.Linear):
        return layer.bias
    if isinstance(layer, Rescale):
        return -(layer.center / layer.half_width).to(dtype)
    return None


def _nonlinear(
    layer: nn.Module, value: Tensor, first: Tensor, second: Tensor | None, order: Order
) -> Tensor:
    """(rows, N, w') packed terms after an elementwise activation or a Fourier embedding."""
    if _is_exactly(layer, FourierFeatures):
        return _fourier(layer, value, first, second, order)
    out, slope, curvature = _rule(layer)(layer, value)
    return _chain(out, slope, curvature, first, second, order.quadratic(first))


def _fourier(
    layer: FourierFeatures, value: Tensor, first: Tensor, second: Tensor | None, order: Order
) -> Tensor:
    # [sin, cos](x @ 2πB): a linear map, then two elementwise functions sharing J_i J_j.
    frequencies = 2 * math.pi * layer.frequencies.to(value.dtype)
    angles = value @ frequencies
    angle_first = first @ frequencies
    angle_second = None if second is None else second @ frequencies
    quadratic = order.quadratic(angle_first)
    sine, cosine = torch.sin(angles), torch.cos(angles)
    parts = [
        _chain(sine, cosine, -sine, angle_first, angle_second, quadratic),
        _chain(cosine, -sine, -cosine, angle_first, angle_second, quadratic),
    ]
    if layer.include_input:
        parts.append(_pack(value, first, second, order))
    return torch.cat(parts, dim=-1)


def _chain(
    out: Tensor,
    slope: Tensor,
    curvature: Tensor,
    first: Tensor,
    second: Tensor | None,
    quadratic: Tensor,
) -> Tensor:
    """Packed terms of σ(z): value σ, first σ' J, second σ' S + σ'' J_i J_j (S = 0 if None).

    out, slope, curvature: (N, w); first: (k, N or 1, w); second: (rows, N, w);
    quadratic: (rows, N or 1, w) the carried products J_i J_j.
    """
    new_second = curvature * quadratic
    if second is not None:
        new_second = torch.addcmul(new_second, slope, second)
    return torch.cat([out[None], slope * first, new_second])


def _pack(value: Tensor, first: Tensor, second: Tensor | None, order: Order) -> Tensor:
    """(1 + k + rows, N, w) from value (N, w), first (k, N or 1, w), second (rows, N, w)."""
    n_points, width = value.shape
    if second is None:
        second = value.new_zeros(order.rows, n_points, width)
    return torch.cat([value[None], first.expand(-1, n_points, -1), second])


# ---- which layers the pass knows ----------------------------------------------------------


def leaves(module: nn.Module, name: str) -> list[tuple[str, nn.Module]]:
    """(name, layer) for every layer of nested plain nn.Sequentials, in call order."""
    if not _is_exactly(module, nn.Sequential):
        return [(name, module)]
    children = module.named_children()
    return [leaf for key, child in children for leaf in leaves(child, f"{name}.{key}")]


def is_supported(layer: nn.Module) -> bool:
    """Whether `propagate` can carry terms through this (leaf) layer."""
    return _is_affine(layer) or _is_exactly(layer, FourierFeatures) or _rule(layer) is not None


def supported_kinds() -> list[str]:
    """Class names of the supported layers, for error messages."""
    return [cls.__name__ for cls in (*AFFINE_LAYERS, FourierFeatures, *ACTIVATION_RULES)]


def _is_exactly(layer: nn.Module, cls: type[nn.Module]) -> bool:
    # A subclass that overrides forward computes something else: refuse it rather than guess.
    return isinstance(layer, cls) and type(layer).forward is cls.forward


def _is_affine(layer: nn.Module) -> bool:
    return any(_is_exactly(layer, cls) for cls in AFFINE_LAYERS)


def _rule(layer: nn.Module) -> ActivationRule | None:
    return next((r for cls, r in ACTIVATION_RULES.items() if _is_exactly(layer, cls)), None)
