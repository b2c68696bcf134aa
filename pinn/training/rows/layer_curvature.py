"""The rows' curvature by layer: KFAC's Kronecker factors of each nn.Linear layer, from one
Taylor pass per field with taps on its layers (`pinn.training.optim.kfac_layers`).

    layers = factored_layers(model, x)                      # the nn.Linear layers it factors
    curvature_of = LayerCurvatureRows(rows_of, "expand", layers)   # rows_of: a ResidualRows
    rows = curvature_of(batch, generator)
    rows.values, rows.jacobian        # (R,) rows, their MatrixFreeJacobian (J^T u, J v)
    rows.factors                      # {group: {layer: (A (in+1, in+1), B (out, out))}}
    rows.diagonal                     # (P,) an estimate of diag(J^T J), for unfactored ones

The Gauss-Newton matrix of loss = sum(rows**2) is G = sum_rows J_row^T J_row. For a layer, row
r's Jacobian is sum_s g_rs a_s^T (`kfac_layers`): a_s the layer's input at position s (value,
first derivatives, second-order rows) of the point r depends on, g_rs the row's gradient with
respect to the layer's output there. Its block of G is approximated per group of terms (the
PDE's, "pde", and the conditions' and data's, "conditions": the paper's interior and boundary
losses) by one Kronecker product B ⊗ A (Dangel, Müller & Zeinhofer 2024), treating each point
as a datum as KFAC does:

- "expand": A = mean over points of (1/S) sum_s a_s a_s^T, B = sum over rows and s of
  g_rs g_rs^T, the positions taken as more data;
- "reduce": A = mean over points of â â^T with â = mean_s a_s, B = sum over rows of
  ĝ ĝ^T with ĝ = sum_s g_rs, the positions summed first.

The points and positions are those the group's rows read (nonzero g): a condition on one face
averages over that face's points, a Dirichlet condition over the value position alone. Both
are exact for one row at one point where a single position carries the row (a condition on
values, a first-order operator of a one-layer network), and the two agree there; with several
positions neither is.

The g's come by the sum trick: one backward pass per term of its rows times random signs
xi_r = ±1, whose gradient at each point is sum over the term's rows there of xi_r g_rs. Each
term of pinn has one row per point (a residual or a condition returns (n,), one value per
point), so xi_r² = 1 and the outer products are exact; where a term has several rows at a point
(a Periodic condition with `derivative=True`) their cross terms cancel in expectation. The same
backward passes give J^T xi per term, whose squares estimate diag(J^T J) (Hutchinson) for the
parameters no factor covers. The signs come from the caller's generator, so a seeded run and a
resumed one draw alike.

The factors are those of the model at the points; the rows and their Jacobian's products are
the engine's own (`ResidualRows`), so the loss compared by a line search is the same.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from pinn.derivatives.taylor_pass import TaylorModeUnsupported, trace_model
from pinn.errors import ConfigError
from pinn.training.optim.jacobian_products import MatrixFreeJacobian
from pinn.training.optim.kfac_curvature import Factors
from pinn.training.optim.kfac_layers import LayerRecord, LayerTaps, linear_layers
from pinn.training.rows.point_quantities import quantity_keys, tapped_quantities
from pinn.training.rows.residual_rows import ResidualRows, Rows, parameters
from pinn.training.rows.row_jacobian import Assembly

APPROXIMATIONS = ("expand", "reduce")
GROUPS = ("pde", "conditions")


def group_of(term: str) -> str:
    """The group of a loss term: "pde" for the PDE's ("pde", "pde_<key>"), else "conditions"."""
    return "pde" if term == "pde" or term.startswith("pde_") else "conditions"


def factored_layers(model: nn.Module, x: torch.Tensor) -> list[str]:
    """The names of the nn.Linear layers of `model` that KFAC factors (`linear_layers`), from
    its Taylor trace at points like x (N, d).

    Raises:
        ConfigError: the model cannot run in the Taylor pass.
    """
    try:
        return list(linear_layers(model, trace_model(model, x)))
    except TaylorModeUnsupported as error:
        raise ConfigError(f"KFAC needs the Taylor pass: {error}") from None


