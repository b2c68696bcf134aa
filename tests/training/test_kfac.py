"""KFAC for PINN losses: the taps on the Taylor pass give every row's Jacobian exactly; the
Kronecker factors equal the Gauss-Newton block J^T J (torch.func, float64) where the
approximation is exact; the damped solves equal dense ones; the phase lowers Poisson's loss,
trains parameters without factors by their diagonal, resumes bit for bit from any checkpoint,
and refuses bad settings in one line."""

import io
import re
from types import SimpleNamespace

import pytest
import torch
from test_residual_rows import CASES, Dispersive, PeriodicHeat, make, reverse_of_every_row
from test_trainer import flat, resume_from_each, small_run
from torch import nn

from pinn import ConfigError, TrainSettings, fit
from pinn.derivatives.engines import Engine
from pinn.geometry import Batch, Box, PointSampler
from pinn.nn import MLP, InputOptions, PirateNet
from pinn.problem import Dirichlet, Problem
from pinn.problems.inverse_poisson import InversePoisson
from pinn.problems.poisson import Poisson
from pinn.training.distributed import World
from pinn.training.optim.kfac import KFAC
from pinn.training.optim.kronecker import damp, kronecker_solve
from pinn.training.phases import KFACPhase, KFACSettings
from pinn.training.rows.layer_curvature import LayerCurvatureRows, factored_layers, group_of
from pinn.training.rows.residual_rows import ResidualRows, parameters

# ---- the taps and the factors against torch.func --------------------------------------------


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


# ---- the damped solves ------------------------------------------------------------------------


def spd(n, seed):
    g = torch.Generator().manual_seed(seed)
    m = torch.randn(n, n, generator=g, dtype=torch.float64)
    return m @ m.T + 0.1 * torch.eye(n, dtype=torch.float64)


@pytest.mark.parametrize("pairs", [1, 2])
def test_kronecker_solve_equals_the_dense_solve(pairs):
    factors = [(spd(5, 2 * k), spd(3, 2 * k + 1)) for k in range(pairs)]
    gradient = torch.randn(3, 5, generator=torch.Generator().manual_seed(9), dtype=torch.float64)
    dense = sum(torch.kron(B, A) for A, B in factors)
    solved = kronecker_solve(factors, gradient)
    expected = torch.linalg.solve(dense, gradient.reshape(-1)).reshape(3, 5)
    assert (solved - expected).abs().max() <= 1e-10 * expected.abs().max()


def test_damping_is_split_between_the_factors_by_their_scales():
    A, B = spd(4, 0) * 100.0, spd(3, 1)
    damped_a, damped_b = damp(A, B, 1e-2)
    pi = ((A.trace() / 4) / (B.trace() / 3)).sqrt()
    eye4, eye3 = torch.eye(4, dtype=torch.float64), torch.eye(3, dtype=torch.float64)
    assert torch.allclose(damped_a - A, pi * 0.1 * eye4)
    assert torch.allclose(damped_b - B, 0.1 / pi * eye3)


# ---- the phase -------------------------------------------------------------------------------

RUN = dict(phases=["adam", "kfac"], adam={"steps": 100}, log_every=5)


@pytest.mark.parametrize(
    "settings, fall",
    [({}, 0.1), ({"approximation": "reduce"}, 0.2), ({"step_rule": "line_search"}, 0.25)],
)
def test_kfac_lowers_poissons_loss_in_a_few_iterations(settings, fall):
    model, result = small_run(**RUN, kfac={"steps": 10, **settings})
    adam_end = [row for row in result.history if row["phase"] == "adam"][-1]["loss"]
    rows = [row for row in result.history if row["phase"] == "kfac"]
    assert len(rows) == 10 and all(row["gn_length"] > 0 for row in rows)
    # measured from 0.113 after Adam: 0.054 (expand, kfac_star), 0.10 (reduce), 0.12 (the
    # KFAC direction alone, its search taking lengths 1/128 to 1/32 at this small damping)
    assert result.final_loss < fall * adam_end, settings


