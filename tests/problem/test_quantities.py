"""Quantities of interest: integrals and values against exact ones, their refusals, and a run
that reports them in metrics.json and the history."""

import csv
import json
import math
import textwrap

import pytest
import torch
from torch import nn

from pinn import Box, ConfigError, Dirichlet, Disk, Problem, compose_config, train
from pinn.errors import PinnError
from pinn.outputs.metrics import json_safe
from pinn.problem.quantities import (
    QuantityTools,
    error_kind,
    evaluate_quantities,
    quantity_errors,
    ring_quadrature,
)


class Known(nn.Module):
    """A pointwise 'network' computing a known function of the (N, d) points: (N, 1)."""

    def __init__(self, function):
        super().__init__()
        self.function = function
        self.anchor = nn.Parameter(torch.zeros((), dtype=torch.float64))  # gives the dtype

    def forward(self, x):
        return self.function(x)[:, None] + 0 * self.anchor


class Plate(Problem):
    """A square with a round hole; u = x² + y² (the residual is unused)."""

    domain = Box([-1.0, -1.0], [1.0, 1.0]) - Disk([0.0, 0.0], 0.5, name="hole")

    def residual(self, x, u):
        return u()


def squares(x):
    return x[:, 0] ** 2 + x[:, 1] ** 2


def test_a_boundary_integral_over_a_hole_is_the_trapezoidal_rule():
    q = QuantityTools(Plate(), Known(squares))
    # The flux of grad u = 2x through the circle of radius r is 2r * 2πr; the domain's outward
    # normals on the hole point into it, so the integral is minus that.
    flux = q.boundary_integral(lambda x, u, n: (u.grad() * n).sum(dim=1), on="hole")
    assert flux.item() == pytest.approx(-4 * math.pi * 0.25, rel=1e-13)
    length = q.boundary_integral(lambda x, u, n: torch.ones_like(x[:, 0]), on="hole")
    assert length.item() == pytest.approx(math.pi, rel=1e-14)
    # The square's four faces, uncut by the hole: ∮ u ds = 4 ∫_{-1}^{1} (1 + s²) ds =
    # 4 (2 + 2/3), by the midpoint rule on ~1024 points a face: error 4 x 2 h² (s²)'' / 24,
    # h = 2/1024: 2.5e-6 (Sobol's points: about 1e-3).
    outer = q.boundary_integral(lambda x, u, n: u(), on=["x_min", "x_max", "y_min", "y_max"])
    assert outer.item() == pytest.approx(4 * (2 + 2 / 3), abs=3e-6)


def test_boundary_quadrature_is_second_order_on_segments_and_exact_on_circles():
    """exp(x) cos(3y) over a rectangle's four faces: the error falls 16-fold when n grows
    4-fold (the midpoint rule), 6e-8 at the default 4096 points (Sobol's: 6e-4); a circle's
    trigonometric polynomial is integrated to rounding; a face cut short still integrates."""
    box = Box([-0.5, -0.5], [1.0, 1.5])
    along_y = (math.sin(4.5) + math.sin(1.5)) / 3
    along_x = math.exp(1.0) - math.exp(-0.5)
    exact = (math.exp(-0.5) + math.exp(1.0)) * along_y + along_x * (math.cos(1.5) + math.cos(4.5))

    def error(domain, n, integrand, truth, on=None):
        points, _, weights = domain.boundary_quadrature(on, n)
        return abs((weights * integrand(points)).sum().item() - truth)

    def wave(p):
        return torch.exp(p[:, 0]) * torch.cos(3 * p[:, 1])

    coarse, fine = error(box, 1024, wave, exact), error(box, 4096, wave, exact)
    assert fine < 1e-7 and 12 < coarse / fine < 20
    circle = Disk([0.1, 0.2], 0.7)
    # ∮ x² ds = 2π r (c_x² + r² / 2)
    truth = 2 * math.pi * 0.7 * (0.1**2 + 0.7**2 / 2)
    assert error(circle, 100, lambda p: p[:, 0] ** 2, truth) < 1e-13
    notched = Box([-1.0, -1.0], [1.0, 1.0]) - Box([0.0, -1.0], [1.0, 0.0], name="notch")
    # y_min is cut to [-1, 0] x {-1}: ∫ e^x dx there, drawn by rejection (Sobol)
    assert error(notched, 4096, lambda p: torch.exp(p[:, 0]), 1 - math.exp(-1), "y_min") < 1e-3


