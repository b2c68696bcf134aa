"""The weighted loss as a sum of squares of residual rows, and the rows' Jacobian.

    rows_of = ResidualRows(problem, model, engine, weights={"dirichlet": 10.0})
    rows = rows_of(batch)                    # rows.values (R,), rows.terms, rows.loss
    rows = rows_of(batch, jacobian=True)     # and rows.jacobian (R, P)
    rows = rows_of(batch, jacobian="products")  # rows.jacobian a MatrixFreeJacobian (J v, J^T u)

Each term k of `loss_terms` (the PDE, each condition, observations) has n_k residuals r_k; its
rows are sqrt(w_k / n_k) r_k, so sum(rows**2) = sum_k w_k mean(r_k**2), the loss the other
phases minimise. With causal weighting (`pinn.problem.causal`) the PDE terms' r_k are already
scaled point by point by `residuals`, so the rows' loss is the causal one too (its weights are
constants to the Jacobian, as they carry no gradient); so are point weights
(`pinn.problem.point_weights`): a point's rows are λ_p r_p, the square root of its weight λ_p^2
times its residual. The rows stand in term order, every
output and equation of a term together.
The Jacobian's columns are the flat parameters of `parameters(model, problem)`: the network's,
then the problem's unknowns.

How the Jacobian is computed (`pinn.training.rows.row_jacobian`): the network enters the rows only
through its values and input derivatives at each point (the field quantities the residual asked
for), and a pointwise network's quantities at one point depend on the parameters only through
that point. So, per field (the interior, the boundary, a periodic or observation site):

1. per point, the Jacobian of its q quantities with respect to the P network parameters, by
   reverse mode batched over points: on the Taylor engine `vmap` over points of `jacrev` of the
   Taylor pass at one point; on autograd the engine's own `Field` on per-point copies of the
   parameters (the sum trick: one backward per quantity gives every point's gradient);
2. forward mode through the assembly (the problem's residual and conditions run on fields that
   hold those quantities): `vmap` over chunks of parameter directions of `jvp`, which carries
   masks, gathers and every nonlinearity of the residual, and the unknowns' columns too.

Cost, N points over all fields, q quantities per point, R rows, P parameters, float64:
memory R P 8 bytes for the Jacobian plus N q P 8 bytes for the quantities' (P = 921,
N = R = 1000, q = 1: 7 MB each; P = 5000, R = 4000, q = 15 for three outputs: 160 MB and
2.4 GB); time about q reverse passes of the network at N points, plus the assembly pushed
through P directions, both small beside the normal equations' R P^2.

Measured against the alternatives (`benchmarks/row_jacobian.py`, Poisson, 3 hidden tanh layers,
one thread of this project's 2-core CPU; seconds per Jacobian):

    P      R = N   J MB   taylor   autograd   every row (jacrev)   jacfwd
    921    1000       7     0.51       0.42                 17.7     21.6
    3441   2000      53     2.90       2.93                  259      501
    7561   4000     231     17.8       26.5                 2077     3699

A reverse pass per row (jacrev's vmap over cotangents, or `autograd.grad(is_grads_batched)`)
backpropagates every row through the whole batch: R times one backward's work, and, unchunked,
R copies of the graph. `jacfwd` pushes P directions through the network at every point, N P^2.
Neither runs on pinn's fields inside a torch.func transform (a `Field` makes its points
`requires_grad`, and autograd's `torch.autograd.grad` cannot run under one), so they need a
residual written outside the engine.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import torch

from pinn.derivatives.engines import Engine
from pinn.derivatives.field import Model
from pinn.errors import ConfigError
from pinn.geometry import Batch
from pinn.problem.causal import CausalWeighting
from pinn.problem.loss import residuals
from pinn.problem.point_weights import PointWeights
from pinn.problem.problem import Problem
from pinn.training.optim.jacobian_products import MatrixFreeJacobian
from pinn.training.rows.row_jacobian import Recording, row_jacobian


@dataclass
class Rows:
    """The residual rows of one batch: this process's points, scaled by its own counts, so the
    loss over N processes with equal shares is the average of their `loss`es.

    values: (R,) the scaled rows, detached; sum(values**2) is the weighted loss.
    terms: {term: 0-d mean square of its residuals}, unweighted, as `loss_terms` gives them.
    layout: {term: slice of `values` holding its rows}.
    jacobian: (R, P) d values / d parameters, or None when not asked for, or its products
        (`pinn.training.optim.jacobian_products.MatrixFreeJacobian`) when asked for "products".
    """

    values: torch.Tensor
    terms: dict[str, torch.Tensor]
    layout: dict[str, slice]
    jacobian: torch.Tensor | MatrixFreeJacobian | None = None

    @property
    def loss(self) -> torch.Tensor:
        """0-d sum of the squared rows: the weighted loss of this process's points."""
        return self.values.square().sum()


