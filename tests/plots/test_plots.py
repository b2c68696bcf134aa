"""solution.png fits the domain: curves in 1-D, maps and time snapshots for 1-D + time, masked
maps on shapes, slices in 3-D; the true solution from exact or reference data; one colour scale
for an output's predicted and true maps, labelled colorbars, a title. loss.png marks the phases
and shows rel_l2. Each of outputs.plot_formats is written."""

import numpy as np
import pytest
import torch
from matplotlib.collections import PolyCollection, QuadMesh, TriMesh

from pinn import Ball, Box, ConfigError, Disk, Problem, SpaceTime, Validator
from pinn.plots.loss import phase_switches
from pinn.plots.parts import error_norm
from pinn.plots.reference import reference_figure
from pinn.plots.solution import (
    PlotOptions,
    loss_figure,
    plot_solution,
    save_figure,
    solution_figure,
    time_axis,
)


class Smooth(Problem):
    """u = sum of the coordinates (and 2 x that for a second output), on any domain."""

    def __init__(self, domain, outputs=("u",), with_exact=True, reference=None):
        self.domain, self.outputs, self._reference = domain, outputs, reference
        if not with_exact:
            self.exact = lambda x: None  # hides the exact solution from has_exact below
        self.with_exact = with_exact

    @property
    def has_exact(self):
        return self.with_exact

    @property
    def has_reference(self):
        return self._reference is not None

    def reference(self):
        return self._reference

    def residual(self, x, u):
        return u()

    def exact(self, x):
        total = x.sum(dim=1)
        return torch.stack([total * (k + 1) for k in range(len(self.outputs))], dim=1)


def model_for(problem):
    """A 'network' off by 0.01 from the exact solution."""
    return lambda x: Smooth.exact(problem, x) + 0.01


def titles(figure):
    return [axis.get_title() for axis in figure.axes if axis.get_title()]


def meshes(axis):
    return [c for c in axis.collections if isinstance(c, QuadMesh)]


def test_one_dimension_draws_curves_predicted_and_exact():
    problem = Smooth(Box([0.0], [2.0]), outputs=("u", "v"))
    figure = solution_figure(problem, model_for(problem))
    assert titles(figure) == ["u", "v"]
    predicted, exact = figure.axes[1].get_lines()
    assert np.allclose(predicted.get_ydata() - exact.get_ydata(), 0.01)


def test_space_time_draws_maps_and_snapshots_against_the_exact_solution():
    problem = Smooth(SpaceTime(Box([-1.0], [1.0]), 0.0, 2.0))
    figure = solution_figure(problem, model_for(problem), n_per_dim=21)
    assert titles(figure)[:3] == ["predicted u", "exact u", "|error| u"]
    error = meshes(figure.axes[2])[0].get_array()
    assert np.allclose(error.compressed(), 0.01)
    snapshots = figure.axes[3]
    assert snapshots.get_xlabel() == "x"
    labels = [line.get_label() for line in snapshots.get_lines()]
    assert [label for label in labels if label.startswith("t =")] == [
        "t = 0",
        "t = 0.667",
        "t = 1.33",
        "t = 2",
    ]


def test_a_box_named_t_is_a_space_time_domain():
    assert time_axis(Box([0.0, 0.0], [1.0, 1.0], names=["x", "t"])) == 1
    assert time_axis(SpaceTime(Disk([0.0, 0.0], 1.0), 0.0, 1.0)) == 2
    assert time_axis(Box([0.0, 0.0], [1.0, 1.0])) is None


def test_a_shape_is_drawn_blank_outside():
    problem = Smooth(Disk([0.0, 0.0], 1.0))
    figure = solution_figure(problem, model_for(problem), n_per_dim=41)
    assert titles(figure) == ["predicted u", "exact u", "|error| u"]
    values = meshes(figure.axes[0])[0].get_array()
    grid = torch.linspace(-1, 1, 41, dtype=torch.float64)
    xs, ys = torch.meshgrid(grid, grid, indexing="ij")
    outside = (xs**2 + ys**2 > 1 + 1e-9).T.numpy()  # the image is (y, x)
    assert np.isnan(np.ma.filled(values, np.nan).reshape(41, 41)[outside]).all()
    assert np.isfinite(values.reshape(41, 41)[~outside]).all()


