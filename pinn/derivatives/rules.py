"""Taylor rules: how each aten operation carries value, first- and second-order terms.

A traced model (`pinn.derivatives.taylor_pass.trace_model`) is a list of aten operations.
Every tensor that depends on the points x travels through the Taylor pass as `Terms`:

    value   (*shape)           what the model computes
    first   (k, *shape)        J v_i for the k directions, or broadcastable to it: (k, 1, w)
                               while the same for every point
    second  (rows, *shape)     the carried second-order terms (`pinn.derivatives.orders`), or
                               None while zero

Tensors that do not depend on x (weights, constants, the points' own masks) stay plain tensors
and their operations run as they are, and so do those whose derivatives never reach the output
(whatever is detached: `pinn.derivatives.dependencies`). A rule is called only when some
argument is `Terms`:

    rule(order, *args, **kwargs) -> Terms | Tensor | tuple

with the operation's own arguments, `Terms` where they depend on x. The rules follow from the
chain rule; with primes for derivatives along the directions:

    linear in one argument (view, select, sum, cat)   J -> op(J)    S -> op(S)
    elementwise σ (`elementwise`)                      J -> σ' J     S -> σ' S + σ'' J_i J_j
    bilinear a b (mul, matmul)                         J -> a' b + a b'
                                                       S -> a'' b + a b'' + a'_i b'_j + a'_j b'_i

A univariate pass of degree K (`pinn.derivatives.series`, for derivatives of any order along
one input) carries the K series coefficients as the first-order terms and no second: the linear
rules serve it as they are, products and elementwise functions branch on its `Univariate` order.

`register_taylor_rule(op, rule)` adds a rule for one more operation.
"""

from __future__ import annotations

import functools
import math
import operator
from collections.abc import Callable
from typing import NamedTuple

import torch

from pinn.derivatives.elementwise import Derivatives, derivatives_of, elementwise_rule
from pinn.derivatives.elementwise_higher import higher_rule
from pinn.derivatives.orders import Order
from pinn.derivatives.series import Univariate, compose, series_product

Tensor = torch.Tensor
aten = torch.ops.aten
Rule = Callable[..., object]


class Terms(NamedTuple):
    """A tensor that depends on the points, with its carried derivatives (module docstring)."""

    value: Tensor
    first: Tensor
    second: Tensor | None


def rule_for(op: object) -> Rule | None:
    """The Taylor rule of an aten overload (or of its packet), None if there is none."""
    rule = RULES.get(op)
    if rule is None and hasattr(op, "overloadpacket"):
        rule = RULES.get(op.overloadpacket)
    if rule is None and elementwise_rule(op) is not None:
        rule = functools.partial(_elementwise, op)
    return rule


def register_taylor_rule(op: object, rule: Rule) -> None:
    """Teach the Taylor pass one more aten operation.

    Args:
        op: the operation as it appears in a traced model, e.g. `torch.ops.aten.erfc` (every
            overload) or `torch.ops.aten.erfc.default` (one).
            `pinn.derivatives.taylor_pass.trace_model` shows which operations a model uses.
        rule: `rule(order, *args, **kwargs)`, called with the operation's arguments where the
            ones that depend on the points are `Terms` (value, first, second; see the module
            docstring), returning the `Terms` of the result. `order.quadratic(first)` and
            `order.cross(a, b, product)` give the second-order products a rule adds.

    For an elementwise function of one tensor, `register_elementwise` is simpler: it needs only
    σ, σ' and σ''. A rule registered here serves orders 1 and 2; a model that uses it gets its
    derivatives of order >= 3 from nested forward mode (`pinn.derivatives.univariate`).
    """
    if not callable(rule):
        raise TypeError(f"rule must be callable, got {type(rule).__name__}")
    RULES[op] = rule


# ---- helpers ------------------------------------------------------------------------------


def is_terms(argument: object) -> bool:
    return isinstance(argument, Terms)


def value_of(argument: object) -> object:
    return argument.value if isinstance(argument, Terms) else argument


def _full(rows: Tensor | None, value: Tensor) -> Tensor | None:
    """Rows (k, ...) broadcast to exactly (k, *value.shape): a view, no copy."""
    if rows is None:
        return None
    rows = rows.reshape(rows.shape[0], *[1] * (value.ndim + 1 - rows.ndim), *rows.shape[1:])
    return rows.expand(rows.shape[0], *value.shape)


def _map_rows(terms: Terms, value: Tensor, apply: Callable[[Tensor], Tensor]) -> Terms:
    """Terms with `apply` (which maps (rows, *shape) to (rows, *new_shape)) on first and second."""
    first = apply(_full(terms.first, terms.value))
    second = None if terms.second is None else apply(_full(terms.second, terms.value))
    return Terms(value, first, second)