def test_a_domain_integral_and_values_at_points():
    q = QuantityTools(Plate(), Known(squares))
    # ∫ (x² + y²) over the square minus the disk: 8/3 - π r⁴ / 2 (quasi-Monte Carlo).
    mass = q.integral(lambda x, u: u())
    assert mass.item() == pytest.approx(8 / 3 - math.pi * 0.5**4 / 2, rel=2e-3)
    values = q.values([[0.75, 0.0], [0.0, -0.8]])
    torch.testing.assert_close(values, torch.tensor([0.5625, 0.64], dtype=torch.float64))
    slope = q.field([[0.75, 0.25]]).d("y")
    torch.testing.assert_close(slope, torch.tensor([0.5], dtype=torch.float64))


class WithQuantities(Plate):
    quantity_reference = {"flux": -math.pi, "profile": [0.5625, 0.64]}

    def quantities(self, q):
        return {
            "flux": q.boundary_integral(lambda x, u, n: (u.grad() * n).sum(dim=1), on="hole"),
            "profile": q.values([[0.75, 0.0], [0.0, -0.8]]),
            "count": 3,
        }


def test_the_ring_rule_integrates_polynomials_and_harmonics_exactly():
    points, weights = ring_quadrature([0.3, -0.2], 0.5, 0.75, n_radial=4, n_angular=16)
    assert points.shape == (64, 2) and weights.shape == (64,)
    radius = (points - torch.tensor([0.3, -0.2], dtype=torch.float64)).norm(dim=1)
    assert radius.min() > 0.5 and radius.max() < 0.75
    assert weights.sum().item() == pytest.approx(math.pi * (0.75**2 - 0.5**2), rel=1e-14)
    # ∫ r⁴ dA = 2π (b⁶ - a⁶) / 6 (degree 5 in r with dA = r dr dθ: exact with 4 Gauss nodes)
    fourth = (weights * radius**4).sum().item()
    assert fourth == pytest.approx(2 * math.pi * (0.75**6 - 0.5**6) / 6, rel=1e-14)
    # ∫ (x - x_c)² dA = π (b⁴ - a⁴) / 4: cos² θ, a harmonic the 16 angles hold exactly
    second = (weights * (points[:, 0] - 0.3) ** 2).sum().item()
    assert second == pytest.approx(math.pi * (0.75**4 - 0.5**4) / 4, rel=1e-14)


@pytest.mark.parametrize(
    "arguments, message",
    [
        (([0.0], 0.1, 0.2), "centre must be 2 numbers"),
        (([0.0, 0.0], 0.2, 0.2), "0 <= inner < outer"),
        (([0.0, 0.0], -0.1, 0.2), "0 <= inner < outer"),
        (([0.0, 0.0], "0", 0.2), "0 <= inner < outer"),
        (([0.0, 0.0], 0.1, math.inf), "0 <= inner < outer"),
        (([0.0, 0.0], 0.1, 0.2, 0), "n_radial must be a whole number >= 1"),
    ],
)
def test_a_bad_ring_is_refused(arguments, message):
    with pytest.raises(ConfigError, match=message):
        ring_quadrature(*arguments)


def test_an_integral_by_a_rule_of_ones_own():
    q = QuantityTools(Plate(), Known(squares))
    # ∫ (x² + y²) over the ring 0.5 <= r <= 0.8 around the hole: 2π (0.8⁴ - 0.5⁴) / 4
    ring = ring_quadrature([0.0, 0.0], 0.5, 0.8, n_radial=3, n_angular=8)
    mass = q.integral(lambda x, u: u(), quadrature=ring)
    assert mass.item() == pytest.approx(math.pi * (0.8**4 - 0.5**4) / 2, rel=1e-14)
    # the rule is taken in the model's dtype: float32 points are converted, not refused
    single = tuple(part.float() for part in ring)
    assert q.integral(lambda x, u: u(), quadrature=single).dtype == torch.float64
    points, weights = ring
    for bad, shapes in [
        ((points, weights[:-1]), r"\(24, 2\) and \(23,\)"),
        ((points[:, :1], weights), r"\(24, 1\) and \(24,\)"),
        (points, "got Tensor"),
        ((points, "heavy"), "of numbers, got Tensor, str"),
    ]:
        with pytest.raises(ConfigError, match=r"quadrature must be \(points \(M, 2\), weights"):
            q.integral(lambda x, u: u(), quadrature=bad)
        with pytest.raises(ConfigError, match=shapes):
            q.integral(lambda x, u: u(), quadrature=bad)


