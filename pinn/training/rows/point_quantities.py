"""The field quantities a residual uses, and their Jacobians with respect to the network's
parameters, point by point (step 1 of `pinn.training.rows.residual_rows`' Jacobian).

    keys = quantity_keys(field)        # what the residual asked of the field
    values, jacobians = taylor_quantities(model, theta, x, keys, field.requests)
    values, jacobians = autograd_quantities(model, names, theta, x, field, keys)
    # (N, q) and (N, q, P), P the network's parameters flattened in `named_parameters` order

A quantity is a key: ("value", k), ("first", k, i), ("second", k, i, j) with i <= j,
("laplacian", k), or ("higher", k, i, n) for d^n u_k/dx_i^n, n >= 3; k an output, i and j
inputs.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from pinn.derivatives.field import Field, Requests
from pinn.derivatives.taylor import taylor_forward
from pinn.derivatives.taylor_pass import trace_model
from pinn.derivatives.univariate import taylor_derivatives, univariate_supported
from pinn.errors import ConfigError

Key = tuple


def quantity_keys(field: Field) -> list[Key]:
    """The quantities the residual asked of `field`: every output's value, then the
    derivatives its requests name, for every output."""
    requests = field.requests
    if requests.expression:
        raise ConfigError(
            "the residual differentiates an expression of u (Field.derivative), which the "
            "Gauss-Newton Jacobian cannot carry; write it out with the product rule, or train "
            "with trainer.phases=[adam,lbfgs]"
        )
    if field.estimator is not None:
        raise ConfigError(
            "Gauss-Newton needs the exact Laplacian (its rows must not change between "
            "evaluations); set laplacian.method=exact"
        )
    outputs = range(len(field.output_names))
    keys: list[Key] = [("value", k) for k in outputs]
    keys += [("first", k, i) for k in outputs for i in sorted(requests.first)]
    keys += [("second", k, j, j) for k in outputs for j in sorted(requests.diagonal)]
    keys += [("second", k, i, j) for k in outputs for i, j in sorted(requests.mixed)]
    if requests.laplacian:
        keys += [("laplacian", k) for k in outputs]
    keys += [("higher", k, i, n) for k in outputs for i, n in sorted(requests.higher)]
    return keys


def _read(field: Field, key: Key) -> torch.Tensor:
    """(N,) one quantity of a field, through its public methods."""
    kind, k = key[0], key[1]
    if kind == "value":
        return field(k)
    if kind == "first":
        return field.d(key[2], k)
    if kind == "second":
        return field.d2(key[2], key[3], k)
    if kind == "higher":
        return field.d(key[2], k, order=key[3])
    return field.laplacian(k)


def autograd_quantities(
    model: nn.Module, names: list[str], theta: dict, x: torch.Tensor, field: Field, keys
) -> tuple[torch.Tensor, torch.Tensor]:
    """(N, q) quantities and (N, q, P) their Jacobians, by the engine's autograd `Field` on
    per-point copies of the parameters: a backward of a quantity's sum over the points gives
    each point's gradient in its own copy."""
    shapes = [theta[name].shape for name in names]
    sizes = [theta[name].numel() for name in names]
    base = torch.cat([theta[name].reshape(-1) for name in names])
    offsets = torch.zeros(x.shape[0], base.numel(), dtype=base.dtype, device=base.device)
    offsets.requires_grad_(True)

    def at_point(offset: torch.Tensor, point: torch.Tensor) -> torch.Tensor:
        pieces = (base + offset).split(sizes)
        state = {name: p.view(shape) for name, p, shape in zip(names, pieces, shapes)}
        return torch.func.functional_call(model, state, (point[None],))[0]

    def copies(points: torch.Tensor) -> torch.Tensor:
        return torch.func.vmap(at_point)(offsets, points)

    copy_field = Field(copies, x, field.input_names, field.output_names)
    quantities = torch.stack([_read(copy_field, key) for key in keys], dim=1)
    jacobians = []
    for c in range(len(keys)):
        (grad,) = torch.autograd.grad(
            quantities[:, c].sum(), offsets, retain_graph=True, allow_unused=True
        )
        jacobians.append(torch.zeros_like(offsets) if grad is None else grad)
    return quantities.detach(), torch.stack(jacobians, dim=1)