def _shift(dim: int) -> int:
    """A dimension of a value, as a dimension of its (rows, *shape) terms."""
    return dim + 1 if dim >= 0 else dim


def _add_rows(*rows: Tensor | None) -> Tensor | None:
    present = [r for r in rows if r is not None]
    if not present:
        return None
    return functools.reduce(operator.add, present)


def _constant_terms(value: Tensor, like: Terms) -> Terms:
    """A constant as Terms with zero derivatives, shaped for joining `like`'s rows."""
    k = like.first.shape[0]
    return Terms(value, value.new_zeros(k, *value.shape), None)


# ---- elementwise functions ----------------------------------------------------------------


def chain(local: Derivatives, terms: Terms, order: Order) -> Terms:
    """The terms of σ(z): value σ, first σ' J, second σ' S + σ'' J_i J_j (S = 0 if None)."""
    first, second = terms.first, terms.second
    # As (1, *shape) views: broadcasting a (*shape) factor against (rows, *shape) terms makes
    # autograd sum its gradient over the leading dimension, a full extra pass.
    slope, curvature = local.slope[None], local.curvature[None]
    quadratic = order.quadratic(first)
    if quadratic is None:
        new_second = None
    elif second is None:
        # S = 0 (the first nonlinear function), and Q is often shared by all points,
        # (rows, 1, w), so scaling it first is cheap.
        scaled = quadratic if local.scale == 1 else local.scale * quadratic
        new_second = slope * (curvature * scaled) if local.relative else curvature * scaled
    elif local.relative:  # σ'' = scale c σ': σ' (S + scale c Q)
        new_second = slope * torch.addcmul(second, curvature, quadratic, value=local.scale)
    else:  # σ'' = scale c: σ' S + scale c Q
        new_second = torch.addcmul(slope * second, curvature, quadratic, value=local.scale)
    return Terms(local.value, slope * first, new_second)


def _elementwise(op: object, order: Order, z: Terms, *arguments, **options) -> Terms:
    if any(is_terms(a) for a in (*arguments, *options.values())):
        raise NotImplementedError(f"{op}: only its first argument may depend on the points")
    if isinstance(order, Univariate):
        return _elementwise_series(op, order, z, arguments, options)
    return chain(derivatives_of(op, z.value, arguments, **options), z, order)


def _elementwise_series(op: object, order: Univariate, z: Terms, arguments, options) -> Terms:
    """σ of a series (univariate pass): Faà di Bruno with σ's derivatives up to the degree."""
    rule = higher_rule(op)
    if rule is None:  # `univariate_supported` refuses such models before any pass
        raise NotImplementedError(f"{op} has no rule for derivatives of order 3 and more")
    derivatives = rule(z.value, order.degree, *arguments, **options)
    rows = _full(z.first, z.value).unbind(0)
    return Terms(derivatives[0], torch.stack(compose(derivatives, rows)), None)


# ---- sums and products --------------------------------------------------------------------


def _add(order: Order, a, b, alpha=1) -> Terms:
    value = aten.add(value_of(a), value_of(b), alpha=alpha)
    return _linear_combination(value, [(a, 1), (b, alpha)])


def _sub(order: Order, a, b, alpha=1) -> Terms:
    value = aten.sub(value_of(a), value_of(b), alpha=alpha)
    return _linear_combination(value, [(a, 1), (b, -alpha)])


def _rsub(order: Order, a, b, alpha=1) -> Terms:  # b - alpha a
    value = aten.rsub(value_of(a), value_of(b), alpha=alpha)
    return _linear_combination(value, [(a, -alpha), (b, 1)])


def _neg(order: Order, a: Terms) -> Terms:
    return _linear_combination(-a.value, [(a, -1)])


def _linear_combination(value: Tensor, parts: list[tuple[object, float]]) -> Terms:
    """Terms of Σ c a (plus constants) with value `value`: the rows add, scaled by c."""

    def combine(rows: list[tuple[Tensor | None, float]]) -> Tensor | None:
        scaled = [r if c == 1 else c * r for r, c in rows if r is not None]
        if not scaled:
            return None
        ndim = max(r.ndim for r in scaled)
        aligned = [r.reshape(r.shape[0], *[1] * (ndim - r.ndim), *r.shape[1:]) for r in scaled]
        total = functools.reduce(operator.add, aligned)
        # Rows may stay broadcast over the points ((k, 1, w) for every point alike), not over
        # the last axis, which a following matmul contracts (x - logsumexp(x) in a softmax).
        narrow = value.ndim > 0 and total.shape[-1] != value.shape[-1]
        return _full(total, value) if narrow else total

    varying = [(p, c) for p, c in parts if is_terms(p)]
    first = combine([(p.first, c) for p, c in varying])
    second = combine([(p.second, c) for p, c in varying])
    return Terms(value, first, second)


