"""The forward Taylor pass itself: carry value, first- and second-order terms layer by layer.

With z a layer's input value, J its (k, N, w) first-order terms and S its (rows, N, w)
second-order terms (which ones: `pinn.taylor_orders`):

    affine (Linear, Rescale, Identity)   A z + b   J -> J A^T        S -> S A^T
    elementwise σ (activations)          σ(z)      J -> σ'(z) J      S -> σ'(z) S + σ''(z) J_i J_j
    FourierFeatures                      the linear map x -> 2π x B, then σ = sin and cos

The three travel as separate tensors (`Terms`), never packed into one: packing costs a
concatenation per layer forward and zero-filled slices backward, more than the single matmul
over all rows it buys. Until the first nonlinear layer S is zero and J is often the same for
every point, (k, 1, w): S stays None and J unexpanded, so the first Linear layer costs k rows
instead of N k.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import nn

from pinn.embeddings import FourierFeatures
from pinn.models import Rescale
from pinn.taylor_activations import ACTIVATION_RULES, Derivatives
from pinn.taylor_orders import Order

Tensor = torch.Tensor
AFFINE_LAYERS = (nn.Linear, Rescale, nn.Identity)


class Terms(NamedTuple):
    """A layer's output and its carried derivatives at N points.

    value: (N, w).
    first: (k, N, w), or (k, 1, w) while the same for every point.
    second: (rows, N, w), or None while zero (before any nonlinear layer, or with no rows).
    """

    value: Tensor
    first: Tensor
    second: Tensor | None

    @property
    def shape(self) -> torch.Size:
        """(1 + k + rows carried, N, w): the rows of value, first and second terms together."""
        rows = 0 if self.second is None else self.second.shape[0]
        return torch.Size((1 + self.first.shape[0] + rows, *self.value.shape))


def propagate(layers: list[nn.Module], x: Tensor, directions: Tensor, order: Order) -> Terms:
    """The terms at the output: value (N, m), first (k, N, m), second (order.rows, N, m).

    layers: the model's leaf layers in call order, each `is_supported`.
    x: (N, d) points.
    directions: (k, d) or (N, k, d) floats, or (k,) or (N, k) input indices (unit vectors).
    """
    steps = [_step(layer) for layer in layers]
    # The leading affine layers only map the seed directions: see `_seed`.
    n_affine = next((i for i, step in enumerate(steps) if step not in AFFINE_STEPS), len(steps))
    terms = _seed(layers[:n_affine], steps[:n_affine], x, directions)
    if n_affine == len(layers):
        return _affine_only(terms, order)
    for layer, step in zip(layers[n_affine:], steps[n_affine:]):
        terms = step(layer, terms, order)
    # Past a nonlinear layer first is (k, N, m); second is None only if no rows are carried.
    value, first, second = terms
    return Terms(value, first, value.new_zeros(0, *value.shape) if second is None else second)


def _affine_only(terms: Terms, order: Order) -> Terms:
    """The output terms of a model without nonlinear layers: S = 0."""
    value, first, _ = terms
    n_points, width = value.shape
    # Copies: through Identity layers alone, value and first are still x and the directions.
    return Terms(
        value.clone(),
        first.expand(-1, n_points, -1).clone(),
        value.new_zeros(order.rows, n_points, width),
    )


def _seed(layers: list[nn.Module], steps: list[Step], x: Tensor, directions: Tensor) -> Terms:
    """The terms after the leading affine layers: first (k, N or 1, w), second None."""

    def through_layers(first: Tensor) -> Terms:
        terms = Terms(x, first, None)
        for layer, step in zip(layers, steps):
            terms = step(layer, terms, None)
        return terms

    if directions.is_floating_point():
        return through_layers(
            directions[:, None] if directions.ndim == 2 else directions.movedim(1, 0)
        )
    identity = torch.eye(x.shape[1], dtype=x.dtype, device=x.device)
    if directions.ndim == 1:
        return through_layers(identity[directions][:, None])
    # Per-point unit vectors: map all d of them through the affine layers once, then pick
    # each point's rows, rather than multiplying an (N, k, d) one-hot tensor.
    value, columns, _ = through_layers(identity[:, None])
    return Terms(value, columns[:, 0][directions].movedim(1, 0), None)


# ---- one step per kind of layer: (layer, terms, order) -> terms ---------------------------

Step = Callable[[nn.Module, Terms, Order], Terms]


def _linear(layer: nn.Linear, terms: Terms, order: Order | None) -> Terms:
    value, first, second = terms
    weight = layer.weight
    return Terms(
        F.linear(value, weight, layer.bias),  # derivatives of the constant b vanish
        F.linear(first, weight),
        None if second is None else F.linear(second, weight),
    )


def _rescale(layer: Rescale, terms: Terms, order: Order | None) -> Terms:
    value, first, second = terms
    half_width = layer.half_width.to(value.dtype)
    return Terms(
        layer(value),  # the module's own arithmetic, so values match it exactly
        first / half_width,
        None if second is None else second / half_width,
    )


def _identity(layer: nn.Identity, terms: Terms, order: Order | None) -> Terms:
    return terms


def _activation(kind: type[nn.Module], layer: nn.Module, terms: Terms, order: Order) -> Terms:
    value, first, second = terms
    local = ACTIVATION_RULES[kind](layer, value)
    return _chain(local, first, second, order.quadratic(first))


def _fourier(layer: FourierFeatures, terms: Terms, order: Order) -> Terms:
    # [sin, cos](x @ 2πB): a linear map, then two elementwise functions sharing J_i J_j.
    value, first, second = terms
    frequencies = 2 * math.pi * layer.frequencies.to(value.dtype)
    angles = value @ frequencies
    angle_first = first @ frequencies
    angle_second = None if second is None else second @ frequencies
    quadratic = order.quadratic(angle_first)
    sine, cosine = torch.sin(angles), torch.cos(angles)
    parts = [
        _chain(Derivatives(sine, cosine, sine, -1.0), angle_first, angle_second, quadratic),
        _chain(Derivatives(cosine, -sine, cosine, -1.0), angle_first, angle_second, quadratic),
    ]
    n_points, width = value.shape
    if layer.include_input:
        if second is None and quadratic is not None:
            second = value.new_zeros(len(quadratic), n_points, width)
        parts.append(Terms(value, first.expand(-1, n_points, -1), second))
    return Terms(
        torch.cat([part.value for part in parts], dim=-1),
        torch.cat([part.first for part in parts], dim=-1),
        None if quadratic is None else torch.cat([part.second for part in parts], dim=-1),
    )


def _chain(
    local: Derivatives, first: Tensor, second: Tensor | None, quadratic: Tensor | None
) -> Terms:
    """The terms of σ(z): value σ, first σ' J, second σ' S + σ'' J_i J_j (S = 0 if None).

    local: σ and its derivatives at z, (N, w) each; first: (k, N or 1, w);
    second: (rows, N, w); quadratic: (rows, N or 1, w) the carried products J_i J_j, or None
    when no rows are carried.
    """
    # As (1, N, w) views, not (N, w): broadcasting an (N, w) factor against (rows, N, w) terms
    # makes autograd sum its gradient over the leading dimension, a full extra pass even for
    # the single row of "collapsed" mode.
    slope, curvature = local.slope[None], local.curvature[None]
    if quadratic is None:
        new_second = None
    elif second is None:
        # First nonlinear layer: S = 0, and Q is usually shared by all points, (rows, 1, w),
        # so scaling it first is cheap.
        scaled = quadratic if local.scale == 1 else local.scale * quadratic
        new_second = slope * (curvature * scaled) if local.relative else curvature * scaled
    elif local.relative:  # σ'' = scale c σ': σ' (S + scale c Q)
        new_second = slope * torch.addcmul(second, curvature, quadratic, value=local.scale)
    else:  # σ'' = scale c: σ' S + scale c Q
        new_second = torch.addcmul(slope * second, curvature, quadratic, value=local.scale)
    return Terms(local.value, slope * first, new_second)


AFFINE_STEPS: frozenset[Step] = frozenset({_linear, _rescale, _identity})


# ---- which layers the pass knows ----------------------------------------------------------


def leaves(module: nn.Module, name: str) -> list[tuple[str, nn.Module]]:
    """(name, layer) for every layer of nested plain nn.Sequentials, in call order."""
    if not _is_exactly(module, nn.Sequential):
        return [(name, module)]
    children = module.named_children()
    return [leaf for key, child in children for leaf in leaves(child, f"{name}.{key}")]


def is_supported(layer: nn.Module) -> bool:
    """Whether `propagate` can carry terms through this (leaf) layer."""
    return _step(layer) is not None


def supported_kinds() -> list[str]:
    """Class names of the supported layers, for error messages."""
    return [cls.__name__ for cls in (*AFFINE_LAYERS, FourierFeatures, *ACTIVATION_RULES)]


def _step(layer: nn.Module) -> Step | None:
    """The step that carries terms through `layer`, None if unsupported."""
    cls = type(layer)
    key = (cls, cls.forward)  # with the forward, so that patching a class's forward is noticed
    step = _STEPS.get(key)
    if step is None:
        step = _find_step(cls, cls.forward)
        if step is not None:
            _STEPS[key] = step
    return step


# Which step a class takes depends on the class alone, never on weights: work it out once.
_STEPS: dict[tuple[type, Callable], Step] = {}


def _find_step(cls: type, forward: Callable) -> Step | None:
    known: dict[type[nn.Module], Step] = {
        nn.Linear: _linear,
        Rescale: _rescale,
        nn.Identity: _identity,
        FourierFeatures: _fourier,
    }
    # The rule is looked up on every call, so that replacing one in ACTIVATION_RULES takes.
    known |= {kind: functools.partial(_activation, kind) for kind in ACTIVATION_RULES}
    return next((step for kind, step in known.items() if _is_exact_class(cls, forward, kind)), None)


def _is_exactly(layer: nn.Module, cls: type[nn.Module]) -> bool:
    return _is_exact_class(type(layer), type(layer).forward, cls)


def _is_exact_class(cls: type, forward: Callable, kind: type[nn.Module]) -> bool:
    # A subclass that overrides forward computes something else: refuse it rather than guess.
    return issubclass(cls, kind) and forward is kind.forward