def test_three_dimensions_are_drawn_as_slices_at_the_ends_and_the_middle():
    # A ball's poles hold one point of a plane: its end slices move a tenth of the range inward.
    problem = Smooth(Ball([0.0, 0.0, 0.0], 1.0), outputs=("u", "v"))
    figure = solution_figure(problem, model_for(problem), n_per_dim=21)
    predicted = [t for t in titles(figure) if t.startswith("predicted")]
    assert predicted == [
        f"predicted {out} at z = {z}" for out in ("u", "v") for z in ("-0.8", "0", "0.8")
    ]
    # A box (a coefficient's range, say): the ends themselves, where the error usually peaks.
    problem = Smooth(Box([0.0, 0.0, 1.0], [1.0, 1.0, 3.0]))
    figure = solution_figure(problem, model_for(problem), n_per_dim=11)
    predicted = [t for t in titles(figure) if t.startswith("predicted")]
    assert predicted == [f"predicted u at z = {z}" for z in ("1", "2", "3")]


def test_two_space_dimensions_and_time_are_drawn_up_to_the_final_time():
    problem = Smooth(SpaceTime(Box([0.0, 0.0], [1.0, 1.0]), 0.0, 1.5))
    figure = solution_figure(problem, model_for(problem), n_per_dim=11)
    predicted = [t for t in titles(figure) if t.startswith("predicted")]
    assert predicted == [f"predicted u at t = {t}" for t in ("0.5", "1", "1.5")]