def bilinear(product: Callable[[Tensor, Tensor], Tensor], order: Order, a, b) -> Terms:
    """Terms of product(a, b) for a product linear in each factor (elementwise, matmul)."""
    va, vb = value_of(a), value_of(b)
    value = product(va, vb)
    if not is_terms(b):
        return Terms(
            value,
            product(a.first, vb),
            None if a.second is None else product(a.second, vb),
        )
    if not is_terms(a):
        return Terms(
            value,
            product(va, b.first),
            None if b.second is None else product(va, b.second),
        )
    if isinstance(order, Univariate):  # Leibniz on the series' coefficients
        series_a = [va, *_full(a.first, va).unbind(0)]
        series_b = [vb, *_full(b.first, vb).unbind(0)]
        return Terms(value, torch.stack(series_product(series_a, series_b, product)), None)
    first = product(a.first, vb) + product(va, b.first)
    second = _add_rows(
        None if a.second is None else product(a.second, vb),
        None if b.second is None else product(va, b.second),
        order.cross(_full(a.first, va), _full(b.first, vb), product),
    )
    return Terms(value, first, second)


def _mul(order: Order, a, b) -> Terms:
    # Lift both factors to the rank of the product, so rows (k, ...) and values broadcast
    # against each other with the leading axis of the rows kept apart.
    ndim = max(_rank(a), _rank(b))
    return bilinear(operator.mul, order, _lifted(a, ndim), _lifted(b, ndim))


def _rank(argument: object) -> int:
    return value_of(argument).ndim if torch.is_tensor(value_of(argument)) else 0


def _lifted(argument: object, ndim: int) -> object:
    """A factor with its value of rank ndim and its rows of rank 1 + ndim (leading 1s added)."""
    if not torch.is_tensor(value_of(argument)) or _rank(argument) == ndim:
        return argument
    if not is_terms(argument):
        return argument.reshape(*[1] * (ndim - argument.ndim), *argument.shape)
    value, first, second = argument
    pad = [1] * (ndim - value.ndim)
    return Terms(
        value.reshape(*pad, *value.shape),
        first.reshape(first.shape[0], *pad, *first.shape[1:]),
        None if second is None else second.reshape(second.shape[0], *pad, *second.shape[1:]),
    )


def _div(order: Order, a, b) -> Terms:
    if not is_terms(b):
        return _mul(order, a, torch.reciprocal(b) if torch.is_tensor(b) else 1 / b)
    return _mul(order, a, _elementwise(aten.reciprocal.default, order, b))


def _matmul(order: Order, a, b) -> Terms:
    return bilinear(torch.matmul, order, a, b)


def _addmm(order: Order, bias, a, b, beta=1, alpha=1) -> Terms:
    product = _matmul(order, a, b)
    if alpha != 1:
        product = _linear_combination(alpha * product.value, [(product, alpha)])
    value = aten.add(product.value, value_of(bias), alpha=beta)
    return _linear_combination(value, [(product, 1), (bias, beta)])


def _pow_tensor(order: Order, base, exponent) -> Terms:
    if not is_terms(exponent):
        return _elementwise(aten.pow.Tensor_Scalar, order, base, exponent)
    # a^b = exp(b log a), where a > 0
    log_base = _elementwise(aten.log.default, order, base) if is_terms(base) else torch.log(base)
    return _elementwise(aten.exp.default, order, _mul(order, exponent, log_base))


def _pow_scalar(order: Order, base: float, exponent: Terms) -> Terms:
    scaled = _mul(order, exponent, math.log(base))
    return _elementwise(aten.exp.default, order, scaled)


def _where(order: Order, condition: Tensor, a, b) -> Terms:
    value = aten.where(condition, value_of(a), value_of(b))

    def pick(rows_a: Tensor | None, rows_b: Tensor | None) -> Tensor | None:
        if rows_a is None and rows_b is None:
            return None
        zeros = value.new_zeros(())
        return torch.where(
            condition,
            zeros if rows_a is None else _full(rows_a, value),
            zeros if rows_b is None else _full(rows_b, value),
        )

    first_a, first_b = (t.first if is_terms(t) else None for t in (a, b))
    second_a, second_b = (t.second if is_terms(t) else None for t in (a, b))
    return Terms(value, pick(first_a, first_b), pick(second_a, second_b))


def _extremum(compare: Callable[[Tensor, Tensor], Tensor]) -> Rule:
    def rule(order: Order, a, b) -> Terms:
        return _where(order, compare(value_of(a), value_of(b)), a, b)

    return rule


