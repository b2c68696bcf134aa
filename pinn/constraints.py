"""Hard constraints: u = g(x) + B(x) N(x), a network whose output satisfies Dirichlet exactly.

    model = HardConstraint(network, problem.hard_constraint)

With B = 0 where u = g is prescribed, every output of `model` meets that condition whatever the
weights, so the condition leaves the loss and stops competing with the PDE residual.

Every residual engine differentiates through the transform. Autograd and torch.func call the
module like any other; forward Taylor mode (`pinn.taylor`) carries the network's jet and adds
the jets of g and B by the product rule (`transform_jet`). g and B are cheap functions of x
alone, so their directional derivatives come from nested `torch.func.jvp` (one per direction
for first derivatives, one nested pair per second-order term), once per set of points
(`TransformJets`): a batch kept for many steps pays for them once.
"""

from __future__ import annotations

import functools
from collections import OrderedDict
from collections.abc import Callable

import torch
from torch import nn

from pinn.errors import ConfigError
from pinn.taylor_orders import ChosenPairs, Collapsed, Diagonal, FirstOnly, Full, Order

Tensor = torch.Tensor
# (N, d) points -> (g, B), each (N,) or (N, m) (a single column serves every output).
Transform = Callable[[Tensor], tuple[Tensor, Tensor]]


class HardConstraint(nn.Module):
    """u(x) = g(x) + B(x) * network(x), (N, d) -> (N, m).

    Args:
        network: the trained model N, pointwise, (N, d) -> (N, m).
        transform: x -> (g, B), pointwise functions of the points built from torch
            operations (torch.func differentiates them), each (N,), (N, 1) or (N, m).
    """

    def __init__(self, network: nn.Module, transform: Transform):
        super().__init__()
        self.network = network
        self.transform = transform
        self.jets = TransformJets(self)

    def forward(self, x: Tensor) -> Tensor:
        outputs = self.network(x)
        shift, scale = self.parts(x, outputs.shape[-1])
        return shift + scale * outputs

    def parts(self, x: Tensor, n_outputs: int) -> tuple[Tensor, Tensor]:
        """(g, B) at the (N, d) points, each (N, 1) or (N, m), checked."""
        result = self.transform(x)
        if not (isinstance(result, tuple) and len(result) == 2):
            raise ConfigError(
                f"hard_constraint(x) must return a pair (g, B), got {type(result).__name__}"
            )
        return tuple(_as_columns(name, part, x, n_outputs) for name, part in zip("gB", result))

    def stacked(self, x: Tensor, n_outputs: int) -> Tensor:
        """(N, 2m): g then B, each broadcast to the m outputs: the function whose jets we take."""
        shift, scale = self.parts(x, n_outputs)
        size = (x.shape[0], n_outputs)
        return torch.cat([shift.expand(size), scale.expand(size)], dim=1)


def _as_columns(name: str, part: object, x: Tensor, n_outputs: int) -> Tensor:
    if not isinstance(part, Tensor):
        part = torch.as_tensor(part, dtype=x.dtype, device=x.device).expand(x.shape[0])
    if part.ndim == 1:
        part = part[:, None]
    if part.ndim != 2 or part.shape[0] != x.shape[0] or part.shape[1] not in (1, n_outputs):
        raise ConfigError(
            f"hard_constraint: {name} must have shape (N,), (N, 1) or (N, {n_outputs}) for "
            f"(N, d) = {tuple(x.shape)} points, got {tuple(part.shape)}"
        )
    return part


def transform_jet(
    constraint: HardConstraint,
    x: Tensor,
    directions: Tensor,
    order: Order,
    network_jet: tuple[Tensor, Tensor, Tensor],
) -> tuple[Tensor, Tensor, Tensor]:
    """The jet of u = g + B N from the network's jet, in `pinn.taylor.Jet`'s layout.

    Args:
        x: (N, d) points.
        directions: the k directions, floats (k, d) or (N, k, d), or input indices (k,) or
            (N, k), as `taylor_forward` checked them.
        order: which second-order terms the network's jet carries.
        network_jet: value (N, m), first (N, m, k), second (layout of `order`).

    Product rule, with subscripts for directional derivatives along v_a, v_b:
        u_a  = g_a + B_a N + B N_a
        u_ab = g_ab + B_ab N + B_a N_b + B_b N_a + B N_ab
    """
    value, first, second = network_jet
    m, k = value.shape[1], first.shape[2]
    shifts, slopes, curvature = constraint.jets.get(x, directions, m)
    g, b = shifts[:, :m], shifts[:, m:]
    g_first, b_first = slopes[:, :m], slopes[:, m:]
    u_first = g_first + b_first * value[..., None] + b[..., None] * first
    u_value = g + b * value

    def transform_terms(a: int, c: int) -> Tensor:  # u_ac but for its B N_ac term, (N, m)
        h = curvature(a, c)  # (N, 2m): v_a^T H v_c of g and B together
        cross = b_first[..., a] * first[..., c] + b_first[..., c] * first[..., a]
        return h[:, :m] + h[:, m:] * value + cross

    def product(a: int, c: int, network_second: Tensor) -> Tensor:
        return transform_terms(a, c) + b * network_second

    if isinstance(order, FirstOnly):
        return u_value, u_first, second
    if isinstance(order, Diagonal):
        rows = [product(a, a, second[..., a]) for a in range(k)]
        return u_value, u_first, torch.stack(rows, dim=-1)
    if isinstance(order, Collapsed):
        weights = order.weights if order.weights is not None else [1.0] * k
        # Σ_a w_a u_aa = Σ_a w_a (g_aa + B_aa N + 2 B_a N_a) + B Σ_a w_a N_aa: the network's
        # collapsed row enters once, not per direction.
        total = b * second
        for a, weight in enumerate(weights):
            total = total + weight * transform_terms(a, a)
        return u_value, u_first, total
    if isinstance(order, Full):
        rows = {(a, c): product(a, c, second[..., a, c]) for a, c in order.pairs}
        grid = [[rows[(min(a, c), max(a, c))] for c in range(k)] for a in range(k)]
        return u_value, u_first, torch.stack([torch.stack(row, -1) for row in grid], -2)
    if isinstance(order, ChosenPairs):
        rows = [product(a, c, second[..., p]) for p, (a, c) in enumerate(order.pairs)]
        return u_value, u_first, torch.stack(rows, dim=-1)
    raise TypeError(f"no product rule for second-order terms of kind {type(order).__name__}")


