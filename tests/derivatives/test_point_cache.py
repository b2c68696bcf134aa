"""What the Taylor pass computes from the points alone (a hard constraint's g and B) is kept per
point set and reused (`pinn.derivatives.point_cache`): the reused passes against torch.func in
float64 after the weights change, and every way the kept values could go stale (the points
written in place, new points, other directions, a constant written in place, random draws)."""

from __future__ import annotations

import pytest
import torch
from jet_checks import assert_jet_matches
from jet_checks import torch_func_reference as reference
from torch.func import functional_call, grad, jacrev, vmap
from torch.utils._python_dispatch import TorchDispatchMode

from pinn.derivatives import point_cache
from pinn.derivatives.taylor import taylor_forward
from pinn.derivatives.taylor_pass import trace_model
from pinn.derivatives.univariate import taylor_derivatives
from pinn.errors import trusting
from pinn.nn.constraints import HardConstraint
from pinn.nn.mlp import MLP
from pinn.syncs import count_syncs

DTYPE = torch.float64
TOL = {"rtol": 1e-10, "atol": 1e-10}


def transform(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """g and B with derivatives in every input (sin and exp: the network uses tanh only)."""
    g = torch.sin(x[:, 0] + 2 * x[:, 1]) + (x * x).sum(dim=1)
    b = x[:, 0] * (1 - x[:, 0]) * torch.exp(x.mean(dim=1))
    return g, b


def constrained(seed: int = 0, m: int = 2, d: int = 3) -> HardConstraint:
    generator = torch.Generator().manual_seed(seed)
    return HardConstraint(MLP(d, m, 8, 2, "tanh", generator=generator).to(DTYPE), transform)


def points(n: int = 6, d: int = 3, seed: int = 1) -> torch.Tensor:
    return torch.rand(n, d, generator=torch.Generator().manual_seed(seed), dtype=DTYPE)


class _Counting(TorchDispatchMode):
    """Counts the calls of one aten operation packet."""

    def __init__(self, packet):
        super().__init__()
        self.packet, self.calls = packet, 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.calls += func.overloadpacket is self.packet
        return func(*args, **(kwargs or {}))


def sines_in_pass(model, x, directions=(0, 1, 2), second="diagonal") -> int:
    """How many aten.sin calls one Taylor pass makes (only g has a sine)."""
    with _Counting(torch.ops.aten.sin) as counting:
        taylor_forward(model, x, list(directions), second)
    return counting.calls


def perturb(model: torch.nn.Module, seed: int = 5) -> None:
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.2 * torch.randn(p.shape, generator=generator, dtype=DTYPE))


def test_the_constraints_calls_are_static_and_the_networks_are_not():
    model, x = constrained(), points()
    traced = trace_model(model, x)
    static = [call for call in traced.program if call.static]
    assert {c.target.overloadpacket for c in static} >= {torch.ops.aten.sin, torch.ops.aten.exp}
    assert not any(c.target.overloadpacket is torch.ops.aten.tanh for c in static)
    assert traced.frontier  # g and B feed u = g + B N
    plain = MLP(3, 2, 8, 2, "tanh").to(DTYPE)
    assert trace_model(plain, x).frontier == ()  # nothing to keep


def test_a_reused_pass_matches_torch_func_after_the_weights_change():
    model, x = constrained(), points()
    assert sines_in_pass(model, x) > 0  # the first pass computes g
    perturb(model)  # a training step: the network changes, g and B do not
    assert sines_in_pass(model, x) == 0  # taken from the cache
    assert sines_in_pass(model, x.detach()) == 0  # the engine passes x.detach(): same points
    # every kind of pass, each computed once then reused, against torch.func at the new weights
    for _ in range(2):
        assert_jet_matches(model, x, *reference(model, x))


def test_parameter_gradients_through_a_reused_pass_match_torch_func():
    model, x = constrained(), points()
    taylor_forward(model, x, [0, 1, 2], "diagonal")  # fills the cache
    perturb(model)
    jet = taylor_forward(model, x, [0, 1, 2], "diagonal")
    params = dict(model.named_parameters())

    def loss_of(value, first, second):  # u_0 Δu_1 + (∂_0 u_0)²
        return (value[:, 0] * second[:, 1].sum(-1) + first[:, 0, 0] ** 2).square().mean()

    actual = torch.autograd.grad(loss_of(*jet), list(params.values()))

    def reference_loss(state):
        def single(point):
            return functional_call(model, state, (point[None],))[0]

        value = functional_call(model, state, (x,))
        first = vmap(jacrev(single))(x)
        second = vmap(jacrev(jacrev(single)))(x).diagonal(dim1=-2, dim2=-1)
        return loss_of(value, first, second)

    expected = grad(reference_loss)(params)
    for got, name in zip(actual, params):
        torch.testing.assert_close(got, expected[name], **TOL, msg=name)


def test_points_written_in_place_or_new_points_are_computed_again():
    model, x = constrained(), points()
    taylor_forward(model, x, [0, 1, 2], "diagonal")
    x.mul_(0.5)  # a redraw into the same tensor: its version changes
    assert sines_in_pass(model, x) > 0
    assert_jet_matches(model, x, *reference(model, x))
    other = points(seed=7)  # new points of the same shape
    assert sines_in_pass(model, other) > 0
    assert_jet_matches(model, other, *reference(model, other))