@dataclass
class CurvatureRows(Rows):
    """`Rows` with what a KFAC iteration needs (module docstring); `jacobian` is the rows'
    MatrixFreeJacobian."""

    factors: Factors | None = None
    diagonal: torch.Tensor | None = None


class LayerCurvatureRows:
    """The rows of `rows_of` (a ResidualRows) with their Kronecker factors.

    Args:
        rows_of: the rows (problem, model, engine, weights, causal and point weights).
        approximation: "expand" or "reduce" (module docstring).
        layers: the layers to factor (`factored_layers`); the other parameters get the
            diagonal estimate.
    """

    def __init__(self, rows_of: ResidualRows, approximation: str, layers: list[str]):
        if approximation not in APPROXIMATIONS:
            raise ConfigError(
                f"the KFAC approximation must be one of {', '.join(APPROXIMATIONS)}, "
                f"got {approximation!r}"
            )
        self.rows_of, self.approximation, self.layers = rows_of, approximation, list(layers)
        model = rows_of.model
        self.params = parameters(model, rows_of.problem)
        covered = {id(p) for name in self.layers for p in model.get_submodule(name).parameters()}
        self.fallback = [i for i, p in enumerate(self.params) if id(p) not in covered]

    def __call__(self, batch, generator: torch.Generator) -> CurvatureRows:
        recording, vectors = self.rows_of.record(batch)
        rows, attached, scales = self.rows_of.assemble(vectors)
        tapped, records = self._tapped_rows(batch, recording, scales)
        per_group, diagonal = self._signed_gradients(tapped, rows.layout, records, generator)
        factors = {
            group: _group_factors(records, term_grads, self.approximation)
            for group, term_grads in per_group.items()
        }
        jacobian = MatrixFreeJacobian(attached, self.params)
        return CurvatureRows(rows.values, rows.terms, rows.layout, jacobian, factors, diagonal)

    def at(self, batch, generator: torch.Generator | None, factors: bool = True):
        """What a KFAC iteration evaluates (`pinn.training.optim.kfac`): with a generator, an
        iterate's rows with their Jacobian's products and, where `factors`, the layers' factors
        (this object's call); without, a trial step's rows."""
        if generator is None:
            return self.rows_of(batch)
        return self(batch, generator) if factors else self.rows_of(batch, "products")

    def _signed_gradients(self, tapped, layout, records, generator) -> tuple[dict, torch.Tensor]:
        """({group: [each term's probe gradients, by record]}, (P,) the diagonal estimate of
        the unfactored parameters, zeros elsewhere): one backward pass per term of its rows
        times random signs (module docstring)."""
        fallback = [self.params[i] for i in self.fallback]
        probes = [probe for record in records for probe in record.probes]
        per_group: dict[str, list[list]] = {}
        squares = [torch.zeros_like(p) for p in fallback]
        for name, part in layout.items():
            signs = torch.randint(0, 2, (part.stop - part.start,), generator=generator) * 2 - 1
            weighted = (tapped[part] * signs.to(tapped)).sum()
            if not weighted.requires_grad:
                continue  # a term the parameters do not reach
            grads = torch.autograd.grad(
                weighted, probes + fallback, retain_graph=True, allow_unused=True
            )
            per_group.setdefault(group_of(name), []).append(_by_record(grads, records))
            for total, grad in zip(squares, grads[len(probes) :]):
                if grad is not None:
                    total += grad.detach().square()
        diagonal = torch.zeros(sum(p.numel() for p in self.params), dtype=torch.float64)
        offsets = _offsets(self.params)
        for i, total in zip(self.fallback, squares):
            diagonal[offsets[i] : offsets[i + 1]] = total.reshape(-1)
        return per_group, diagonal

    def _tapped_rows(self, batch, recording, scales) -> tuple[torch.Tensor, list[LayerRecord]]:
        """(R,) the rows again, from one tapped Taylor pass per recorded field, and what the
        taps recorded."""
        model, rows_of = self.rows_of.model, self.rows_of
        sites, quantities, records = [], [], []
        for site, x, field in recording.fields:
            keys = quantity_keys(field)
            layers = linear_layers(model, trace_model(model, x))
            chosen = {name: layers[name] for name in self.layers if name in layers}
            if len(chosen) != len(self.layers):
                missing = sorted(set(self.layers) - set(chosen))
                raise RuntimeError(f"KFAC: at the site {site!r} the layers {missing} differ")
            taps = LayerTaps(chosen)
            with torch.enable_grad():
                quantities.append(tapped_quantities(model, x, keys, field.requests, taps.taps))
            sites.append((site, x, field.input_names, field.output_names, keys))
            records += taps.records
        causal = rows_of.causal.replica() if rows_of.causal is not None else None
        fixed = rows_of.point_weights.fixed() if rows_of.point_weights is not None else None
        assembly = Assembly(rows_of.problem, model, batch, sites, scales, causal, fixed)
        with torch.enable_grad():
            return assembly(quantities), records