def parameters(model: torch.nn.Module, problem: Problem) -> list[torch.Tensor]:
    """What the Jacobian's columns differentiate: the network's parameters, then the unknowns."""
    unknowns = problem.attached_unknowns
    return [*model.parameters(), *(unknowns.parameters() if unknowns is not None else ())]


class ResidualRows:
    """The rows of `problem`'s weighted loss for `model`, made through `engine`.

    Args:
        problem: the problem (with its unknowns attached, for an inverse problem).
        model: the network (an nn.Module; its buffers are held fixed).
        engine: the run's residual engine ("taylor" or "autograd" at its first field).
        weights: {term: weight}; a term without one counts once (as `weighted_sum`).
        chunk: parameter directions pushed through the assembly at once (memory ~ chunk R).
        causal: the causal weighting of the PDE terms (`pinn.problem.causal`), or None.
        point_weights: the weights of the PDE terms' points (`pinn.problem.point_weights`),
            or None; a requested update is made at the next call, before its rows.
    """

    def __init__(
        self,
        problem: Problem,
        model: Model,
        engine: Engine | None = None,
        weights: Mapping[str, float] | None = None,
        chunk: int = 256,
        causal: CausalWeighting | None = None,
        point_weights: PointWeights | None = None,
    ):
        self.problem, self.model, self.causal = problem, model, causal
        self.point_weights = point_weights
        self.engine = engine or Engine("autograd", model, announce=False)
        self.weights = dict(weights or {})
        self.chunk = chunk

    def __call__(self, batch: Batch, jacobian: bool | str = False) -> Rows:
        """The rows at `batch` for the current parameters, with their Jacobian if asked:
        `jacobian` False, True (the matrix) or "products" (matrix-free)."""
        if jacobian not in (False, True, "products"):
            raise ValueError(f"jacobian must be False, True or 'products', got {jacobian!r}")
        recording, vectors = self.record(batch)
        rows, attached, scales = self.assemble(vectors)
        if jacobian == "products":
            rows.jacobian = MatrixFreeJacobian(attached, parameters(self.model, self.problem))
        elif jacobian:
            fixed = self.point_weights.fixed() if self.point_weights is not None else None
            rows.jacobian = row_jacobian(
                self.problem, self.model, batch, recording, scales, self.chunk, self.causal, fixed
            )
        return rows

    def record(self, batch: Batch) -> tuple[Recording, dict[str, torch.Tensor]]:
        """The fields the residuals made (`Recording`) and {term: (n,) residual}, attached."""
        recording = Recording(self.engine)
        with torch.enable_grad():
            vectors = residuals(
                self.problem, self.model, batch, recording, self.causal, self.point_weights
            )
        return recording, vectors

    def assemble(
        self, vectors: Mapping[str, torch.Tensor]
    ) -> tuple[Rows, torch.Tensor, dict[str, float]]:
        """(the `Rows` of the residual vectors, the (R,) rows still attached, each term's
        scale sqrt(weight / n))."""
        scales = self._scales(vectors)
        attached = torch.cat([scales[name] * vector for name, vector in vectors.items()])
        terms = {name: vector.detach().square().mean() for name, vector in vectors.items()}
        layout, start = {}, 0
        for name, vector in vectors.items():
            layout[name] = slice(start, start + vector.numel())
            start += vector.numel()
        return Rows(attached.detach(), terms, layout), attached, scales

    def _scales(self, vectors: Mapping[str, torch.Tensor]) -> dict[str, float]:
        """{term: sqrt(weight / number of its residuals)}."""
        unknown = set(self.weights) - set(vectors)
        if unknown:
            raise ConfigError(
                f"problem.weights names unknown loss term(s) {sorted(unknown)}; "
                f"the terms are {list(vectors)}"
            )
        return {
            name: (self.weights.get(name, 1.0) / max(vector.numel(), 1)) ** 0.5
            for name, vector in vectors.items()
        }


def flat(tensors: Sequence[torch.Tensor]) -> torch.Tensor:
    """(P,) the tensors' values, flattened and concatenated (detached)."""
    return torch.cat([t.detach().reshape(-1) for t in tensors])