def _vector_norm(order: Order, x: Terms, ord=2, dim=None, keepdim=False, dtype=None) -> Terms:
    """The p-norm over dim (every dimension if None): sqrt(Σ x²) for p = 2, (Σ |x|^p)^(1/p) for
    any other p but 0, the largest (smallest) |x| for p = inf (-inf)."""
    if ord == 0:
        raise NotImplementedError("linalg_vector_norm with ord=0 (a count, not differentiable)")
    if dtype is not None:
        x = _to_copy(order, x, dtype=dtype)
    dims = _reduced(x, dim)
    if ord == 2:
        total = _sum(order, _mul(order, x, x), dims, keepdim)
        return _elementwise(aten.sqrt.default, order, total)
    magnitude = _elementwise(aten.abs.default, order, x)
    if math.isinf(ord):
        extreme = RULES[aten.amax.default if ord > 0 else aten.amin.default]
        return extreme(order, magnitude, dims, keepdim)
    powered = _elementwise(aten.pow.Tensor_Scalar, order, magnitude, ord)
    return _elementwise(aten.pow.Tensor_Scalar, order, _sum(order, powered, dims, keepdim), 1 / ord)


def _reduced(x: Terms, dim) -> list[int]:
    """The dimensions a reduction's `dim` names: every one where it names none."""
    return list(range(x.value.ndim)) if dim in (None, [], ()) else list(dim)


def _extreme_over(reduce: Callable[..., Tensor]) -> Rule:
    """amax and amin: the derivative of the extreme entry, shared evenly among ties (as
    autograd shares the gradient); piecewise linear, so the second terms are picked alike."""

    def rule(order: Order, x: Terms, dim=(), keepdim=False) -> Terms:
        dims = _reduced(x, dim)
        value = reduce(x.value, dims, True)
        ties = (x.value == value).to(x.value.dtype)
        share = ties / ties.sum(dims, keepdim=True)
        picked = _sum(order, _mul(order, x, share), dims, keepdim)
        return Terms(reduce(x.value, dims, keepdim), picked.first, picked.second)

    return rule


def _extreme_and_index(reduce: Callable[..., Tensor], index: Callable[..., Tensor]) -> Rule:
    """max.dim and min.dim: (the extreme values, as amax / amin, and their indices)."""
    values_rule = _extreme_over(reduce)

    def rule(order: Order, x: Terms, dim: int, keepdim: bool = False) -> tuple:
        return values_rule(order, x, [dim], keepdim), index(x.value, dim, keepdim)

    return rule


def _variance(order: Order, x: Terms, dim=None, correction=None, keepdim=False) -> Terms:
    """var over dims: Σ (x - mean)² / (n - correction), correction 1 unless given."""
    dims = _reduced(x, dim)
    count = math.prod(x.value.shape[d] for d in dims)
    centred = _sub(order, x, _mean(order, x, dims, True))
    total = _sum(order, _mul(order, centred, centred), dims, keepdim)
    return _mul(order, total, 1.0 / (count - (1 if correction is None else correction)))


def _variance_mean(order: Order, x: Terms, dim=None, correction=None, keepdim=False) -> tuple:
    dims = _reduced(x, dim)
    return _variance(order, x, dims, correction, keepdim), _mean(order, x, dims, keepdim)


def _logsumexp(order: Order, x: Terms, dim, keepdim=False) -> Terms:
    """log Σ exp(x) = m + log Σ exp(x - m) for any constant m: m, the largest x, is held
    constant (the identity holds for every m, so the derivatives are exact)."""
    shift = aten.amax(x.value, dim, True)
    total = _sum(order, _elementwise(aten.exp.default, order, _sub(order, x, shift)), dim, True)
    result = _add(order, _elementwise(aten.log.default, order, total), shift)
    return result if keepdim else RULES[aten.squeeze.dims](order, result, list(dim))


def _atan2(order: Order, y, x) -> Terms:
    """atan2(y, x) = θ0 + atan((x0 y - y0 x) / (x0 x + y0 y)) near any (x0, y0) other than the
    origin, with (x0, y0) the values held constant: the angle turned from (x0, y0), whose
    derivatives the rules of products and atan give, on every branch of atan2 alike."""
    y0, x0 = value_of(y), value_of(x)
    cross = _sub(order, _times(order, y, x0), _times(order, x, y0))
    dot = _add(order, _times(order, x, x0), _times(order, y, y0))
    turn = _elementwise(aten.atan.default, order, _div(order, cross, dot))
    return Terms(aten.atan2(y0, x0), turn.first, turn.second)


