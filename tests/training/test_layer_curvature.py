"""KFAC's Kronecker factors (`pinn.training.rows.layer_curvature`): the taps on the Taylor pass
give every row's Jacobian exactly, and the factors equal the Gauss-Newton blocks J^T J
(torch.func, float64) where the approximation is exact."""

import pytest
import torch
from test_residual_rows import CASES, PeriodicHeat, make, reverse_of_every_row
from torch import nn

from pinn.derivatives.engines import Engine
from pinn.geometry import Batch, Box, PointSampler
from pinn.problem import Dirichlet, Problem
from pinn.problem.causal import CausalSettings, CausalWeighting
from pinn.problems.poisson import Poisson
from pinn.training.rows.layer_curvature import LayerCurvatureRows, factored_layers, group_of
from pinn.training.rows.residual_rows import ResidualRows, parameters


def layer_columns(model, problem, name):
    """The columns of the flat parameters that are layer `name`'s [W | b], row by row."""
    params, layer = parameters(model, problem), model.get_submodule(name)
    offsets, start = {}, 0
    for p in params:
        offsets[id(p)] = start
        start += p.numel()
    out_features, in_features = layer.weight.shape
    weight = offsets[id(layer.weight)] + torch.arange(out_features * in_features)
    weight = weight.view(out_features, in_features)
    if layer.bias is None:
        return weight.reshape(-1)
    bias = offsets[id(layer.bias)] + torch.arange(out_features)
    return torch.cat([weight, bias[:, None]], dim=1).reshape(-1)


def curvature_of(problem, model, engine, weights, approximation="expand"):
    rows_of = ResidualRows(problem, model, engine, weights)
    x = torch.zeros(2, 2, dtype=torch.float64)
    return LayerCurvatureRows(rows_of, approximation, factored_layers(model, x))


@pytest.mark.parametrize("make_problem, weights", CASES[:-1])  # not Dispersive: order 3
def test_the_taps_give_every_rows_jacobian_exactly(make_problem, weights, generator):
    """sum_s g_rs a_s^T over a layer's positions (and fields) is row r's Jacobian for the
    layer's [W | b], for every row, to 1e-10: the inputs and gradients the factors are made of."""
    problem = make_problem()
    model, batch, engine = make(problem, "taylor", generator, n_interior=12, n_boundary=10)
    curvature = curvature_of(problem, model, engine, weights)
    recording, vectors = curvature.rows_of.record(batch)
    _, attached, scales = curvature.rows_of.assemble(vectors)
    tapped, records = curvature._tapped_rows(batch, recording, scales)
    assert torch.allclose(tapped, attached, rtol=0, atol=1e-12)
    _, expected = reverse_of_every_row(problem, model, batch, engine, weights)
    probes = [probe for record in records for probe in record.probes]
    eye = torch.eye(tapped.numel(), dtype=tapped.dtype)
    grads = torch.autograd.grad(tapped, probes, eye, is_grads_batched=True, allow_unused=True)
    assert curvature.layers and len(curvature.layers) == len(
        [m for m in model.modules() if isinstance(m, nn.Linear)]
    )
    for name in curvature.layers:
        total, start = 0, 0
        for record in records:
            pieces = grads[start : start + len(record.probes)]
            start += len(record.probes)
            if record.layer != name:
                continue
            g = torch.cat(
                [
                    (torch.zeros((tapped.numel(), *p.shape)) if q is None else q).reshape(
                        tapped.numel(), -1, *p.shape[-2:]
                    )
                    for q, p in zip(pieces, record.probes)
                ],
                dim=1,
            )  # (R, S, N, out)
            total = total + torch.einsum("rsno,sni->roi", g, record.inputs)
        columns = layer_columns(model, problem, name)
        assert (total.reshape(tapped.numel(), -1) - expected[:, columns]).abs().max() <= 1e-10


@pytest.mark.parametrize("approximation", ["expand", "reduce"])
def test_on_one_boundary_point_the_factors_are_the_gauss_newton_blocks(approximation, generator):
    """A condition at one point is one row reading one position (the value) per layer: its
    Gauss-Newton block per layer is exactly B ⊗ A, for a deep network, both approximations."""
    problem = Poisson(hard_boundary=False)
    model, batch, engine = make(problem, "taylor", generator, n_interior=3, n_boundary=1)
    weights = {"dirichlet": 4.0}
    curvature = curvature_of(problem, model, engine, weights, approximation)
    rows = curvature(batch, torch.Generator().manual_seed(0))
    _, J = reverse_of_every_row(problem, model, batch, engine, weights)
    boundary = J[rows.layout["dirichlet"]]
    assert boundary.shape[0] == 1
    for name in curvature.layers:
        A, B = rows.factors["conditions"][name]
        columns = layer_columns(model, problem, name)
        exact = boundary[:, columns].T @ boundary[:, columns]
        assert exact.abs().max() > 1e-3
        assert (torch.kron(B, A) - exact).abs().max() <= 1e-12 * exact.abs().max()


