"""Validation: the evaluation set fits the domain; errors against exact or reference data."""

import json
import math

import numpy as np
import pytest
import torch
from problem_helpers import Bump

from pinn import (
    Box,
    ConfigError,
    Disk,
    Polygon,
    Problem,
    SpaceTime,
    Validator,
    compose_config,
    evaluation_points,
    train,
)
from pinn.evaluation.validation import EVAL_POINTS


class Sampled(Problem):
    """Reference data only: u = 1 + x² at 50 given points of the unit square, (M,) or (M, 1)."""

    domain = Box([0.0, 0.0], [1.0, 1.0])

    def __init__(self, column: bool = False, points=None, values=None):
        grid = torch.rand(50, 2, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
        self.points = grid if points is None else points
        truth = 1 + self.points[:, 0] ** 2
        self.values = (truth[:, None] if column else truth) if values is None else values

    def residual(self, x, u):
        return u()

    def reference(self):
        return self.points.numpy(), self.values  # numpy arrays are accepted too


class Flow(Problem):
    """Two outputs (u, p) with exact u = x, p = 10 y, for per-output errors."""

    domain = Box([0.0, 0.0], [1.0, 1.0])
    outputs = ("u", "p")

    def residual(self, x, u):
        return u()

    def exact(self, x):
        return torch.stack([x[:, 0], 10 * x[:, 1]], dim=1)


def model_of(function):
    return lambda x: function(x)[:, None] if function(x).ndim == 1 else function(x)


def test_a_box_is_evaluated_on_its_whole_grid():
    points = evaluation_points(Bump(Box([0.0, 0.0], [2.0, 1.0])), dtype=torch.float64)
    assert points.shape == (100 * 100, 2)
    assert torch.equal(points, Box([0.0, 0.0], [2.0, 1.0]).grid(100, dtype=torch.float64))


def in_disk(center, radius):
    return lambda p: (p[:, :2] - torch.tensor(center)).norm(dim=1) <= radius + 1e-12


def in_l_shape(p):
    inside_box = ((p >= 0) & (p <= 2)).all(dim=1)
    return inside_box & ~((p[:, 0] > 1) & (p[:, 1] > 1))


@pytest.mark.parametrize(
    ("domain", "inside"),
    [
        (Disk([0.5, 0.0], 2.0), in_disk([0.5, 0.0], 2.0)),
        (Polygon([[0, 0], [2, 0], [2, 1], [1, 1], [1, 2], [0, 2]]), in_l_shape),
        (
            Box([0.0, 0.0], [1.0, 1.0]) - Disk([0.5, 0.5], 0.3, name="hole"),
            lambda p: ~in_disk([0.5, 0.5], 0.3 - 2e-12)(p),
        ),
        (SpaceTime(Disk([0.0, 0.0], 1.0), 0.0, 1.0), in_disk([0.0, 0.0], 1.0)),
    ],
)
def test_other_shapes_are_evaluated_at_grid_points_inside_them(domain, inside):
    points = evaluation_points(Bump(domain), dtype=torch.float64)
    # About EVAL_POINTS inside: the grid is sized by the share of the box the shape fills.
    assert 0.8 * EVAL_POINTS < len(points) < 1.2 * EVAL_POINTS
    lower, upper = torch.tensor(domain.lower), torch.tensor(domain.upper)
    assert ((points >= lower) & (points <= upper)).all() and inside(points).all()
    # A grid: every coordinate takes few distinct values.
    assert all(len(torch.unique(points[:, a])) < 0.1 * len(points) for a in range(domain.dim))


def test_high_dimensions_are_evaluated_at_sobol_points_inside():
    domain = Box([0.0] * 5, [1.0] * 5)
    points = evaluation_points(Bump(domain), n_points=512, dtype=torch.float64)
    assert points.shape == (512, 5) and domain.contains(points).all()
    assert torch.equal(points, evaluation_points(Bump(domain), n_points=512, dtype=torch.float64))


def test_errors_against_the_exact_solution():
    problem = Bump(Disk([0.0, 0.0], 1.0))
    validator = Validator(problem)
    assert validator.source == "exact"
    assert validator.errors(model_of(problem.exact)) == {"rel_l2": 0.0, "max_abs_error": 0.0}
    errors = validator.errors(model_of(lambda x: 1.01 * problem.exact(x)))
    assert errors["rel_l2"] == pytest.approx(0.01, rel=1e-9)
    assert errors["max_abs_error"] == pytest.approx(0.02, rel=1e-3)  # max of u is 2 at |x| = 1


@pytest.mark.parametrize("column", [False, True])
def test_errors_against_reference_data(column):
    problem = Sampled(column=column)
    validator = Validator(problem)
    assert validator.source == "reference"
    assert validator.points.shape == (50, 2) and validator.reference.shape == (50, 1)
    assert torch.equal(validator.points, problem.points)

    def shifted(x):
        return 1 + x[:, :1] ** 2 + 0.1

    error = torch.full((50, 1), 0.1, dtype=torch.float64)
    expected = (error.norm() / validator.reference.norm()).item()
    errors = validator.errors(shifted)
    assert errors["rel_l2"] == pytest.approx(expected, rel=1e-12)
    assert errors["max_abs_error"] == pytest.approx(0.1, rel=1e-12)


def test_several_outputs_get_an_error_each():
    problem = Flow()
    errors = Validator(problem).errors(
        model_of(lambda x: problem.exact(x) * torch.tensor([1.0, 1.1], dtype=torch.float64))
    )
    assert errors["rel_l2_u"] == 0.0
    assert errors["rel_l2_p"] == pytest.approx(0.1, rel=1e-9)
    # Over both outputs together p dominates: ||0.1 p|| / ||(u, p)||.
    assert 0.09 < errors["rel_l2"] < 0.1


@pytest.mark.parametrize(
    ("points", "values", "message"),
    [
        (torch.zeros(5, 3), torch.zeros(5), r"points must be \(M, 2\)"),
        (torch.zeros(5, 2), torch.zeros(4), r"values must be \(5,\) or \(5, 1\)"),
        (torch.zeros(5, 2), torch.zeros(5, 2), r"values must be \(5,\) or \(5, 1\)"),
        (torch.zeros(5, 2), torch.full((5,), math.nan), "finite"),
        (torch.zeros(0, 2), torch.zeros(0), r"M >= 1"),
    ],
)
def test_bad_reference_data_is_refused(points, values, message):
    with pytest.raises(ConfigError, match=message):
        Validator(Sampled(points=points, values=values))


def test_one_column_of_reference_values_for_several_outputs_is_refused_as_it_came():
    """Flow has outputs u and p: (5,) values are refused as (5,), and the message offers only
    the shape that would do, (5, 2), or a dict for some outputs."""

    class FlowSampled(Flow):
        def reference(self):
            return torch.zeros(5, 2), torch.zeros(5)

    with pytest.raises(ConfigError) as refused:
        Validator(FlowSampled())
    message = str(refused.value)
    assert "values must be (5, 2)" in message and "got (5,);" in message
    assert "(5,) or" not in message and "{'u': (points, values)}" in message


def test_a_problem_without_exact_or_reference_is_refused():
    class Unknown(Problem):
        domain = Box([0.0], [1.0])

        def residual(self, x, u):
            return u()

    with pytest.raises(ConfigError, match="no exact solution or reference data"):
        Validator(Unknown())
    with pytest.raises(ConfigError, match="leave points=None"):
        Validator(Sampled(), points=torch.zeros(3, 2))


def test_reference_data_is_read_once():
    class Counting(Sampled):
        calls = 0

        def reference(self):
            self.calls += 1
            return super().reference()

    problem = Counting()
    Validator(problem)
    Validator(problem)
    assert problem.calls == 1
    assert isinstance(problem.reference_data()[0], torch.Tensor)
    assert np.allclose(problem.reference_data()[1][:, 0].numpy(), problem.values.numpy())


def test_reference_points_outside_the_domain_are_warned_of_once(caplog):
    # The columns the other way round: (t, x) points on x in [0, 1], t in [0, 2].
    x, t = torch.meshgrid(
        torch.linspace(0, 1, 5, dtype=torch.float64),
        torch.linspace(0, 2, 5, dtype=torch.float64),
        indexing="ij",
    )
    swapped = torch.stack([t.reshape(-1), x.reshape(-1)], dim=1)
    problem = Sampled(points=swapped)
    problem.domain = SpaceTime(Box([0.0], [1.0]), 0.0, 2.0)
    with caplog.at_level("WARNING"):
        problem.reference_data()
        problem.reference_data()
    warnings = [r.getMessage() for r in caplog.records if "outside the domain" in r.getMessage()]
    assert len(warnings) == 1
    assert "10 of the 25 points" in warnings[0] and "['x', 't'], in that order" in warnings[0]


def test_reference_points_on_the_boundary_in_float32_are_not_warned_of(caplog):
    # 1.1 rounded to float32 lies 2.4e-8 beyond x = 1.1: rounding, not a wrong column.
    corners = torch.tensor([[0.0, 0.0], [1.1, 0.41], [0.5, 0.2]], dtype=torch.float32)
    problem = Sampled(points=corners.double())
    problem.domain = Box([0.0, 0.0], [1.1, 0.41])
    with caplog.at_level("WARNING"):
        problem.reference_data()
    assert not [r for r in caplog.records if "outside the domain" in r.getMessage()]


class Profiles(Problem):
    """Reference data for some outputs only, each at its own points (a cavity's centrelines):
    u on the line x = 0.5 (7 points) and p on the line y = 0.25 (5 points); exact u = x, p = 10y.
    """

    domain = Box([0.0, 0.0], [1.0, 1.0])
    outputs = ("u", "v", "p")

    def __init__(self, data=None):
        self.data = data

    def residual(self, x, u):
        return u("u")

    def reference(self):
        if self.data is not None:
            return self.data
        line_u = torch.stack([torch.full((7,), 0.5), torch.linspace(0, 1, 7)], dim=1)
        line_p = torch.stack([torch.linspace(0, 1, 5), torch.full((5,), 0.25)], dim=1)
        return {"u": (line_u, line_u[:, 0]), "p": (line_p.numpy(), 10 * line_p[:, 1].numpy())}


def test_reference_data_for_some_outputs_at_their_own_points():
    validator = Validator(Profiles())
    assert validator.points.shape == (12, 2) and not validator.complete
    # u's values on its 7 points, p's on its 5; v has none, and no output has values elsewhere.
    known = torch.isfinite(validator.reference)
    assert known.sum(dim=0).tolist() == [7, 0, 5]
    assert known[:7, 0].all() and known[7:, 2].all()

    def model(x):  # u off by 0.1 everywhere, v anything, p exact
        return torch.stack([x[:, 0] + 0.1, torch.full_like(x[:, 0], 7.0), 10 * x[:, 1]], dim=1)

    errors = validator.errors(model)
    assert errors["max_abs_error_u"] == pytest.approx(0.1, rel=1e-12)
    assert errors["rel_l2_u"] == pytest.approx(0.1 / 0.5, rel=1e-12)  # u = 0.5 on its line
    assert errors["rel_l2_p"] == 0.0 and errors["max_abs_error_p"] == 0.0
    assert "rel_l2_v" not in errors  # v is not measured: the 7.0 above counts nowhere
    # Over the known values together: ||0.1 (7 times)|| / ||(0.5 x7, 2.5 x5)||.
    expected = math.sqrt(7 * 0.01) / math.sqrt(7 * 0.25 + 5 * 2.5**2)
    assert errors["rel_l2"] == pytest.approx(expected, rel=1e-12)
    assert errors["max_abs_error"] == pytest.approx(0.1, rel=1e-12)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"w": (torch.zeros(3, 2), torch.zeros(3))}, r"keyed by output name.*\['u', 'v', 'p'\]"),
        ({}, "keyed by output name"),
        ({"u": torch.zeros(3, 2)}, r"\['u'\] must be \(points, values\)"),
        ({"u": (torch.zeros(3, 2), torch.zeros(3, 1))}, r"\['u'\]: values must be \(3,\)"),
        ({"u": (torch.zeros(3, 1), torch.zeros(3))}, r"points must be \(M, 2\)"),
        ({"u": (torch.zeros(3, 2), torch.full((3,), math.inf))}, "finite"),
        ((torch.zeros(3, 2), torch.zeros(3)), r"\(3, 3\).*for some outputs only.*\{'u':"),
    ],
)
def test_bad_reference_data_per_output_is_refused(data, message):
    with pytest.raises(ConfigError, match=message):
        Validator(Profiles(data))


