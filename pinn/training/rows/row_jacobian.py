"""The Jacobian of the residual rows: per-point reverse mode, then forward mode through the
assembly (the reasoning and the costs are in `pinn.training.rows.residual_rows`).

    recording = Recording(engine)                 # the engine, noting every field it makes
    vectors = residuals(problem, model, batch, recording)
    J = row_jacobian(problem, model, batch, recording, scales)      # (R, P)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import contextmanager

import torch
from torch import nn

from pinn.derivatives.engines import Engine
from pinn.derivatives.field import Field, Requests
from pinn.errors import ConfigError
from pinn.geometry import Batch
from pinn.problem.causal import CausalWeighting
from pinn.problem.loss import residuals
from pinn.problem.point_weights import FixedPointWeights
from pinn.problem.problem import Problem
from pinn.training.rows.point_quantities import (
    autograd_quantities,
    quantity_keys,
    taylor_carries,
    taylor_quantities,
)


class Recording:
    """An engine stand-in for `residuals`: makes each field with `engine`, noting
    (site, points, field) in `fields`, in the order the assembly asks for them."""

    def __init__(self, engine: Engine):
        self.engine = engine
        self.fields: list[tuple[str, torch.Tensor, Field]] = []

    def field(self, x, inputs, outputs, site, laplacian_inputs=None) -> Field:
        made = self.engine.field(x, inputs, outputs, site, laplacian_inputs)
        self.fields.append((site, x.detach(), made))
        return made


def row_jacobian(
    problem: Problem,
    model: nn.Module,
    batch: Batch,
    recording: Recording,
    scales: Mapping[str, float],
    chunk: int = 256,
    causal: CausalWeighting | None = None,
    point_weights: FixedPointWeights | None = None,
) -> torch.Tensor:
    """(R, P) Jacobian of the scaled rows, columns the network's parameters then the unknowns.

    `recording` holds the fields of one `residuals` call at `batch` (their requests tell which
    quantities the residual uses); `scales` the rows' factor per term; `causal` the causal
    weighting that call had (its factors are recomputed from the primal residual, detached);
    `point_weights` the point weights it had, as constants.
    """
    names = [name for name, _ in model.named_parameters()]
    theta = {name: p.detach() for name, p in model.named_parameters()}
    n_model = sum(p.numel() for p in theta.values())
    unknowns = problem.attached_unknowns
    unknown_values = [p.detach() for p in unknowns.parameters()] if unknowns is not None else []
    n_columns = n_model + len(unknown_values)
    engine_name = recording.engine.name
    sites, values, tangents = [], [], []
    for site, x, field in recording.fields:
        keys = quantity_keys(field)
        if engine_name == "taylor" and taylor_carries(model, x, field.requests):
            value, jac = taylor_quantities(model, theta, x, keys, field.requests)
        else:
            value, jac = autograd_quantities(model, names, theta, x, field, keys)
        sites.append((site, x, field.input_names, field.output_names, keys))
        values.append(value)
        # (P + unknowns, N, q): each chunk of directions a contiguous block.
        tangent = jac.new_zeros(n_columns, *jac.shape[:2])
        tangent[:n_model] = jac.permute(2, 0, 1)
        tangents.append(tangent)
    like = dict(dtype=theta[names[0]].dtype, device=theta[names[0]].device)
    unknown_tangent = torch.zeros(len(unknown_values), n_columns, **like)
    for i in range(len(unknown_values)):
        unknown_tangent[i, n_model + i] = 1.0
    replica = causal.replica() if causal is not None else None  # its tensors stay inside
    assembly = Assembly(problem, model, batch, sites, scales, replica, point_weights)

    def rows_of(quantities: tuple, scalars: tuple) -> torch.Tensor:
        if not scalars:
            return assembly(quantities)
        state = {f"unknowns.scalars.{i}": s for i, s in enumerate(scalars)}
        return torch.func.functional_call(assembly, state, (quantities,))

    def pushed(quantity_tangents: tuple, scalar_tangents: tuple) -> torch.Tensor:
        primals = (tuple(values), tuple(unknown_values))
        return torch.func.jvp(rows_of, primals, (quantity_tangents, scalar_tangents))[1]

    columns = []
    for start in range(0, n_columns, chunk):
        part = slice(start, start + chunk)
        quantity_tangents = tuple(t[part] for t in tangents)
        scalar_tangents = tuple(unknown_tangent[i, part] for i in range(len(unknown_values)))
        with _autograd_refused():
            columns.append(torch.func.vmap(pushed)(quantity_tangents, scalar_tangents))
    return torch.cat(columns).T


@contextmanager
def _autograd_refused():
    """Say, in one line, that a residual calling autograd itself cannot be pushed forward by
    torch.func (a source term made by `torch.autograd.grad` of an exact solution, say)."""
    try:
        yield
    except RuntimeError as error:
        if "functorch transform" not in str(error):
            raise
        raise ConfigError(
            "the residual (or a condition) calls torch.autograd itself (requires_grad_, "
            "autograd.grad, backward), which the Gauss-Newton Jacobian (torch.func.jvp through "
            "the residual) cannot run through: write source terms in closed form as torch "
            "functions of x, ask the field u for derivatives, or train with "
            "trainer.phases=[adam,lbfgs]"
        ) from error


# ---- forward mode through the assembly ----------------------------------------------------------


class _FilledField(Field):
    """A field holding given quantities (functions of the jvp's tangents), no network call."""

    def __init__(self, x, input_names, output_names, keys, quantities: torch.Tensor):
        self.f, self.x, self.estimator, self._drawn = None, x, None, None
        self.requests = Requests()
        self.input_names, self.output_names = tuple(input_names), tuple(output_names)
        self._first, self._second, self._laplacians, self._higher = {}, {}, {}, {}
        values = {}
        for c, key in enumerate(keys):
            column = quantities[:, c]
            if key[0] == "value":
                values[key[1]] = column
            elif key[0] == "first":
                self._first[(key[1], key[2])] = column
            elif key[0] == "second":
                self._second[(key[1], key[2], key[3])] = column
            elif key[0] == "higher":
                self._higher[(key[1], key[2], key[3])] = column
            else:
                self._laplacians[key[1]] = column
        self.values = torch.stack([values[k] for k in range(len(output_names))], dim=1)

    def _first_derivative(self, k: int, i: int) -> torch.Tensor:
        return self._held(self._first, (k, i))

    def _second_derivative(self, k: int, i: int, j: int, keep_row: bool = True) -> torch.Tensor:
        return self._held(self._second, (k, min(i, j), max(i, j)))

    def _higher_derivative(self, k: int, i: int, order: int) -> torch.Tensor:
        return self._held(self._higher, (k, i, order))

    def _depends_on_points(self) -> bool:
        return False

    @staticmethod
    def _held(cache: dict, key: tuple) -> torch.Tensor:
        if key not in cache:
            raise ConfigError(
                f"the residual asked for derivative {key} (output, inputs) in its Jacobian pass "
                "but not when its rows were made: a residual must ask the same at every call"
            )
        return cache[key]


class _Replay:
    """An engine stand-in handing the assembly its recorded fields, filled, in order."""

    def __init__(self, sites: list, quantities: Sequence[torch.Tensor]):
        self.sites, self.quantities, self.next = sites, quantities, 0

    def field(self, x, inputs, outputs, site, laplacian_inputs=None) -> Field:
        recorded_site, points, input_names, output_names, keys = self.sites[self.next]
        if site != recorded_site or x.shape != points.shape:
            raise ConfigError(
                f"the residual asked for the field at {site!r} where its first pass asked for "
                f"{recorded_site!r}: a residual must make the same fields at every call"
            )
        quantities = self.quantities[self.next]
        self.next += 1
        filled = _FilledField(points, input_names, output_names, keys, quantities)
        filled.laplacian_inputs = laplacian_inputs
        return filled


class Assembly(nn.Module):
    """The scaled rows as a function of the fields' quantities (and, as its parameters, the
    problem's unknowns): the problem's residual and conditions on filled fields."""

    def __init__(
        self,
        problem: Problem,
        model,
        batch: Batch,
        sites: list,
        scales: Mapping,
        causal: CausalWeighting | None = None,
        point_weights: FixedPointWeights | None = None,
    ):
        super().__init__()
        self.problem, self.batch, self.sites, self.scales = problem, batch, sites, scales
        self.causal, self.point_weights = causal, point_weights
        self.network = [model]  # in a list: not a submodule (its parameters are not ours)
        if problem.attached_unknowns is not None:
            self.unknowns = problem.attached_unknowns

    def forward(self, quantities: Sequence[torch.Tensor]) -> torch.Tensor:
        replay = _Replay(self.sites, quantities)
        vectors = residuals(
            self.problem, self.network[0], self.batch, replay, self.causal, self.point_weights
        )
        return torch.cat([self.scales[name] * vector for name, vector in vectors.items()])