class Transport(Problem):
    """u_x = 1 on the unit square (a first-order operator: one position per layer)."""

    domain = Box([0.0, 0.0], [1.0, 1.0])
    conditions = [Dirichlet(on="x_min", value=0.0)]

    def residual(self, x, u):
        return u.d("x") - 1.0


@pytest.mark.parametrize("approximation", ["expand", "reduce"])
def test_one_linear_layer_at_one_point_its_pde_factor_is_the_gauss_newton_matrix(approximation):
    """u = W x + b, the PDE row at one point reads only the layer's x-derivative position:
    J^T J from torch.func (jacrev of the residual through torch.func's own derivative) equals
    B ⊗ A; with both groups, the sum of the two Kronecker products equals the whole matrix."""
    problem, model = Transport(), nn.Linear(2, 1).double()
    torch.nn.init.normal_(model.weight, generator=torch.Generator().manual_seed(1))
    points = torch.tensor([[0.3, 0.7]], dtype=torch.float64)
    sampler = PointSampler(
        problem.domain, 1, 4, "uniform", torch.Generator().manual_seed(0), dtype=torch.float64
    )
    drawn = sampler.draw()
    mask = drawn.boundary.points[:, 0] == 0.0
    assert mask.any()
    engine = Engine("taylor", model, probe=points, announce=False)
    curvature = LayerCurvatureRows(ResidualRows(problem, model, engine), approximation, [""])
    batch = Batch(points, drawn.boundary)
    rows = curvature(batch, torch.Generator().manual_seed(0))
    theta = {k: v.detach() for k, v in model.named_parameters()}

    def pde_row(params):
        def u(x):
            return torch.func.functional_call(model, params, (x[None],))[0, 0]

        return torch.func.grad(u)(points[0])[0:1] - 1.0

    jac = torch.func.jacrev(pde_row)(theta)
    J = torch.cat([jac["weight"].reshape(1, -1), jac["bias"].reshape(1, -1)], dim=1)
    A, B = rows.factors["pde"][""]
    assert J.abs().max() > 0.5
    assert torch.allclose(torch.kron(B, A), J.T @ J, rtol=0, atol=1e-14)
    boundary = rows.layout["dirichlet"]
    n = boundary.stop - boundary.start

    def condition_rows(params):
        values = torch.func.functional_call(model, params, (drawn.boundary.points[mask],))
        return values[:, 0] / n**0.5

    jac = torch.func.jacrev(condition_rows)(theta)
    Jc = torch.cat([jac["weight"].reshape(n, -1), jac["bias"].reshape(n, -1)], dim=1)
    Ac, Bc = rows.factors["conditions"][""]
    # n points: KFAC's (mean a a^T) ⊗ (sum g g^T) equals sum_n a a^T g² when g is constant
    assert torch.allclose(torch.kron(Bc, Ac), Jc.T @ Jc, rtol=0, atol=1e-14)


def test_factors_are_grouped_as_the_pde_and_the_conditions():
    assert [group_of(t) for t in ("pde", "pde_u", "dirichlet", "data")] == [
        "pde",
        "pde",
        "conditions",
        "conditions",
    ]


def test_the_tapped_rows_are_the_engines_under_causal_weights(generator):
    """The factors' rows replay the residuals with the causal weights of the engine's rows."""
    problem = PeriodicHeat()
    model, batch, engine = make(problem, "taylor", generator, n_interior=24, n_boundary=10)
    causal = CausalWeighting(CausalSettings(chunks=4, tolerance=5.0, time="t"))
    rows_of = ResidualRows(problem, model, engine, {"periodic": 2.0}, causal=causal)
    curvature = LayerCurvatureRows(rows_of, "expand", factored_layers(model, batch.interior))
    recording, vectors = rows_of.record(batch)
    _, attached, scales = rows_of.assemble(vectors)
    assert causal.weights.min() < 0.99  # weights worth replaying
    tapped, _ = curvature._tapped_rows(batch, recording, scales)
    assert torch.allclose(tapped, attached, rtol=0, atol=1e-12)