def test_parameters_without_factors_train_by_their_diagonal():
    """A FactorizedLinear network has no nn.Linear: every parameter takes the diagonal
    block, and the loss still falls; an inverse problem's unknown moves towards its value."""
    problem = Poisson(hard_boundary=False)
    model = MLP(
        2,
        1,
        width=8,
        depth=2,
        inputs=InputOptions(factorize=(1.0, 0.1)),
        generator=torch.Generator().manual_seed(0),
    ).double()
    assert factored_layers(model, torch.zeros(2, 2, dtype=torch.float64)) == []
    before = flat(model).clone()
    points = PointSampler(
        problem.domain, 64, 32, "sobol", torch.Generator().manual_seed(1), dtype=torch.float64
    )
    settings = TrainSettings(**RUN, kfac={"steps": 5}, progress=False)
    result = fit(problem, model, settings, points)
    kfac = [row["loss"] for row in result.history if row["phase"] == "kfac"]
    assert len(kfac) == 5 and kfac[-1] < kfac[0]
    assert not torch.equal(before, flat(model))


def test_an_inverse_problems_unknown_is_trained():
    problem = InversePoisson()
    _, result = small_run(problem=problem, **RUN, kfac={"steps": 10})
    kfac = [row["loss"] for row in result.history if row["phase"] == "kfac"]
    assert kfac[-1] < 0.5 * kfac[0]


def test_resuming_from_any_checkpoint_ends_exactly_like_the_uninterrupted_run(
    written_checkpoints,
):
    settings = dict(
        RUN, adam={"steps": 20}, kfac={"steps": 12, "resample_every": 5}, checkpoint_every=4
    )
    model, result = small_run(**settings, fit_options={"checkpoint_path": "unused.pt"})
    written = list(written_checkpoints)
    states = resume_from_each(written, settings, model, result)
    phases = [state["training"]["phase"] for state in states]
    assert phases.count("kfac") >= 2 and phases[-1] == "done"
    in_kfac = [data for data, phase in zip(written, phases) if phase == "kfac"]
    saved = torch.load(io.BytesIO(in_kfac[-1]), weights_only=True)["training"]["phase_state"]
    A, B = saved["optimizer"]["factors"]["pde"]["3"]
    assert A.shape == (9, 9) and B.shape == (8, 8) and A.dtype == torch.float64
    assert saved["optimizer"]["previous"].shape == flat(model).shape


@pytest.mark.parametrize(
    "key, value, message",
    [
        ("approximation", "full", "trainer.kfac.approximation must be one of expand, reduce"),
        ("step_rule", "adam", "trainer.kfac.step_rule must be one of kfac_star, line_search"),
        ("damping", 0.0, "trainer.kfac.damping must be a finite number > 0"),
        ("damping", float("nan"), "trainer.kfac.damping must be a finite number > 0"),
        ("ema", 1.0, "trainer.kfac.ema must be in [0, 1)"),
        ("line_search", 0, "trainer.kfac.line_search"),
        ("max_tries", 0, "trainer.kfac.max_tries"),
        ("steps", -1, "trainer.kfac.steps"),
        ("stall_decrease", 1.0, "trainer.kfac.stall_decrease must be in [0, 1)"),
        ("momentum", 0.9, "trainer.kfac has no key momentum"),
    ],
)
def test_bad_settings_are_refused_in_one_line(key, value, message):
    with pytest.raises(ConfigError, match=re.escape(message)) as refused:
        TrainSettings(kfac={key: value})
    assert "\n" not in str(refused.value)


def test_a_residual_of_order_three_is_refused_in_one_line():
    with pytest.raises(ConfigError, match="KFAC carries derivatives up to the second order"):
        small_run(problem=Dispersive(), **RUN, kfac={"steps": 2})


def test_a_periodic_condition_with_two_rows_per_point_trains():
    _, result = small_run(problem=PeriodicHeat(), **RUN, kfac={"steps": 5})
    kfac = [row["loss"] for row in result.history if row["phase"] == "kfac"]
    assert len(kfac) == 5 and kfac[-1] < kfac[0]