def _hypot(order: Order, a, b) -> Terms:
    """sqrt(a² + b²), written out."""
    squares = _add(order, _times(order, a, a), _times(order, b, b))
    return _elementwise(aten.sqrt.default, order, squares)


def _times(order: Order, a, b):
    """a b, by the product rule where either factor depends on the points."""
    return _mul(order, a, b) if is_terms(a) or is_terms(b) else a * b


def _unsqueezed(order: Order, x, dim: int):
    """x with a new axis at dim, by the rule where x depends on the points."""
    return RULES[aten.unsqueeze.default](order, x, dim) if is_terms(x) else x.unsqueeze(dim)


def _cdist(order: Order, a, b, p: float = 2.0, compute_mode=None) -> Terms:
    """torch.cdist: the p-norms (..., P, R) of the differences between the rows of a (..., P, M)
    and of b (..., R, M), written out (torch's own cdist has no second derivative); as torch's,
    not differentiable where two rows coincide."""
    rows_a, rows_b = _unsqueezed(order, a, -2), _unsqueezed(order, b, -3)
    return _vector_norm(order, _sub(order, rows_a, rows_b), p, [-1])


def _trilinear(order: Order, a, b, c, expand_a, expand_b, expand_c, sumdim, unroll_dim=1):
    """aten._trilinear (nn.Bilinear): a, b, c each unsqueezed at its expand dimensions, their
    product summed over sumdim, by the rules of those."""

    def expanded(factor, dims):
        for dim in sorted(dims):
            factor = _unsqueezed(order, factor, dim)
        return factor

    factors = [expanded(f, dims) for f, dims in ((a, expand_a), (b, expand_b), (c, expand_c))]
    product = functools.reduce(lambda x, y: _times(order, x, y), factors)
    return _sum(order, product, list(sumdim)) if sumdim else product


def _convolution(order: Order, x: Terms, weight, bias, *layout) -> Terms:
    """Convolutions (any dimension, stride, padding, groups) are linear in their input: the rows
    pass through the same convolution without the bias, all k of them as one batch."""
    _require_constant(aten.convolution, (weight, bias), {})
    value = aten.convolution(x.value, weight, bias, *layout)

    def convolve(rows: Tensor) -> Tensor:  # (k, N, C, *L) -> (k, N, C', *L')
        out = aten.convolution(rows.flatten(0, 1), weight, None, *layout)
        return out.unflatten(0, rows.shape[:2])

    return _map_rows(x, value, convolve)


def _layer_norm(order: Order, x: Terms, shape, weight=None, bias=None, eps=1e-5) -> tuple:
    """(out, mean, 1 / std) over the last len(shape) dimensions, as aten.native_layer_norm."""
    dims = list(range(x.value.ndim - len(shape), x.value.ndim))
    mean = _mean(order, x, dims, True)
    centred = _sub(order, x, mean)
    variance = _mean(order, _mul(order, centred, centred), dims, True)
    inverse = _elementwise(aten.rsqrt.default, order, _add(order, variance, eps))
    out = _mul(order, centred, inverse)
    out = out if weight is None else _mul(order, out, weight)
    out = out if bias is None else _add(order, out, bias)
    return out, mean, inverse


def _prod(order: Order, x: Terms, dim: int = 0, keepdim: bool = False, dtype=None) -> Terms:
    """The product along dim, as a chain of products (no division: exact where factors are 0)."""
    if dtype is not None:
        x = _to_copy(order, x, dtype=dtype)
    factors = _split(torch.unbind, sized=False)(order, x, dim)
    product = functools.reduce(lambda a, b: _mul(order, a, b), factors)
    if keepdim:
        product = RULES[aten.unsqueeze.default](order, product, dim)
    return product


def _prod_all(order: Order, x: Terms, dtype=None) -> Terms:
    flat = RULES[aten.reshape.default](order, x, [-1])
    return _prod(order, flat, 0, dtype=dtype)


# ---- operations linear in one tensor: the same operation on every row ---------------------


def _on_rows(op: Callable[..., Tensor], rows_op: Callable[..., Tensor]) -> Rule:
    """A rule for an operation linear in its first argument: op on the value, rows_op on rows."""

    def rule(order: Order, x: Terms, *args, **kwargs) -> Terms:
        _require_constant(op, args, kwargs)
        value = op(x.value, *args, **kwargs)
        return _map_rows(x, value, lambda rows: rows_op(rows, *args, **kwargs))

    return rule


def _vmapped(op: Callable[..., Tensor]) -> Rule:
    """`_on_rows` for any operation, by mapping it over the leading axis of the rows."""
    return _on_rows(
        op, lambda rows, *args, **kwargs: torch.vmap(lambda r: op(r, *args, **kwargs))(rows)
    )