class FlowUpToConstant(Flow):
    up_to_constant = ("p",)


def test_an_output_up_to_a_constant_is_shifted_by_its_best_constant_before_comparing():
    def model(x):  # u off by 0.1, p right but for a constant 3 (and off by 0.2 y)
        return torch.stack([x[:, 0] + 0.1, 10 * x[:, 1] + 3 + 0.2 * x[:, 1]], dim=1)

    plain, shifted = Validator(Flow()), Validator(FlowUpToConstant())
    assert plain.errors(model)["max_abs_error_p"] == pytest.approx(3.2, rel=1e-12)
    errors = shifted.errors(model)
    # The constant is the mean difference: -3 - 0.2 mean(y) = -3.1 on the grid, symmetric in y.
    (constant,) = shifted.constants(model).values()
    assert constant == pytest.approx(-3.1, rel=1e-12)
    assert errors["max_abs_error_p"] == pytest.approx(0.1, rel=1e-9)  # 0.2 |y - 0.5| at most
    assert errors["max_abs_error_u"] == pytest.approx(0.1, rel=1e-12)  # u is not shifted
    aligned = shifted.aligned(model)(shifted.points)
    assert torch.allclose(aligned[:, 1], model(shifted.points)[:, 1] - 3.1, atol=1e-12)
    assert torch.equal(aligned[:, 0], model(shifted.points)[:, 0])
    assert plain.aligned(model) is model and plain.constants(model) == {}