def test_quantities_come_back_as_numbers_and_lists_with_their_errors():
    values = evaluate_quantities(WithQuantities(), Known(squares))
    assert values["count"] == 3.0 and isinstance(values["flux"], float)
    assert values["profile"] == pytest.approx([0.5625, 0.64], rel=1e-14)
    errors = quantity_errors(values, {"flux": -3.0, "profile": [0.5625, 0.64]}, "WithQuantities")
    assert errors["flux"] == pytest.approx(abs(math.pi - 3.0) / 3.0, rel=1e-12)
    assert errors["profile"] < 1e-14


@pytest.mark.parametrize(
    ("returned", "reference", "message"),
    [
        ([1.0], {}, r"must return a dict \{name: value\}"),
        ({"a": torch.zeros(2, 2)}, {}, r"'a' must be a number or a 1-d tensor.*\(2, 2\)"),
        ({"a": "big"}, {}, r"'a' must be a number.*str"),
        ({"": 1.0}, {}, "non-empty strings"),
        ({"a": 1.0}, {"b": 2.0}, r"names \['b'\], which quantities\(\) does not return"),
        ({"a": [1.0, 2.0]}, {"a": 2.0}, "'a' has 2 value"),
    ],
)
def test_bad_quantities_are_refused(returned, reference, message):
    class Bad(Plate):
        def quantities(self, q):
            return returned

    with pytest.raises(ConfigError, match=message):
        quantity_errors(evaluate_quantities(Bad(), Known(squares)), reference, "Bad")


def test_a_bad_integrand_is_refused_with_the_shape_it_needed():
    q = QuantityTools(Plate(), Known(squares))
    with pytest.raises(ConfigError, match=r"integrand must return \(4096,\).*\(4096, 2\)"):
        q.boundary_integral(lambda x, u, n: n, on="hole")
    with pytest.raises(ConfigError, match=r"quantity points must be \(M, 2\)"):
        q.values([0.5, 0.5, 0.5])
    with pytest.raises(ConfigError, match="unknown boundary part"):
        q.boundary_integral(lambda x, u, n: u(), on="rim")


def test_an_unknown_output_in_a_quantity_is_a_one_line_pinn_error():
    """pinn's command line reports a PinnError in one line; a KeyError would be a traceback."""
    q = QuantityTools(Plate(), Known(squares))
    with pytest.raises(PinnError) as refused:
        q.values([[0.5, 0.5]], out="w")
    assert isinstance(refused.value, KeyError)  # as a missing key always was
    assert str(refused.value) == "unknown output 'w'; the outputs are ['u']"


def test_values_outside_the_domain_are_extrapolated_with_one_warning(pinn_messages):
    q = QuantityTools(Plate(), Known(squares))
    inside = q.values([[0.75, 0.75], [1.0, 0.0], [0.5, 0.0]])  # inside, a corner, the hole's rim
    assert inside.tolist() == pytest.approx([1.125, 1.0, 0.25]) and pinn_messages() == []
    assert q.values([[0.0, 0.0], [5.0, 5.0]]).tolist() == pytest.approx([0.0, 50.0])
    q.values([[5.0, 5.0]])
    warned = [m for m in pinn_messages() if "outside the domain" in m]
    assert len(warned) == 1 and "2 of the 2 points" in warned[0] and "[0.0, 0.0]" in warned[0]