class TransformJets:
    """g and B with their directional derivatives at sets of points, each computed once.

    The transform depends on x alone, so at the same points (one batch kept for many steps,
    as without resampling and throughout L-BFGS) its jets are the same: the last `size` sets
    are kept. Everything is detached: constants for the loss's backward pass.
    """

    def __init__(self, constraint: HardConstraint, size: int = 4):
        self.constraint, self.size = constraint, size
        self.entries: OrderedDict[tuple, _Jets] = OrderedDict()

    def get(self, x: Tensor, directions: Tensor, n_outputs: int) -> _Jets:
        """The jets at the (N, d) points along `directions` (as `transform_jet` takes them)."""
        key = _cache_key(x, directions, n_outputs)
        if key is None:  # per-point directions, fresh each call: nothing to reuse
            return _Jets(self.constraint, x, directions, n_outputs)
        if key not in self.entries:
            self.entries[key] = _Jets(self.constraint, x, directions, n_outputs)
            if len(self.entries) > self.size:
                self.entries.popitem(last=False)
        self.entries.move_to_end(key)
        return self.entries[key]


class _Jets:
    """shifts (N, 2m): g then B; slopes (N, 2m, k); `curvature(a, c)` (N, 2m), on demand."""

    def __init__(self, constraint: HardConstraint, x: Tensor, directions: Tensor, m: int):
        # Holding the points keeps their memory from serving other points under the same key.
        self.points = x.detach()
        self.vectors = _direction_vectors(directions, self.points)
        self._stacked = functools.partial(constraint.stacked, n_outputs=m)
        self._curvatures: dict[tuple[int, int], Tensor] = {}
        with torch.no_grad():
            self.shifts = self._stacked(self.points)
            slopes = [_jvp(self._stacked, self.points, v) for v in self.vectors]
            self.slopes = torch.stack(slopes, dim=-1)

    def __iter__(self):
        return iter((self.shifts, self.slopes, self.curvature))

    def curvature(self, a: int, c: int) -> Tensor:
        """(N, 2m): v_a^T H v_c of g and B, by a directional derivative of one along the other."""
        key = (min(a, c), max(a, c))
        if key not in self._curvatures:
            along = self.vectors[key[0]]
            with torch.no_grad():
                self._curvatures[key] = _jvp(
                    lambda points: _jvp(self._stacked, points, along),
                    self.points,
                    self.vectors[key[1]],
                )
        return self._curvatures[key]


def _cache_key(x: Tensor, directions: Tensor, n_outputs: int) -> tuple | None:
    """What makes two calls' jets equal, or None for per-point directions (never reused)."""
    if directions.ndim != (2 if directions.is_floating_point() else 1):
        return None
    where = (x.data_ptr(), x._version, tuple(x.shape), x.stride(), x.dtype, x.device)
    return (*where, n_outputs, directions.dtype, tuple(directions.flatten().tolist()))


def _jvp(f: Callable[[Tensor], Tensor], x: Tensor, vector: Tensor) -> Tensor:
    """The directional derivative of the pointwise f at x along vector ((N, d) or (1, d))."""
    return torch.func.jvp(f, (x,), (vector.expand_as(x),))[1]


def _direction_vectors(directions: Tensor, x: Tensor) -> list[Tensor]:
    """The k directions as float vectors, each (N, d) (per point) or (1, d) (shared)."""
    if not directions.is_floating_point():
        directions = torch.eye(x.shape[1], dtype=x.dtype, device=x.device)[directions]
    if directions.ndim == 2:  # (k, d), shared by every point
        return [row[None] for row in directions]
    return list(directions.unbind(1))  # (N, k, d) -> k of (N, d)


def constrain(network: nn.Module, transform: Transform, probe: Tensor) -> nn.Module:
    """`network` inside `HardConstraint(network, transform)`, or itself where the transform
    returns None (a problem without a hard constraint: `Problem.hard_constraint`).

    `probe`: a few (n, d) points at which the transform is tried once, so a wrong shape is
    reported before any training.
    """
    probe = probe.to(next(network.parameters()).dtype)
    with torch.no_grad():
        if transform(probe) is None:
            return network
        model = HardConstraint(network, transform)
        model(probe)
    return model