@pytest.mark.parametrize(
    ("names", "message"),
    [
        (("q",), r"names \['q'\], which are no outputs; the outputs are \['u', 'p'\]"),
        ("p", "tuple"),
    ],
)
def test_up_to_constant_must_name_outputs(names, message):
    problem = type("Wrong", (Flow,), {"up_to_constant": names})()
    with pytest.raises(ConfigError, match=message):
        Validator(problem)


def test_a_run_reports_the_constant_and_writes_p_as_measured(tmp_path, monkeypatch):
    (tmp_path / "freep.py").write_text(
        "from pinn.problems.kovasznay import Kovasznay\n\n\n"
        "class FreeP(Kovasznay):\n    up_to_constant = ('p',)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    short = ["trainer.adam.steps=30", "trainer.gauss_newton.steps=0", "trainer.progress=false"]
    cfg = compose_config(["problem=kovasznay", "problem.target=freep.FreeP", *short, "threads=1"])
    metrics = train(cfg, tmp_path / "run")
    saved = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert set(saved["constants"]) == {"p"} and saved["constants"] == metrics["constants"]
    arrays = np.load(tmp_path / "run" / "prediction.npz")
    error_p = arrays["predicted"][:, 2] - arrays["reference"][:, 2]
    assert abs(error_p.mean()) < 1e-12  # shifted by the best constant: no mean error left
    relative = np.linalg.norm(error_p) / np.linalg.norm(arrays["reference"][:, 2])
    assert relative == pytest.approx(metrics["rel_l2_p"], rel=1e-9)