def test_a_zero_reference_gets_the_absolute_error_and_the_json_stays_valid(tmp_path):
    values = {"net_flux": 2e-3, "profile": [0.1, -0.2], "exact": 3.0}
    reference = {"net_flux": 0.0, "profile": [0.0, 0.0], "exact": 2.0}
    errors = quantity_errors(values, reference, "Zero")
    assert errors["net_flux"] == pytest.approx(2e-3, rel=1e-12)
    assert errors["profile"] == pytest.approx(math.hypot(0.1, 0.2), rel=1e-12)
    assert errors["exact"] == pytest.approx(0.5, rel=1e-12)
    assert [error_kind(reference[k]) for k in reference] == ["absolute", "absolute", "relative"]
    safe = json_safe({"a": math.inf, "b": [1.0, math.nan], "c": {"d": -math.inf}, "e": 2})
    assert safe == {"a": None, "b": [1.0, None], "c": {"d": None}, "e": 2}
    json.loads(json.dumps(safe, allow_nan=False))  # strict JSON


MODULE = '''
    from math import pi

    import torch

    from pinn import Box, Dirichlet, Problem


    class Rod(Problem):
        """-u'' = pi^2 sin(pi x) on [0, 1], u(0) = u(1) = 0; exact u = sin(pi x)."""

        domain = Box([0.0], [1.0])
        conditions = [Dirichlet(on="boundary", value=0.0)]
        quantity_reference = {"mass": 2 / pi, "middle": 1.0}

        def residual(self, x, u):
            return u.d2("x") + pi**2 * torch.sin(pi * x[:, 0])

        def exact(self, x):
            return torch.sin(pi * x[:, 0])

        def quantities(self, q):
            return {
                "mass": q.integral(lambda x, u: u()),
                "middle": q.values([[0.5]]).sum(),
                "flux": q.boundary_integral(lambda x, u, n: u.d("x") * n[:, 0]),
                "profile": q.values([[0.25], [0.5], [0.75]]),
            }
'''


def test_a_run_reports_its_quantities_in_metrics_and_history(tmp_path, monkeypatch):
    (tmp_path / "rod.py").write_text(textwrap.dedent(MODULE))
    monkeypatch.syspath_prepend(str(tmp_path))
    cfg = compose_config(
        [
            "problem.target=rod.Rod",
            "~problem.params.hard_boundary",
            "problem.n_interior=64",
            "problem.n_boundary=2",
            "+problem.weights.dirichlet=10",
            "model.width=16",
            "model.depth=2",
            "trainer.phases=[adam,lbfgs]",
            "trainer.adam.steps=300",
            "trainer.lbfgs.steps=200",
            "trainer.log_every=100",
            "trainer.progress=false",
        ]
    )
    metrics = train(cfg, tmp_path / "run")
    assert metrics["rel_l2"] < 1e-3
    quantities, errors = metrics["quantities"], metrics["quantity_errors"]
    # ∫ sin(πx) = 2/π; u' n on the two ends: -u'(0) ... +u'(1) = -π - π.
    assert quantities["mass"] == pytest.approx(2 / math.pi, rel=1e-3)
    assert quantities["flux"] == pytest.approx(-2 * math.pi, rel=1e-2)
    assert len(quantities["profile"]) == 3 and set(errors) == {"mass", "middle"}
    assert errors["middle"] < 1e-3
    assert json.loads((tmp_path / "run" / "metrics.json").read_text())["quantities"] == quantities
    with open(tmp_path / "run" / "history.csv") as file:
        rows = list(csv.DictReader(file))
    assert {"q_mass", "q_middle", "q_flux"} <= set(rows[0]) and "q_profile" not in rows[0]
    assert float(rows[-1]["q_mass"]) == pytest.approx(quantities["mass"], rel=1e-3)


def test_a_quantity_named_like_a_loss_term_is_refused_before_training():
    class Clash(Plate):
        conditions = [Dirichlet(on="hole", value=0.0, name="q_flux")]

        def quantities(self, q):
            return {"flux": 1.0}

    from pinn import MLP, PointSampler, TrainSettings, fit

    problem = Clash()
    model = MLP(2, 1, width=4, depth=1).double()
    generator = torch.Generator().manual_seed(0)
    points = PointSampler(problem.domain, 16, 16, "sobol", generator, torch.float64)
    settings = TrainSettings(phases=["adam"], adam={"steps": 2}, progress=False)
    before = [p.detach().clone() for p in model.parameters()]
    with pytest.raises(ConfigError, match=r"\['q_flux'\] share their name with a loss term"):
        fit(problem, model, settings, points)
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters()))  # no step taken