def _require_constant(op: object, args: tuple, kwargs: dict) -> None:
    if any(is_terms(a) for a in (*args, *kwargs.values())):
        raise NotImplementedError(f"{op}: only its first argument may depend on the points")


def _sum(order: Order, x: Terms, dim, keepdim=False, dtype=None) -> Terms:
    dims = [_shift(d) for d in (dim if isinstance(dim, (list, tuple)) else [dim])]
    value = aten.sum(x.value, dim, keepdim, dtype=dtype)
    return _map_rows(x, value, lambda rows: rows.sum(dims, keepdim, dtype=dtype))


def _sum_all(order: Order, x: Terms, dtype=None) -> Terms:
    value = aten.sum(x.value, dtype=dtype)
    return _map_rows(x, value, lambda rows: rows.flatten(1).sum(1, dtype=dtype))


def _mean(order: Order, x: Terms, dim, keepdim=False, dtype=None) -> Terms:
    dims = [_shift(d) for d in dim]
    value = aten.mean(x.value, dim, keepdim, dtype=dtype)
    return _map_rows(x, value, lambda rows: rows.mean(dims, keepdim, dtype=dtype))


def _join(op: Callable[..., Tensor]) -> Rule:
    """cat and stack: constants among the tensors join with zero derivatives."""

    def rule(order: Order, tensors: list, dim: int = 0) -> Terms:
        value = op([value_of(t) for t in tensors], dim)
        like = next(t for t in tensors if is_terms(t))
        parts = [t if is_terms(t) else _constant_terms(t, like) for t in tensors]
        first = op([_full(t.first, t.value) for t in parts], _shift(dim))
        if all(t.second is None for t in parts):
            return Terms(value, first, None)
        rows = next(t.second.shape[0] for t in parts if t.second is not None)
        seconds = [
            t.value.new_zeros(rows, *t.value.shape)
            if t.second is None
            else _full(t.second, t.value)
            for t in parts
        ]
        return Terms(value, first, op(seconds, _shift(dim)))

    return rule


def _split(op: Callable[..., tuple], sized: bool = True) -> Rule:
    """Operations returning several tensors along a dimension: split (sized) and unbind."""

    def rule(order: Order, x: Terms, *args, **kwargs) -> tuple[Terms, ...]:
        arguments = dict(zip(("size", "dim") if sized else ("dim",), args)) | kwargs
        dim = arguments.pop("dim", 0)
        sizes = [arguments["size"]] if sized else []
        values = op(x.value, *sizes, dim)

        def split_rows(rows: Tensor | None) -> list:
            if rows is None:
                return [None] * len(values)
            return op(_full(rows, x.value), *sizes, _shift(dim))

        parts = zip(values, split_rows(x.first), split_rows(x.second))
        return tuple(Terms(v, f, s) for v, f, s in parts)

    return rule


def _view(op: Callable[..., Tensor]) -> Rule:
    # reshape, not view, for the rows: broadcast rows are expanded views, not contiguous.
    return _on_rows(op, lambda rows, shape: rows.reshape(rows.shape[0], *shape))


def _expand(order: Order, x: Terms, size, implicit=False) -> Terms:
    value = aten.expand(x.value, size)
    return _map_rows(x, value, lambda rows: rows.expand(rows.shape[0], *value.shape))


def _to_copy(order: Order, x: Terms, **kwargs) -> Terms:
    value = aten._to_copy(x.value, **kwargs)
    options = {key: kwargs[key] for key in ("dtype", "device") if kwargs.get(key) is not None}
    return Terms(
        value,
        x.first.to(**options),
        None if x.second is None else x.second.to(**options),
    )


def _written(op: Callable[..., Tensor], rows_op: Callable[..., Tensor], tensors: tuple) -> Rule:
    """Operations that write tensors into a copy of another: what tracing makes of in-place
    writes (`out[:, 0] = a`, `index_fill_`, `masked_fill_`). They are linear in their tensor
    arguments at the positions `tensors` together (indices, masks and fill values are
    constants), so the rows are the same write of those arguments' rows (zeros for constant
    ones): `rows_op` takes the operation's arguments with rows in those positions."""

    def rule(order: Order, *args, **kwargs) -> Terms:
        _require_constant(op, [a for i, a in enumerate(args) if i not in tensors], kwargs)
        values = [value_of(a) for a in args]
        value = op(*values, **kwargs)

        def rows_of(kind: str) -> Tensor | None:
            carried = {i: getattr(args[i], kind) for i in tensors if is_terms(args[i])}
            if all(rows is None for rows in carried.values()):
                return None
            k = next(rows.shape[0] for rows in carried.values() if rows is not None)
            arguments = list(values)
            for i in tensors:
                rows = carried.get(i)
                arguments[i] = (
                    values[i].new_zeros(k, *values[i].shape)
                    if rows is None
                    else _full(rows, values[i])
                )
            return rows_op(*arguments, **kwargs)

        return Terms(value, rows_of("first"), rows_of("second"))

    return rule


