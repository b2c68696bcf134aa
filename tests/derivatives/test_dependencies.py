"""Constants to the Taylor pass: what is detached (or never depended on x) needs no rule.

The distance of a domain made of several pieces holds a detached normalisation (an `amax`,
`pinn.geometry.rfunctions.equivalence`): a hard-constrained model u = φ(x) N(x) on any domain
kind must stay on the Taylor pass and agree with torch.func in float64, while an operation
without a rule on the differentiated path is still refused, so that the engine falls back.
"""

from __future__ import annotations

import logging

import pytest
import torch
from jet_checks import assert_jet_matches
from jet_checks import torch_func_reference as reference
from torch import nn

from pinn.derivatives.engines import Engine, TaylorField, resolve_engine
from pinn.derivatives.rules import rule_for
from pinn.derivatives.taylor import taylor_forward, taylor_supported
from pinn.derivatives.taylor_pass import trace_model
from pinn.geometry import Ball, Box, Disk, Domain, Polygon, SpaceTime
from pinn.nn import MLP
from pinn.nn.constraints import HardConstraint

DTYPE = torch.float64
TOL = {"rtol": 1e-10, "atol": 1e-10}
ON_TAYLOR = "residual engine: taylor (auto: every operation of the model has a Taylor rule)"
L_SHAPE = [[0, 0], [2, 0], [2, 1], [1, 1], [1, 2], [0, 2]]


def plate_with_hole() -> Domain:
    return Box([0, 0], [1, 1]) - Disk([0.5, 0.5], 0.2, name="hole")


# name: (the domain, the boundary parts the distance vanishes on; None: all of them)
DOMAINS = {
    "box-2d": (lambda: Box([0, 0], [1, 2]), None),
    "box-3d": (lambda: Box([0, 0, 0], [1, 2, 1]), None),
    "disk": (lambda: Disk([0.2, -0.1], 1.0), None),
    "ball": (lambda: Ball([0.0, 0.0, 0.0], 1.0), None),
    "polygon-L": (lambda: Polygon(L_SHAPE), None),
    "union": (lambda: Box([0, 0], [2, 1]) | Disk([2, 0.5], 0.75), None),
    "intersection": (lambda: Box([0, 0], [2, 2]) & Disk([0, 0], 2.5), None),
    "cube-minus-ball": (lambda: Box([0, 0, 0], [1, 1, 1]) - Ball([0.5] * 3, 0.25), None),
    "box-on-two-parts": (lambda: Box([0, 0], [1, 2]), ["x_min", "y_max"]),
    "hole-and-face": (plate_with_hole, ["hole", "x_min"]),
    "space-time": (lambda: SpaceTime(Disk([0, 0], 1.0), 0.0, 1.0), ["circle", "t_min"]),
}