class _PointPass(nn.Module):
    """The planned quantities of `model` at N points, by one Taylor pass: (N, d) -> (N, q).

    `collapse`: a Laplacian asked for alone (no other second derivative) is carried as one
    collapsed row (the forward Laplacian) rather than d diagonal ones; `taps` go to the pass
    (`pinn.derivatives.taylor_pass.propagate`), which then runs even for values alone.
    """

    def __init__(
        self,
        model: nn.Module,
        keys: Sequence[Key],
        requests: Requests,
        dim: int,
        collapse: bool = False,
    ):
        super().__init__()
        self.model, self.keys = model, list(keys)
        mixed = {i for pair in requests.mixed for i in pair}
        wanted = set(requests.first) | set(requests.diagonal) | mixed
        self.directions = sorted(wanted | (set(range(dim)) if requests.laplacian else set()))
        diagonal = requests.diagonal or requests.laplacian
        self.mode = "full" if requests.mixed else ("diagonal" if diagonal else "none")
        if collapse and self.mode == "diagonal" and not requests.diagonal:
            self.mode = "collapsed"
        self.highest: dict[int, int] = {}  # input -> the highest order >= 3 asked along it
        for i, n in requests.higher:
            self.highest[i] = max(n, self.highest.get(i, 0))

    def forward(self, point: torch.Tensor, taps: dict | None = None) -> torch.Tensor:
        series = {i: taylor_derivatives(self.model, point, i, n) for i, n in self.highest.items()}
        if not self.directions and not taps:
            value = self.model(point)
            value = value[:, None] if value.ndim == 1 else value
            return torch.stack([_pick(value, series, key) for key in self.keys], dim=1)
        directions = self.directions or [0]  # values alone, through the pass for its taps
        jet = taylor_forward(self.model, point, directions, self.mode, taps=taps)
        at = directions.index

        def second(k: int, i: int, j: int) -> torch.Tensor:
            if self.mode == "full":
                return jet.second[:, k, at(i), at(j)]
            return jet.second[:, k, at(i)]

        picked = []
        for key in self.keys:
            kind, k = key[0], key[1]
            if kind == "value":
                picked.append(jet.value[:, k])
            elif kind == "first":
                picked.append(jet.first[:, k, at(key[2])])
            elif kind == "second":
                picked.append(second(k, key[2], key[3]))
            elif kind == "laplacian" and self.mode == "collapsed":
                picked.append(jet.second[:, k])
            elif kind == "laplacian":
                picked.append(sum(second(k, i, i) for i in range(point.shape[1])))
            else:
                picked.append(_pick(jet.value, series, key))
        return torch.stack(picked, dim=1)


def _pick(value: torch.Tensor, series: dict, key: Key) -> torch.Tensor:
    """(N,) a value key from the (N, m) values, or a "higher" one from the univariate series."""
    if key[0] == "value":
        return value[:, key[1]]
    _, k, i, n = key
    return series[i].derivatives[:, k, n - 1]


def taylor_carries(model: nn.Module, x: torch.Tensor, requests: Requests) -> bool:
    """Whether `taylor_quantities` can compute the requests: derivatives of order >= 3 need
    every operation's rule of any order (`univariate_supported`); the rest the Taylor pass."""
    return not requests.higher or univariate_supported(model, x[:1])[0]


def taylor_quantities(
    model: nn.Module, theta: dict, x: torch.Tensor, keys, requests: Requests
) -> tuple[torch.Tensor, torch.Tensor]:
    """(N, q) quantities and (N, q, P) their Jacobians: vmap over points of jacrev of the
    Taylor pass at one point."""
    trace_model(model, x[:1])  # traced outside the transforms (the trace is cached per shape)
    point_pass = _PointPass(model, keys, requests, x.shape[1])
    names = list(theta)

    def at_point(flat_theta: dict, point: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        state = {f"model.{name}": flat_theta[name] for name in names}
        out = torch.func.functional_call(point_pass, state, (point[None],))[0]
        return out, out

    per_point = torch.func.jacrev(at_point, has_aux=True)
    jacobian, value = torch.func.vmap(per_point, in_dims=(None, 0))(theta, x)
    pieces = [jacobian[name].reshape(x.shape[0], len(keys), -1) for name in names]
    return value.detach(), torch.cat(pieces, dim=2).detach()


def tapped_quantities(
    model: nn.Module, x: torch.Tensor, keys: Sequence[Key], requests: Requests, taps: dict
) -> torch.Tensor:
    """(N, q) quantities at the (N, d) points x by one Taylor pass over all of them, the
    Laplacian collapsed, `taps` on the pass's calls (KFAC's factors: `pinn.training.optim.
    kfac_layers`); attached to the parameters and to whatever the taps add."""
    if requests.higher:
        raise ConfigError(
            "KFAC carries derivatives up to the second order; this residual asks for one of "
            "order 3 or more: train it with trainer.phases=[adam,gauss_newton] or [adam,lbfgs]"
        )
    return _PointPass(model, keys, requests, x.shape[1], collapse=True)(x, taps)