def _copy(target: Tensor, source: Tensor, non_blocking: bool = False) -> Tensor:
    """aten.copy (what `target[...] = source` becomes), differentiable: autograd has no
    derivative for aten.copy itself."""
    return source.to(target.dtype).broadcast_to(target.shape)


def _index_put_rows(rows: Tensor, indices: list, source: Tensor, accumulate=False) -> Tensor:
    return torch.vmap(lambda r, s: aten.index_put(r, indices, s, accumulate))(rows, source)


def _identity(order: Order, x: Terms, *args, **kwargs) -> Terms:
    return x


def _constant(op: Callable[..., Tensor]) -> Rule:
    """Operations whose result has no derivative in x (masks, comparisons, shapes, detach)."""

    def rule(order: Order, *args, **kwargs) -> Tensor:
        args = [value_of(a) for a in args]
        kwargs = {key: value_of(v) for key, v in kwargs.items()}
        return op(*args, **kwargs)

    rule.constant = True  # what it returns does not vary with the points
    return rule


def carries_series(op: object) -> bool:
    """Whether the operation has a rule for a univariate pass (`pinn.derivatives.series`):
    a built-in rule (linear rules apply to each coefficient, products and elementwise functions
    branch on the order), or an elementwise function with derivatives of every order. A rule
    registered with `register_taylor_rule` knows only first and second order."""
    for key in (op, getattr(op, "overloadpacket", None)):
        if key in RULES:
            return RULES[key] is _BUILT_IN.get(key)
    return higher_rule(op) is not None


def gives_constant(op: object) -> bool:
    """Whether the operation's result has no derivative in x, whatever its arguments."""
    return getattr(rule_for(op), "constant", False)