def test_other_directions_or_orders_are_kept_apart():
    model, x = constrained(), points()
    for directions, second in (((0, 1, 2), "diagonal"), ((1,), "diagonal"), ((0, 1, 2), "full")):
        assert sines_in_pass(model, x, directions, second) > 0  # each its own entry
    value, gradient, full = reference(model, x)
    for _ in range(2):  # computed, then reused: the same values
        jet = taylor_forward(model, x, [1], "diagonal")
        torch.testing.assert_close(jet.first[..., 0], gradient[..., 1], **TOL)
        torch.testing.assert_close(jet.second[..., 0], full[..., 1, 1], **TOL)
        collapsed = taylor_forward(model, x, [0, 2], "collapsed")
        laplacian = full[..., 0, 0] + full[..., 2, 2]
        torch.testing.assert_close(collapsed.second, laplacian, **TOL)


def test_a_constant_written_in_place_is_seen():
    shift = torch.tensor([0.5], dtype=DTYPE)

    def shifted(x):
        return torch.sin(x[:, 0]) + shift, x[:, 0] * (1 - x[:, 0])

    model, x = HardConstraint(MLP(3, 1, 8, 1, "tanh").to(DTYPE), shifted), points()
    first = taylor_forward(model, x, [0], "diagonal").value
    shift.fill_(2.0)
    second = taylor_forward(model, x, [0], "diagonal").value
    torch.testing.assert_close(second, model(x), **TOL)
    torch.testing.assert_close(second - first, torch.full_like(first, 1.5), **TOL)


def test_random_draws_are_never_kept():
    def noisy(x):
        noise = torch.rand(x.shape[0], dtype=x.dtype, device=x.device)
        return torch.sin(x[:, 0]) + 1e-3 * noise, x[:, 0] * (1 - x[:, 0])

    model, x = HardConstraint(MLP(3, 1, 8, 1, "tanh").to(DTYPE), noisy), points()
    traced = trace_model(model, x)
    drawing = [c for c in traced.program if c.target.overloadpacket is torch.ops.aten.rand]
    assert drawing and not any(c.static for c in drawing)
    values = [taylor_forward(model, x, [0], "diagonal").value for _ in range(2)]
    assert not torch.equal(values[0], values[1])  # drawn again: not taken from a cache


def test_nothing_is_kept_for_points_that_need_grad_or_under_inference_mode():
    model, x = constrained(), points()
    traced = trace_model(model, x)
    taylor_forward(model, x.requires_grad_(), [0, 1, 2], "diagonal")
    assert len(traced.points_cache) == 0
    with torch.inference_mode():
        taylor_forward(model, x.detach(), [0, 1, 2], "diagonal")
    assert len(traced.points_cache) == 0


def test_a_pass_under_vmap_is_not_kept_and_still_right():
    model, x = constrained(m=1), points()
    traced = trace_model(model, x[:1])

    def value_at(point):
        return taylor_forward(model, point[None], [0], "diagonal").value[0, 0]

    values = vmap(value_at)(x)
    torch.testing.assert_close(values, model(x)[:, 0], **TOL)
    assert len(traced.points_cache) == 0


def test_at_most_a_few_point_sets_are_kept(monkeypatch):
    model = constrained()
    sets = [points(seed=s) for s in range(point_cache.ENTRIES + 2)]
    for x in sets:
        taylor_forward(model, x, [0, 1, 2], "diagonal")
    assert len(trace_model(model, sets[0]).points_cache) == point_cache.ENTRIES
    assert sines_in_pass(model, sets[-1]) == 0  # the newest kept
    assert sines_in_pass(model, sets[0]) > 0  # the oldest dropped
    monkeypatch.setattr(point_cache, "MAX_BYTES", 0)  # a frontier too large to hold
    fresh = points(seed=99)
    taylor_forward(model, fresh, [0, 1, 2], "diagonal")
    assert sines_in_pass(model, fresh) > 0


@pytest.mark.parametrize("second", ["diagonal", "collapsed"])
def test_a_reused_pass_waits_for_nothing(second):
    model, x = constrained(), points()
    directions = torch.arange(3)  # the engine's constant
    taylor_forward(model, x, directions, second)
    with trusting(), count_syncs() as syncs:  # as between logged rows: no checks of values
        taylor_forward(model, x.detach(), directions, second)
    assert syncs.total == 0, syncs.counts


def test_a_reused_series_pass_matches_nested_derivatives():
    model, x = constrained(m=1), points()
    taylor_derivatives(model, x, 1, 3)
    perturb(model)
    with _Counting(torch.ops.aten.sin) as counting:
        series = taylor_derivatives(model, x, 1, 3)
    assert counting.calls == 0

    def along(point):
        return model(point[None])[0, 0]

    d1 = jacrev(along)
    d3 = vmap(jacrev(jacrev(d1)))(x)[:, 1, 1, 1]
    torch.testing.assert_close(series.derivatives[:, 0, 2], d3, **TOL)