def test_reference_data_only_is_drawn_at_its_points():
    points = torch.rand(300, 2, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    values = points.sum(dim=1)
    problem = Smooth(Box([0.0, 0.0], [1.0, 1.0]), with_exact=False, reference=(points, values))
    figure = solution_figure(problem, model_for(problem), n_per_dim=21)
    assert titles(figure) == ["predicted u", "reference u", "|error| u"]
    error = [c for c in figure.axes[2].collections if isinstance(c, (TriMesh, PolyCollection))]
    assert np.allclose(np.asarray(error[0].get_array()), 0.01)


def test_reference_short_of_the_edge_is_drawn_to_the_domains_scale():
    # A periodic grid without its last column (x < 5 on [-5, 5]): every map spans the domain.
    x, t = torch.meshgrid(
        torch.arange(-5.0, 5.0, 0.5, dtype=torch.float64),
        torch.linspace(0, 1, 6, dtype=torch.float64),
        indexing="ij",
    )
    points = torch.stack([x.reshape(-1), t.reshape(-1)], dim=1)
    domain = SpaceTime(Box([-5.0], [5.0]), 0.0, 1.0)
    problem = Smooth(domain, with_exact=False, reference=(points, points.sum(dim=1)))
    figure = solution_figure(problem, model_for(problem), n_per_dim=21)
    maps = [axis for axis in figure.axes if axis.get_title().endswith(" u")][:3]
    assert [axis.get_title() for axis in maps] == ["predicted u", "reference u", "|error| u"]
    for axis in maps:
        assert axis.get_xlim() == pytest.approx((-5.0, 5.0))
        assert axis.get_ylim() == pytest.approx((0.0, 1.0))


def test_reference_snapshots_use_the_reference_times(tmp_path):
    x, t = torch.meshgrid(
        torch.linspace(-1, 1, 11, dtype=torch.float64),
        torch.linspace(0, 0.9, 10, dtype=torch.float64),
        indexing="ij",
    )
    points = torch.stack([x.reshape(-1), t.reshape(-1)], dim=1)
    problem = Smooth(
        SpaceTime(Box([-1.0], [1.0]), 0.0, 1.0), with_exact=False, reference=(points, points.sum(1))
    )
    figure = solution_figure(problem, model_for(problem), n_per_dim=21)
    labels = [line.get_label() for line in figure.axes[3].get_lines()]
    # The reference's own times nearest 0, 1/3, 2/3 and 1: 0, 0.3, 0.7, 0.9.
    assert [label for label in labels if label.startswith("t =")] == [
        "t = 0",
        "t = 0.3",
        "t = 0.7",
        "t = 0.9",
    ]
    plot_solution(problem, model_for(problem), tmp_path / "solution.png")
    assert (tmp_path / "solution.png").read_bytes()[:4] == b"\x89PNG"


def test_reference_data_for_some_outputs_is_drawn_as_profiles():
    # u on the vertical centreline x = 0.5, v on the horizontal one y = 0.5 (a cavity's lines).
    vertical = torch.stack([torch.full((9,), 0.5), torch.linspace(0, 1, 9)], dim=1).double()
    horizontal = vertical.flip(1)[torch.randperm(9, generator=torch.Generator().manual_seed(0))]
    data = {"u": (vertical, vertical.sum(1)), "w": (horizontal, 3 * horizontal.sum(1))}
    problem = Smooth(Box([0.0, 0.0], [1.0, 1.0]), ("u", "v", "w"), False, reference=data)
    model = model_for(problem)
    # The maps show the prediction alone: lines of points make no map of the truth.
    assert titles(solution_figure(problem, model, n_per_dim=11)) == [
        "predicted u",
        "predicted v",
        "predicted w",
    ]
    figure = reference_figure(problem, model, Validator(problem))
    assert titles(figure) == ["u: max |error| = 1.00e-02", "w: max |error| = 1.00e-02"]
    assert [axis.get_xlabel() for axis in figure.axes] == ["y", "x"]  # along each line
    predicted, reference = figure.axes[1].get_lines()
    assert np.allclose(reference.get_xdata(), np.linspace(0, 1, 9))  # sorted along x
    assert np.allclose(reference.get_ydata(), 3 * (np.linspace(0, 1, 9) + 0.5))
    # the prediction along the whole line, between the table's points too
    assert len(predicted.get_xdata()) == 400
    assert np.allclose(predicted.get_xdata(), np.linspace(0, 1, 400))
    assert np.allclose(predicted.get_ydata(), 3 * (np.linspace(0, 1, 400) + 0.5) + 0.01)


def test_profiles_on_several_parallel_lines_are_drawn_a_curve_each():
    # u on the vertical lines x = 0.3, 0.5, 0.8 (behind an obstacle), 7 points each, shuffled.
    y = torch.linspace(0, 1, 7, dtype=torch.float64)
    points = torch.cat([torch.stack([torch.full_like(y, c), y], 1) for c in (0.3, 0.5, 0.8)])
    points = points[torch.randperm(21, generator=torch.Generator().manual_seed(0))]
    problem = Smooth(Box([0.0, 0.0], [1.0, 1.0]), ("u", "v"), False, {"u": (points, points.sum(1))})
    figure = reference_figure(problem, model_for(problem), Validator(problem))
    axis = figure.axes[0]
    assert axis.get_xlabel() == "y"  # along the lines, not across them
    curves = [line for line in axis.get_lines() if line.get_linestyle() == "-"]
    assert [c.get_label() for c in curves] == [f"predicted, x = {c}" for c in (0.3, 0.5, 0.8)]
    for curve, c in zip(curves, (0.3, 0.5, 0.8)):
        assert np.allclose(curve.get_xdata(), np.linspace(0, 1, 400))  # densely along it
        assert np.allclose(curve.get_ydata(), c + np.linspace(0, 1, 400) + 0.01)
    markers = [line for line in axis.get_lines() if line.get_linestyle() == "None"]
    assert [len(m.get_xdata()) for m in markers] == [7, 7, 7]
    assert [t.get_text() for t in axis.get_legend().get_texts()].count("reference") == 1


def test_a_profile_off_one_line_is_drawn_at_its_points():
    # u at points of a parabola: no line to draw densely along, the prediction at the points
    x = torch.linspace(0, 1, 7, dtype=torch.float64)
    curve = torch.stack([x, x**2], dim=1)
    problem = Smooth(Box([0.0, 0.0], [1.0, 1.0]), ("u", "v"), False, reference={"u": (curve, x)})
    figure = reference_figure(problem, model_for(problem), Validator(problem))
    predicted, reference = figure.axes[0].get_lines()
    assert np.allclose(predicted.get_xdata(), reference.get_xdata())
    assert len(predicted.get_xdata()) == 7


@pytest.mark.parametrize("with_exact", [True, False])
def test_without_a_true_solution_only_the_prediction_is_drawn(with_exact):
    problem = Smooth(Box([0.0, 0.0], [1.0, 1.0]), with_exact=with_exact)
    figure = solution_figure(problem, model_for(problem), n_per_dim=11)
    expected = ["predicted u", "exact u", "|error| u"] if with_exact else ["predicted u"]
    assert titles(figure) == expected


# --- colour scales, colorbars and the title --------------------------------------------------


def images(figure):
    """The first colour map (QuadMesh or TriMesh) of each plotting axis, None where it has none."""
    drawn = []
    for axis in figure.axes:
        if axis.get_label() == "<colorbar>":
            continue
        found = [c for c in axis.collections if isinstance(c, (QuadMesh, TriMesh))]
        drawn.append(found[0] if found else None)
    return drawn


def doubled(problem):
    """A 'network' twice the exact solution: a field that must not look like the exact one."""
    return lambda x: 2 * Smooth.exact(problem, x)


def test_predicted_and_exact_share_one_colour_scale_and_the_error_has_its_own():
    problem = Smooth(Box([0.0, 0.0], [1.0, 1.0]))  # exact u = x + y in [0, 2]; predicted in [0, 4]
    figure = solution_figure(problem, doubled(problem), n_per_dim=11)
    predicted, exact, error = images(figure)
    assert predicted.norm is exact.norm
    assert predicted.get_clim() == exact.get_clim() == pytest.approx((0.0, 4.0))
    assert error.norm is not predicted.norm
    assert error.get_clim() == pytest.approx((0.0, 2.0))  # |2u - u| = u, at most 2
    labels = [image.colorbar.ax.get_ylabel() for image in (predicted, exact, error)]
    assert labels == ["u", "u", "|error|"]


def test_each_output_has_its_own_scale_over_all_its_slices():
    problem = Smooth(Box([0.0, 0.0, 0.0], [1.0, 1.0, 1.0]), outputs=("u", "v"))
    figure = solution_figure(problem, model_for(problem), n_per_dim=11)
    drawn = images(figure)  # rows: u at z = 0, 0.5, 1, then v; columns: predicted, exact, error
    rows = [drawn[i : i + 3] for i in range(0, len(drawn), 3)]
    u_scales = {row[k].get_clim() for row in rows[:3] for k in (0, 1)}
    v_scales = {row[k].get_clim() for row in rows[3:] for k in (0, 1)}
    assert len(u_scales) == len(v_scales) == 1
    assert u_scales.pop() == pytest.approx((0.0, 3.01))  # u = x + y + z (+ 0.01 predicted)
    assert v_scales.pop() == pytest.approx((0.0, 6.01))  # v = 2(x + y + z) (+ 0.01)
    assert {row[2].colorbar.ax.get_ylabel() for row in rows} == {"|error|"}
    assert [rows[0][0].colorbar.ax.get_ylabel(), rows[3][0].colorbar.ax.get_ylabel()] == ["u", "v"]


def test_a_log_error_scale_draws_zero_errors_at_its_bottom():
    problem = Smooth(Box([0.0, 0.0], [1.0, 1.0]))
    exact = lambda x: Smooth.exact(problem, x)  # noqa: E731
    off_in_x = lambda x: exact(x) + 0.01 * x[:, :1]  # noqa: E731  (error 0 on the line x = 0)
    figure = solution_figure(problem, off_in_x, n_per_dim=11, error_scale="log")
    error = images(figure)[2]
    assert type(error.norm).__name__ == "LogNorm"
    assert error.get_clim() == pytest.approx((0.001, 0.01))  # the smallest positive error: x = 0.1
    values = np.ma.filled(error.get_array(), np.nan)
    assert np.isfinite(values).all() and values.min() == pytest.approx(0.001)
    exactly = images(solution_figure(problem, exact, n_per_dim=11, error_scale="log"))[2]
    assert exactly.get_clim() == pytest.approx((1e-16, 1e-15))  # every error zero
    spread = error_norm([np.array([0.0, 1e-12, 1.0])], "log")  # at most 8 decades
    narrow = error_norm([np.array([0.01, 0.01])], "log")  # at least one
    assert (spread.vmin, spread.vmax) == pytest.approx((1e-8, 1.0))
    assert (narrow.vmin, narrow.vmax) == pytest.approx((1e-3, 1e-2))
    with pytest.raises(ConfigError, match="outputs.error_scale='symlog' is unknown"):
        solution_figure(problem, exact, error_scale="symlog")


def test_reference_data_shares_the_predicted_scale():
    points = torch.rand(200, 2, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    problem = Smooth(
        Box([0.0, 0.0], [1.0, 1.0]), with_exact=False, reference=(points, points.sum(dim=1))
    )
    figure = solution_figure(problem, doubled(problem), n_per_dim=11)
    predicted, reference, error = images(figure)
    assert isinstance(reference, TriMesh)
    assert predicted.norm is reference.norm
    assert predicted.get_clim() == pytest.approx((0.0, 4.0))  # the prediction's grid reaches 4
    assert error.colorbar.ax.get_ylabel() == "|error|"


def test_the_title_names_the_problem_rel_l2_and_steps(tmp_path):
    problem = Smooth(Box([0.0], [1.0]))
    figure = solution_figure(problem, model_for(problem), rel_l2=1.234e-4, steps=2000)
    assert figure.get_suptitle() == "Smooth: rel_l2 = 1.234e-04, 2000 steps"
    assert solution_figure(problem, model_for(problem)).get_suptitle() == "Smooth"
    named = solution_figure(problem, model_for(problem), name="poisson", steps=5)
    assert named.get_suptitle() == "poisson: 5 steps"


def test_space_time_snapshots_draw_each_time_and_its_true_curve_in_one_colour():
    problem = Smooth(SpaceTime(Box([-1.0], [1.0]), 0.0, 2.0))
    figure = solution_figure(problem, model_for(problem), n_per_dim=21)
    snapshots = figure.axes[3]
    lines = snapshots.get_lines()
    solid = [line for line in lines if line.get_linestyle() == "-"]
    dashed = [line for line in lines if line.get_linestyle() == "--"]
    assert len(solid) == len(dashed) == 4
    assert [line.get_color() for line in solid] == [line.get_color() for line in dashed]
    assert len({line.get_color() for line in solid}) == 4
    assert np.allclose(solid[1].get_ydata() - dashed[1].get_ydata(), 0.01)
    legend = [text.get_text() for text in snapshots.get_legend().get_texts()]
    assert legend == ["t = 0", "t = 0.667", "t = 1.33", "t = 2"]


# --- the loss plot ---------------------------------------------------------------------------


def history(with_rel_l2=True):
    """Adam rows at 0, 10, 20; L-BFGS rows at 30..32; the final row at 32."""
    rows = [
        {"step": s, "phase": "adam", "loss": 1.0 / (s + 1), "pde": 0.5 / (s + 1)}
        for s in (0, 10, 20)
    ]
    rows += [{"step": s, "phase": "lbfgs", "loss": 1e-3 / s, "pde": 5e-4 / s} for s in (30, 31, 32)]
    rows.append({"step": 32, "phase": "final", "loss": 3e-5, "pde": 1e-5})
    if with_rel_l2:
        for row, value in zip(rows, (0.5, 0.2, 0.1, 0.05, None, None, 0.01)):
            if value is not None:
                row["rel_l2"] = value
    return rows


def test_the_loss_plot_marks_the_switch_to_lbfgs():
    figure = loss_figure(history())
    axis = figure.axes[0]
    vertical = [line for line in axis.get_lines() if len(set(line.get_xdata())) == 1]
    assert [line.get_xdata()[0] for line in vertical] == [30]
    names = [(text.get_position()[0], text.get_text().strip()) for text in axis.texts]
    assert names == [(30, "L-BFGS")]
    assert phase_switches(history()) == [(30, "lbfgs")]
    adam_only = [row for row in history() if row["phase"] == "adam"]
    assert phase_switches(adam_only) == []
    assert not [
        line for line in loss_figure(adam_only).axes[0].get_lines() if len(line.get_xdata()) == 2
    ]


def test_the_loss_plot_names_each_phase_of_any_order_by_its_title():
    rows = [
        {"step": step, "phase": phase, "loss": 1.0 / (step + 1)}
        for step, phase in [(0, "lbfgs"), (5, "lbfgs"), (6, "adam"), (9, "newton"), (10, "final")]
    ]
    assert phase_switches(rows) == [(6, "adam"), (9, "newton")]
    axis = loss_figure(rows).axes[0]
    names = [(text.get_position()[0], text.get_text().strip()) for text in axis.texts]
    assert names == [(6, "Adam"), (9, "newton")]  # a phase pinn does not know: its own name
    # Early names stand right of their line; late ones (past 2/3 of the steps) left of it,
    # clear of the right-hand axis.
    assert [text.get_ha() for text in axis.texts] == ["left", "right"]


def test_the_loss_plot_shows_rel_l2_on_its_own_log_axis():
    figure = loss_figure(history())
    loss_axis, right = figure.axes
    assert right.get_ylabel() == "rel_l2" and right.get_yscale() == "log"
    (line,) = right.get_lines()
    assert list(line.get_xdata()) == [0, 10, 20, 30, 32]
    assert list(line.get_ydata()) == [0.5, 0.2, 0.1, 0.05, 0.01]
    legend = [text.get_text() for text in loss_axis.get_legend().get_texts()]
    assert legend == ["loss", "pde", "rel_l2"]
    assert len(loss_figure(history(with_rel_l2=False)).axes) == 1


# --- formats ---------------------------------------------------------------------------------

MAGIC = {"png": b"\x89PNG", "pdf": b"%PDF", "svg": b"<?xml"}


def test_each_format_is_written(tmp_path):
    problem = Smooth(Disk([0.0, 0.0], 1.0))
    options = PlotOptions.from_config({"plot_formats": ["png", "PDF", "svg", "png"]})
    assert options.formats == ("png", "pdf", "svg")
    figure = solution_figure(problem, model_for(problem), n_per_dim=11)
    written = save_figure(figure, tmp_path / "solution", options.formats)
    assert written == [tmp_path / f"solution.{name}" for name in ("png", "pdf", "svg")]
    for path in written:
        assert path.read_bytes()[:5].startswith(MAGIC[path.suffix[1:]])
    assert b"<svg" in (tmp_path / "solution.svg").read_bytes()[:2000]


@pytest.mark.parametrize(
    ("outputs", "message"),
    [
        ({"plot_formats": ["png", "jpg"]}, "'jpg' is not a plot format; choose from png, pdf, svg"),
        ({"error_scale": "logarithmic"}, "outputs.error_scale='logarithmic' is unknown"),
        ({"plot_formats": 5}, "outputs.plot_formats must be a list of formats such as [png,pdf]"),
    ],
)
def test_unknown_choices_are_refused_in_one_line(outputs, message):
    with pytest.raises(ConfigError) as error:
        PlotOptions.from_config(outputs)
    assert message in str(error.value) and "\n" not in str(error.value)


# --- a run's plots ---------------------------------------------------------------------------

TINY = [
    "trainer.adam.steps=6",
    "trainer.lbfgs.steps=3",
    "trainer.gauss_newton.steps=3",
    "trainer.bfgs.steps=3",
    "trainer.log_every=3",
    "trainer.progress=false",
    "problem.n_interior=32",
    "problem.n_boundary=16",
    "model.width=4",
    "model.depth=1",
]


def test_a_run_writes_its_plots_in_each_format(tmp_path):
    from pinn import compose_config, train

    overrides = ["outputs.plot_formats=[png,pdf,svg]", "outputs.error_scale=log"]
    metrics = train(compose_config([*TINY, *overrides]), tmp_path)
    for stem in ("solution", "loss"):
        for name, magic in MAGIC.items():
            assert (tmp_path / f"{stem}.{name}").read_bytes().startswith(magic)
    svg = (tmp_path / "solution.svg").read_text()
    assert f"rel_l2 = {metrics['rel_l2']:.3e}, 9 steps" in svg  # the title, as text
    assert "BFGS" in (tmp_path / "loss.svg").read_text()


def test_an_unknown_format_is_refused_before_training(tmp_path):
    from pinn import compose_config, train

    cfg = compose_config([*TINY, "outputs.plot_formats=[png,eps]"])
    with pytest.raises(ConfigError, match="'eps' is not a plot format; choose from png, pdf, svg"):
        train(cfg, tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_plot_choices_may_change_on_resume(tmp_path):
    from pinn.run.resume import check_same_run

    saved = {"outputs": {"vtk": False, "plot_formats": ["png"], "error_scale": "linear"}}
    changed = {"outputs": {"vtk": False, "plot_formats": ["pdf"], "error_scale": "log"}}
    check_same_run(saved, changed, tmp_path / "checkpoint.pt")  # no ConfigError
    with pytest.raises(ConfigError, match="seed=1"):  # while a key that changes the result
        check_same_run({**saved, "seed": 0}, {**changed, "seed": 1}, tmp_path / "checkpoint.pt")