RULES: dict[object, Rule] = {
    aten.add.Tensor: _add,
    aten.add.Scalar: _add,
    aten.sub.Tensor: _sub,
    aten.sub.Scalar: _sub,
    aten.rsub.Scalar: _rsub,
    aten.rsub.Tensor: _rsub,
    aten.neg.default: _neg,
    aten.mul.Tensor: _mul,
    aten.mul.Scalar: _mul,
    aten.div.Tensor: _div,
    aten.div.Scalar: _div,
    aten.mm.default: _matmul,
    aten.bmm.default: _matmul,
    aten.matmul.default: _matmul,
    aten.addmm.default: _addmm,
    aten.pow.Tensor_Tensor: _pow_tensor,
    aten.pow.Scalar: _pow_scalar,
    aten.where.self: _where,
    aten.maximum.default: _extremum(torch.ge),
    aten.minimum.default: _extremum(torch.le),
    aten.linalg_vector_norm.default: _vector_norm,
    aten.sum.dim_IntList: _sum,
    aten.sum.default: _sum_all,
    aten.mean.dim: _mean,
    aten.prod.dim_int: _prod,
    aten.amax.default: _extreme_over(aten.amax),
    aten.amin.default: _extreme_over(aten.amin),
    aten.logsumexp.default: _logsumexp,
    aten.atan2.default: _atan2,
    aten.hypot.default: _hypot,
    aten._cdist_forward.default: _cdist,
    aten.convolution.default: _convolution,
    aten._trilinear.default: _trilinear,
    aten.max.dim: _extreme_and_index(aten.amax, aten.argmax),
    aten.min.dim: _extreme_and_index(aten.amin, aten.argmin),
    aten.var.correction: _variance,
    aten.var_mean.correction: _variance_mean,
    aten.native_layer_norm.default: _layer_norm,
    aten.cumsum.default: _on_rows(
        aten.cumsum.default, lambda r, dim, dtype=None: r.cumsum(_shift(dim), dtype=dtype)
    ),
    aten.prod.default: _prod_all,
    aten.cat.default: _join(torch.cat),
    aten.stack.default: _join(torch.stack),
    aten.split.Tensor: _split(torch.split),
    aten.split_with_sizes.default: _split(torch.split),
    aten.unbind.int: _split(torch.unbind, sized=False),
    aten.select.int: _on_rows(aten.select.int, lambda r, dim, i: r.select(_shift(dim), i)),
    aten.slice.Tensor: _on_rows(
        aten.slice.Tensor,
        lambda r, dim=0, start=None, end=None, step=1: aten.slice.Tensor(
            r, _shift(dim), start, end, step
        ),
    ),
    aten.unsqueeze.default: _on_rows(aten.unsqueeze, lambda r, dim: r.unsqueeze(_shift(dim))),
    aten.squeeze.dim: _on_rows(aten.squeeze.dim, lambda r, dim: r.squeeze(_shift(dim))),
    aten.squeeze.dims: _on_rows(
        aten.squeeze.dims, lambda r, dims: r.squeeze(tuple(_shift(d) for d in dims))
    ),
    aten.transpose.int: _on_rows(
        aten.transpose.int, lambda r, a, b: r.transpose(_shift(a), _shift(b))
    ),
    aten.t.default: _on_rows(aten.t, lambda r: r.transpose(-1, -2) if r.ndim > 2 else r),
    aten.permute.default: _on_rows(
        aten.permute, lambda r, dims: r.permute(0, *[_shift(d % (r.ndim - 1)) for d in dims])
    ),
    aten.view.default: _view(aten.view),
    aten._unsafe_view.default: _view(aten._unsafe_view),
    aten.reshape.default: _view(aten.reshape),
    aten.expand.default: _expand,
    aten.clone.default: _on_rows(aten.clone, lambda r, **kwargs: r.clone()),
    aten.alias.default: _identity,
    aten.copy.default: _written(
        _copy, lambda r, source, non_blocking=False: _full(source, r[0]).to(r.dtype), (0, 1)
    ),
    aten.select_scatter.default: _written(
        aten.select_scatter.default,
        lambda r, source, dim, i: aten.select_scatter(r, source, _shift(dim), i),
        (0, 1),
    ),
    aten.slice_scatter.default: _written(
        aten.slice_scatter.default,
        lambda r, source, dim=0, start=None, end=None, step=1: aten.slice_scatter(
            r, source, _shift(dim), start, end, step
        ),
        (0, 1),
    ),
    aten.diagonal_scatter.default: _written(
        aten.diagonal_scatter.default,
        lambda r, source, offset=0, dim1=0, dim2=1: aten.diagonal_scatter(
            r, source, offset, _shift(dim1), _shift(dim2)
        ),
        (0, 1),
    ),
    aten.index_copy.default: _written(
        aten.index_copy.default,
        lambda r, dim, index, source: aten.index_copy(r, _shift(dim), index, source),
        (0, 3),
    ),
    aten.index_put.default: _written(aten.index_put.default, _index_put_rows, (0, 2)),
    **{
        op: _written(op, lambda r, dim, index, value: r.index_fill(_shift(dim), index, 0), (0,))
        for op in (aten.index_fill.int_Scalar, aten.index_fill.int_Tensor)
    },
    **{
        op: _written(op, lambda r, mask, value: r.masked_fill(mask, 0), (0,))
        for op in (aten.masked_fill.Scalar, aten.masked_fill.Tensor)
    },
    aten.fill.Scalar: _constant(aten.fill.Scalar),
    aten.zero.default: _constant(aten.zero.default),
    aten._to_copy.default: _to_copy,
    aten.index.Tensor: _vmapped(aten.index.Tensor),
    aten.flip.default: _vmapped(aten.flip),
    aten.constant_pad_nd.default: _on_rows(  # the padding is constant: its derivatives are 0
        aten.constant_pad_nd.default, lambda r, pad, value=0: aten.constant_pad_nd(r, pad, 0)
    ),
    **{pool: _vmapped(pool) for pool in (aten.avg_pool1d, aten.avg_pool2d, aten.avg_pool3d)},
    aten.roll.default: _vmapped(aten.roll),
    aten.narrow.default: _vmapped(aten.narrow),
    aten.repeat.default: _vmapped(aten.repeat),
    aten.diagonal.default: _vmapped(aten.diagonal),
    aten.detach.default: _constant(aten.detach),
    aten.ones_like.default: _constant(aten.ones_like),
    aten.zeros_like.default: _constant(aten.zeros_like),
    aten.empty_like.default: _constant(aten.empty_like),
    aten.full_like.default: _constant(aten.full_like),
    aten.sign.default: _constant(aten.sign),
    aten.floor.default: _constant(aten.floor),
    aten.ceil.default: _constant(aten.ceil),
    aten.round.default: _constant(aten.round),
    aten.isnan.default: _constant(aten.isnan),
    aten.isfinite.default: _constant(aten.isfinite),
    **{
        getattr(aten, name): _constant(getattr(aten, name))
        for name in ("gt", "ge", "lt", "le", "eq", "ne", "logical_and", "logical_or", "logical_not")
    },
}
_BUILT_IN = dict(RULES)  # what `register_taylor_rule` may later replace