def test_pirate_nets_gates_take_the_diagonal_block_and_train():
    """PirateNet: its nn.Linear layers (gates, blocks, head) are factored, its blocks' scalar
    α (0 at the start) are not: they move by the diagonal block, and the loss falls."""
    problem = Poisson(hard_boundary=False)
    model = PirateNet(2, 1, width=8, depth=1, generator=torch.Generator().manual_seed(0))
    model = model.double()
    layers = factored_layers(model, torch.zeros(2, 2, dtype=torch.float64))
    linear = [name for name, m in model.named_modules() if isinstance(m, nn.Linear)]
    assert sorted(layers) == sorted(linear) and len(linear) >= 5
    points = PointSampler(
        problem.domain, 64, 32, "sobol", torch.Generator().manual_seed(1), dtype=torch.float64
    )
    settings = TrainSettings(phases=["kfac"], kfac={"steps": 5}, log_every=5, progress=False)
    assert model.blocks[0].alpha.item() == 0.0
    result = fit(problem, model, settings, points)
    kfac = [row["loss"] for row in result.history if row["phase"] == "kfac"]
    assert len(kfac) == 5 and kfac[-1] < 0.5 * kfac[0]
    assert model.blocks[0].alpha.item() != 0.0


def test_a_float32_model_takes_float64_steps_and_stays_float32():
    model, result = small_run(dtype=torch.float32, **RUN, kfac={"steps": 5})
    kfac = [row["loss"] for row in result.history if row["phase"] == "kfac"]
    assert all(p.dtype == torch.float32 for p in model.parameters())
    assert len(kfac) == 5 and kfac[-1] < 0.5 * kfac[0]  # measured: 0.091 to 0.025


class Branching(nn.Module):
    """A network whose forward branches on its points' values: no Taylor pass runs it."""

    def __init__(self):
        super().__init__()
        self.layer = nn.Linear(2, 1).double()

    def forward(self, x):
        return self.layer(x) if x.sum() > 0 else -self.layer(x)


def test_a_model_the_taylor_pass_cannot_run_is_refused_before_training():
    problem = Poisson(hard_boundary=False)
    points = PointSampler(
        problem.domain, 16, 8, "sobol", torch.Generator().manual_seed(1), dtype=torch.float64
    )
    settings = TrainSettings(**RUN, kfac={"steps": 2}, progress=False)
    with pytest.raises(ConfigError, match="KFAC needs the Taylor pass") as refused:
        fit(problem, Branching(), settings, points)
    assert "\n" not in str(refused.value)


def test_the_preconditioner_is_the_dense_damped_blocks_solve():
    """A Linear layer named "" (the whole model) with two pairs of factors and an unknown by
    its diagonal: the direction equals the dense solve of the damped blocks, the layer's
    [W | b] laid out row by row."""
    layer, unknown = nn.Linear(3, 2).double(), torch.zeros(1, dtype=torch.float64)
    optimizer = KFAC([layer.weight, layer.bias, unknown], {"": (0, 1)}, KFACSettings(damping=0.1))
    pairs = [(spd(4, 0), spd(2, 1)), (spd(4, 2), spd(2, 3))]
    optimizer.factors = {"pde": {"": pairs[0]}, "conditions": {"": pairs[1]}}
    optimizer.diagonal = torch.tensor([2.0], dtype=torch.float64)
    g = torch.randn(9, generator=torch.Generator().manual_seed(4), dtype=torch.float64)
    tikhonov = optimizer._tikhonov()
    direction = optimizer._precondition(g, tikhonov)
    scale = sum(A.diagonal().mean() * B.diagonal().mean() for A, B in pairs)
    assert tikhonov[""] == pytest.approx(0.1 * scale.item())
    assert tikhonov[None] == pytest.approx(0.1 * 2.0)
    dense = sum(torch.kron(*reversed(damp(A, B, tikhonov[""] / 2))) for A, B in pairs)
    block = torch.cat([g[:6].view(2, 3), g[6:8, None]], dim=1).reshape(-1)
    solved = torch.linalg.solve(dense, block).view(2, 4)
    assert torch.allclose(direction[:6].view(2, 3), solved[:, :3], rtol=1e-10, atol=0)
    assert torch.allclose(direction[6:8], solved[:, 3], rtol=1e-10, atol=0)
    assert direction[8].item() == pytest.approx(g[8].item() / (2.0 + 0.2))


def test_torchrun_is_refused_in_one_line():
    with pytest.raises(ConfigError, match="kfac runs on one process") as refused:
        KFACPhase(KFACSettings()).check(SimpleNamespace(world=World(rank=0, size=2)))
    assert "\n" not in str(refused.value)