def _offsets(params: list[torch.Tensor]) -> list[int]:
    offsets = [0]
    for p in params:
        offsets.append(offsets[-1] + p.numel())
    return offsets


def _by_record(grads, records: list[LayerRecord]) -> list[list]:
    """The probes' gradients, one list per record (None where the term does not reach one)."""
    out, start = [], 0
    for record in records:
        out.append(list(grads[start : start + len(record.probes)]))
        start += len(record.probes)
    return out


def _group_factors(records, term_grads, approximation: str) -> dict:
    """{layer: (A, B)} of one group from its terms' probe gradients (module docstring): the
    positions and points no row of the group reads (zero gradients) left out, so that A is the
    mean over the group's own points (a condition on one face of the boundary's points)."""
    sums: dict[str, list] = {}
    for r, record in enumerate(records):
        grads = [term[r] for term in term_grads]
        used = [any(_reads(g[p]) for g in grads) for p in range(len(record.probes))]
        if not any(used):
            continue  # no term of the group reads this pass
        stacked = [_stacked(g, record.probes, used) for g in grads]  # each (S, N, out)
        points = torch.stack([g.ne(0).any(dim=2).any(dim=0) for g in stacked]).any(dim=0)
        sizes = [probe.shape[0] if probe.ndim == 3 else 1 for probe in record.probes]
        mask = torch.cat([torch.full((n,), u) for n, u in zip(sizes, used)])
        inputs = record.inputs[mask.to(record.inputs.device)][:, points]
        A = _input_factor(inputs, approximation)
        # The points no row of the group reads have zero gradients: B needs no selection.
        B = sum(_gradient_factor(g, approximation) for g in stacked)
        entry = sums.setdefault(record.layer, [0, 0, 0])
        entry[0], entry[1], entry[2] = entry[0] + A, entry[1] + inputs.shape[1], entry[2] + B
    return {layer: (A / count, B) for layer, (A, count, B) in sums.items()}


def _reads(grad: torch.Tensor | None) -> bool:
    """Whether a term's rows read a position: its gradient there is not (exactly) zero, which
    a row that does not read it gets through the concatenation of the terms' rows."""
    return grad is not None and bool(grad.ne(0).any())


def _input_factor(inputs: torch.Tensor, approximation: str) -> torch.Tensor:
    """(i, i) the sum over points of the inputs' factor, from inputs (S, N, i)."""
    if approximation == "expand":
        return _gram(inputs) / inputs.shape[0]
    mean = inputs.mean(dim=0)
    return mean.T @ mean


def _stacked(grads, probes, used) -> torch.Tensor:
    """(S, N, out) one term's gradients at the used positions (zeros where it reads none)."""
    parts = [
        (g if g is not None else torch.zeros_like(p)).reshape(-1, *p.shape[-2:])
        for g, p, u in zip(grads, probes, used)
        if u
    ]
    return torch.cat(parts).detach()


def _gradient_factor(stacked: torch.Tensor, approximation: str) -> torch.Tensor:
    """(out, out) one term's gradient factor, from its gradients (S, N, out)."""
    if approximation == "expand":
        return _gram(stacked)
    summed = stacked.sum(dim=0)
    return summed.T @ summed


def _gram(rows: torch.Tensor) -> torch.Tensor:
    """(c, c) the sum of v v^T over the vectors v of rows (..., c): one matrix product (an
    einsum over the leading dimensions took 2.7 times as long on the CPU)."""
    flat = rows.reshape(-1, rows.shape[-1])
    return flat.T @ flat