def constrained(name: str, generator: torch.Generator) -> tuple[nn.Module, torch.Tensor]:
    """u = φ(x) N(x) (N: a 12x2 tanh MLP with two outputs) and 8 (8, d) interior points."""
    build, parts = DOMAINS[name]
    domain = build()
    network = MLP(domain.dim, 2, 12, 2, "tanh", generator=generator).to(DTYPE)

    def transform(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return torch.zeros_like(x[:, 0]), domain.distance(x, on=parts)

    points = domain.sample_interior(8, generator, "uniform", dtype=DTYPE)
    return HardConstraint(network, transform), points


def close(actual, expected, msg=None):
    torch.testing.assert_close(actual, expected, **TOL, msg=msg)


def assert_matches_torch_func(model, x: torch.Tensor) -> None:
    assert_jet_matches(model, x, *reference(model, x))


def traced_ops(model, x: torch.Tensor) -> set[str]:
    """The aten packets ("amax", "sort", ...) of the model's traced graph."""
    names = {str(call.target) for call in trace_model(model, x).program}
    return {name.split(".")[1] for name in names if name.startswith("aten.")}


@pytest.mark.parametrize("name", DOMAINS)
def test_the_distance_of_every_domain_kind_stays_on_the_taylor_pass(
    name, generator, caplog, pinn_messages
):
    model, x = constrained(name, generator)
    with caplog.at_level(logging.INFO, logger="pinn"):
        engine = Engine("auto", model, x[:2])
    assert engine.name == "taylor"
    assert pinn_messages() == [ON_TAYLOR]
    assert_matches_torch_func(model, x)
    # Through the engine too: the second field of a site is one planned Taylor pass.
    names = [f"x{i}" for i in range(x.shape[1])]
    recorder = engine.field(x, names, ("u", "v"), "interior")
    expected = [recorder.laplacian("v"), recorder.d2("x0", out="v")]
    planned = engine.field(x, names, ("u", "v"), "interior")
    assert isinstance(planned, TaylorField)
    close(planned.laplacian("v"), expected[0])
    close(planned.d2("x0", out="v"), expected[1])


def test_a_distance_of_several_pieces_holds_its_normalisation_without_a_rule(generator):
    """What the previous test covers: the cube minus a ball's `amax` (detached) runs on values,
    not through its Taylor rule."""
    model, x = constrained("cube-minus-ball", generator)
    calls = [call for call in trace_model(model, x).program if "amax" in str(call.target)]
    assert calls and all(getattr(call.rule, "on_values", False) for call in calls)


class DetachedScales(nn.Module):
    """Rule-less operations on values that carry no derivative, used as scales of tanh(x W)."""

    def __init__(self, generator: torch.Generator):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(3, 4, generator=generator, dtype=DTYPE))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.tanh(x @ self.weight)  # (N, 4)
        peak = torch.logcumsumexp(h.abs(), dim=1)[:, -1:].detach()  # on x's path, detached after
        top = torch.sort(h.detach(), dim=1).values[:, -1:]  # detached before
        rank = torch.argmax(h, dim=1, keepdim=True).to(x.dtype) + 1  # an integer
        fixed = torch.special.erfcx(self.weight).sum()  # of the weights only
        return (h / peak).sum(dim=1, keepdim=True) * (1 + top**2) * rank + fixed


def test_rule_less_operations_on_detached_values_stay_on_the_pass(generator, caplog, pinn_messages):
    model = DetachedScales(generator)
    x = torch.rand(16, 3, generator=generator, dtype=DTYPE)
    ops = traced_ops(model, x)
    for op in ("logcumsumexp", "sort", "argmax", "special_erfcx"):
        assert op in ops, op
        assert rule_for(getattr(torch.ops.aten, op)) is None, f"{op} has a rule: pick another"
    with caplog.at_level(logging.INFO, logger="pinn"):
        assert Engine("auto", model, x[:2]).name == "taylor"
    assert pinn_messages() == [ON_TAYLOR]
    assert_matches_torch_func(model, x)
    _, _, full = reference(model, x)
    close(taylor_forward(model, x, [0, 1, 2], "full").second, full, "full Hessian")


def undetached_logcumsumexp(x: torch.Tensor) -> torch.Tensor:
    return torch.logcumsumexp(torch.sin(x), dim=1)


def sorted_values(x: torch.Tensor) -> torch.Tensor:
    return torch.sort(torch.sin(x).detach() + x, dim=1).values


@pytest.mark.parametrize(
    ("model", "op"),
    [
        (undetached_logcumsumexp, "aten.logcumsumexp.default"),
        (sorted_values, "aten.sort"),
    ],
)
def test_a_rule_less_operation_on_the_differentiated_path_is_still_refused(
    model, op, caplog, pinn_messages
):
    x = torch.rand(4, 3, dtype=DTYPE)
    supported, reason = taylor_supported(model, x)
    assert not supported
    assert reason.startswith(f"the Taylor pass has no rule for {op}")
    assert "test_dependencies.py" in reason  # where the model calls it
    with caplog.at_level(logging.INFO, logger="pinn"):
        assert Engine("auto", model, x[:2]).name == "autograd"
    (message,) = pinn_messages()
    assert message.startswith(
        f"residual engine: autograd (auto: falling back to autograd because the Taylor pass "
        f"has no rule for {op}"
    )
    assert resolve_engine("auto", model, x[:2])[0] == "autograd"
