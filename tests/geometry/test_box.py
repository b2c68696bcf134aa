"""Boxes: interior and boundary sampling, faces, normals, grids, seeding."""

from __future__ import annotations

import itertools

import pytest
import torch

from pinn.errors import ConfigError, PinnError
from pinn.geometry import SAMPLING_METHODS, BoundaryPoints, Box

DIMS = (1, 2, 3, 5)
DTYPES = (torch.float32, torch.float64)
METHODS = ("uniform", "sobol", "lhs")

# Corners exactly representable in binary, so `lower + 1 * (upper - lower)` is exact.
DYADIC_LOWER = (-1.0, 0.0, 0.5, -2.0, 0.25)
DYADIC_UPPER = (1.0, 3.0, 0.75, 6.0, 4.0)
# Decimal corners, not representable in binary.
DECIMAL_LOWER = (-0.3, 0.1, 0.2, -1.1, 0.0)
DECIMAL_UPPER = (0.9, 0.7, 1.3, 0.3, 2.2)


def dyadic_box(dim: int) -> Box:
    return Box(DYADIC_LOWER[:dim], DYADIC_UPPER[:dim])


def decimal_box(dim: int) -> Box:
    return Box(DECIMAL_LOWER[:dim], DECIMAL_UPPER[:dim])


def corners(box: Box, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.tensor(box.lower, dtype=dtype), torch.tensor(box.upper, dtype=dtype)


def face_value(box: Box, face: int, dtype: torch.dtype) -> torch.Tensor:
    axis, side = divmod(face, 2)
    return torch.tensor((box.upper if side else box.lower)[axis], dtype=dtype)


# ---- interior points ----------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("dim", DIMS)
@pytest.mark.parametrize("make_box", [dyadic_box, decimal_box])
def test_interior_points_lie_inside_with_requested_count_dtype_device(
    make_box, dim, method, dtype, generator
):
    box = make_box(dim)
    n = 37
    points = box.sample_interior(n, generator, method=method, dtype=dtype)
    assert points.shape == (n, dim)
    assert points.dtype == dtype
    assert points.device == torch.device("cpu")
    lower, upper = corners(box, dtype)
    assert (points >= lower).all() and (points <= upper).all()
    # The points spread over the box rather than collapsing to a corner.
    assert (points.std(dim=0) > 0.1 * torch.tensor(box.widths, dtype=dtype)).all()


DEVICES = [
    "meta",
    pytest.param(
        "cuda",
        marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device"),
    ),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("device", DEVICES)
def test_points_are_made_on_the_requested_device(device, method, dtype, generator):
    box = dyadic_box(3)
    interior = box.sample_interior(16, generator, method=method, dtype=dtype, device=device)
    boundary = box.sample_boundary(18, generator, method=method, dtype=dtype, device=device)
    assert interior.device.type == device and interior.dtype == dtype
    assert interior.shape == (16, 3)
    for tensor in (boundary.points, boundary.normals, boundary.part):
        assert tensor.device.type == device
        assert tensor.shape[0] == 18
    assert boundary.points.dtype == dtype and boundary.normals.dtype == dtype
    assert boundary.part.dtype == torch.long
    grid = box.grid(3, dtype=dtype, device=device)
    assert grid.device.type == device and grid.dtype == dtype and grid.shape == (27, 3)


# ---- boundary points ----------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("dim", DIMS)
def test_boundary_points_lie_exactly_on_their_face(dim, method, dtype, generator):
    box = dyadic_box(dim)
    n = 60
    boundary = box.sample_boundary(n, generator, method=method, dtype=dtype)
    assert boundary.points.shape == (n, dim)
    assert boundary.points.dtype == dtype
    lower, upper = corners(box, dtype)
    assert (boundary.points >= lower).all() and (boundary.points <= upper).all()
    for face in range(2 * dim):
        axis, _ = divmod(face, 2)
        on_face = boundary.points[boundary.part == face]
        assert on_face.shape[0] > 0
        assert torch.equal(on_face[:, axis], face_value(box, face, dtype).expand(len(on_face)))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("dim", DIMS)
def test_boundary_points_are_within_rounding_of_their_face_for_decimal_corners(
    dim, dtype, generator
):
    box = decimal_box(dim)
    boundary = box.sample_boundary(40, generator, dtype=dtype)
    eps = torch.finfo(dtype).eps
    for face in range(2 * dim):
        axis, _ = divmod(face, 2)
        fixed = boundary.points[boundary.part == face][:, axis]
        target = face_value(box, face, dtype)
        assert torch.allclose(fixed, target.expand_as(fixed), rtol=4 * eps, atol=4 * eps)


@pytest.mark.parametrize("dtype", DTYPES)
def test_boundary_points_on_max_face_equal_upper_exactly_for_decimal_corners(dtype, generator):
    box = Box([-0.3, 0.1], [0.9, 0.7])
    boundary = box.sample_boundary(40, generator, dtype=dtype)
    for face in range(4):
        axis, _ = divmod(face, 2)
        fixed = boundary.points[boundary.part == face][:, axis]
        assert torch.equal(fixed, face_value(box, face, dtype).expand_as(fixed))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("dim", DIMS)
def test_normals_are_outward_unit_normals_of_the_named_face(dim, dtype, generator):
    box = dyadic_box(dim)
    boundary = box.sample_boundary(50, generator, method="uniform", dtype=dtype)
    assert boundary.normals.shape == (50, dim)
    assert boundary.normals.dtype == dtype
    assert torch.equal(boundary.normals.norm(dim=1), torch.ones(50, dtype=dtype))
    for face, name in enumerate(box.face_names):
        axis, side = divmod(face, 2)
        expected = torch.zeros(dim, dtype=dtype)
        expected[axis] = 1.0 if side else -1.0
        normals = boundary.normals[boundary.part == face]
        assert torch.equal(normals, expected.expand_as(normals))
        # The name says which coordinate is fixed and at which end.
        assert name == f"{box.names[axis]}_{'max' if side else 'min'}"
        # Outward: a small step along the normal leaves the box, a step against it enters.
        points = boundary.points[boundary.part == face]
        center = torch.tensor(box.lower, dtype=dtype) + torch.tensor(box.widths, dtype=dtype) / 2
        outward = ((points - center) * normals).sum(dim=1)
        assert (outward > 0).all()


@pytest.mark.parametrize(
    ("dim", "names", "expected"),
    [
        (1, None, ("x_min", "x_max")),
        (2, None, ("x_min", "x_max", "y_min", "y_max")),
        (3, None, ("x_min", "x_max", "y_min", "y_max", "z_min", "z_max")),
        (5, None, tuple(f"x{i}_{s}" for i in range(5) for s in ("min", "max"))),
        (2, ("t", "r"), ("t_min", "t_max", "r_min", "r_max")),
    ],
)
def test_face_names(dim, names, expected, generator):
    box = Box([0.0] * dim, [1.0] * dim, names=names)
    assert box.face_names == expected
    assert len(box.names) == dim
    boundary = box.sample_boundary(4 * dim, generator)
    assert boundary.part_names == expected


@pytest.mark.parametrize(
    ("lower", "upper", "n", "expected"),
    [
        ([0.0, 0.0], [1.0, 3.0], 80, [30, 30, 10, 10]),
        ([0.0, 0.0], [2.0, 1.0], 60, [10, 10, 20, 20]),
        ([0.0, 0.0, 0.0], [1.0, 2.0, 4.0], 56, [16, 16, 8, 8, 4, 4]),
        ([-1.0], [3.0], 10, [5, 5]),
    ],
)
def test_boundary_counts_are_shared_in_proportion_to_face_area(
    lower, upper, n, expected, generator
):
    box = Box(lower, upper)
    boundary = box.sample_boundary(n, generator)
    counts = torch.bincount(boundary.part, minlength=len(box.face_names)).tolist()
    assert counts == expected
    assert sum(counts) == n


@pytest.mark.parametrize("n", [1, 3, 7, 13, 101])
def test_boundary_counts_sum_to_n_and_follow_area_when_not_divisible(n, generator):
    box = Box([0.0, 0.0, 0.0], [1.0, 3.0, 0.5])
    boundary = box.sample_boundary(n, generator)
    assert boundary.points.shape == (n, 3)
    counts = torch.bincount(boundary.part, minlength=6).to(torch.float64)
    assert counts.sum().item() == n
    areas = torch.tensor(box.face_areas(), dtype=torch.float64)
    share = n * areas / areas.sum()
    assert ((counts - share).abs() < 1).all()


def test_face_areas_of_a_non_square_box():
    box = Box([0.0, 0.0, 0.0], [1.0, 2.0, 4.0])
    assert box.face_areas() == [8.0, 8.0, 4.0, 4.0, 2.0, 2.0]
    assert box.widths == (1.0, 2.0, 4.0)


def test_one_dimensional_boundary_is_the_two_end_points(generator):
    box = Box([-0.5], [1.25])
    boundary = box.sample_boundary(6, generator)
    assert sorted(boundary.points[:, 0].tolist()) == [-0.5] * 3 + [1.25] * 3
    assert torch.equal(boundary.normals[:, 0], torch.where(boundary.part == 0, -1.0, 1.0))


def test_zero_boundary_points_give_empty_tensors(generator):
    boundary = Box([0.0, 0.0], [1.0, 1.0]).sample_boundary(0, generator)
    assert boundary.points.shape == (0, 2)
    assert boundary.normals.shape == (0, 2)
    assert boundary.part.shape == (0,)


# ---- seeding ------------------------------------------------------------------------------


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("dim", [2, 3, 5])
def test_sampling_is_reproducible_and_changes_with_seed_and_draw(dim, method):
    box = dyadic_box(dim)

    def draw(generator):
        interior = box.sample_interior(32, generator, method=method, dtype=torch.float64)
        boundary = box.sample_boundary(32, generator, method=method, dtype=torch.float64)
        return interior, boundary

    first_interior, first_boundary = draw(torch.Generator().manual_seed(7))
    again_interior, again_boundary = draw(torch.Generator().manual_seed(7))
    assert torch.equal(first_interior, again_interior)
    assert torch.equal(first_boundary.points, again_boundary.points)
    assert torch.equal(first_boundary.normals, again_boundary.normals)
    assert torch.equal(first_boundary.part, again_boundary.part)

    other_interior, other_boundary = draw(torch.Generator().manual_seed(8))
    assert not torch.allclose(first_interior, other_interior)
    assert not torch.allclose(first_boundary.points, other_boundary.points)

    # A second draw from the same generator is a new set: this is what resampling relies on.
    generator = torch.Generator().manual_seed(7)
    draw(generator)
    second_interior, second_boundary = draw(generator)
    assert not torch.allclose(first_interior, second_interior)
    assert not torch.allclose(first_boundary.points, second_boundary.points)
    # ... with the same faces and normals, since the counts depend only on the areas.
    assert torch.equal(first_boundary.part, second_boundary.part)


@pytest.mark.parametrize("method", METHODS)
def test_sampling_does_not_touch_the_global_generator(method, generator):
    state = torch.random.get_rng_state()
    dyadic_box(3).sample_interior(16, generator, method=method)
    dyadic_box(3).sample_boundary(16, generator, method=method)
    assert torch.equal(torch.random.get_rng_state(), state)


# ---- quality of the point sets ------------------------------------------------------------


@pytest.mark.parametrize("n", [1, 7, 50])
@pytest.mark.parametrize("dim", DIMS)
def test_lhs_has_one_point_per_stratum_in_each_dimension(dim, n, generator):
    box = Box([0.0] * dim, [1.0] * dim)  # the unit cube, so strata are [i/n, (i+1)/n)
    for _ in range(3):
        points = box.sample_interior(n, generator, method="lhs", dtype=torch.float64)
        strata = torch.floor(points * n).long()
        for axis in range(dim):
            assert sorted(strata[:, axis].tolist()) == list(range(n))


def test_lhs_strata_scale_with_the_box(generator):
    box = Box([-2.0, 1.0], [2.0, 9.0])
    n = 16
    points = box.sample_interior(n, generator, method="lhs", dtype=torch.float64)
    lower, _ = corners(box, torch.float64)
    strata = torch.floor((points - lower) / torch.tensor(box.widths) * n).long()
    for axis in range(2):
        assert sorted(strata[:, axis].tolist()) == list(range(n))


def _ks_statistic(samples: torch.Tensor) -> torch.Tensor:
    """(d,) max deviation of each column's empirical CDF from the uniform CDF on [0, 1]."""
    n = samples.shape[0]
    ordered, _ = samples.sort(dim=0)
    rank = torch.arange(1, n + 1, dtype=samples.dtype).unsqueeze(1)
    return torch.maximum(rank / n - ordered, ordered - (rank - 1) / n).max(dim=0).values


def test_sobol_marginals_are_more_uniform_than_random(generator):
    box = Box([0.0] * 3, [1.0] * 3)
    n = 64
    sobol = [
        _ks_statistic(box.sample_interior(n, generator, "sobol", torch.float64)) for _ in range(10)
    ]
    uniform = [
        _ks_statistic(box.sample_interior(n, generator, "uniform", torch.float64))
        for _ in range(10)
    ]
    worst_sobol = torch.stack(sobol).max().item()
    mean_uniform = torch.stack(uniform).mean().item()
    # A scrambled Sobol set of 2^6 points puts one point in each [i/64, (i+1)/64).
    assert worst_sobol <= 1.0 / n + 1e-12
    # Random points deviate by ~0.87 / sqrt(n) ~ 0.11 on average: far more, with a margin.
    assert mean_uniform > 4 * worst_sobol


def test_sobol_fills_every_cell_of_a_2d_grid(generator):
    box = Box([0.0, 0.0], [1.0, 1.0])
    cells_per_axis = 8
    for _ in range(5):
        points = box.sample_interior(64, generator, method="sobol", dtype=torch.float64)
        cell = torch.floor(points * cells_per_axis).long()
        counts = torch.bincount(cell[:, 0] * cells_per_axis + cell[:, 1], minlength=64)
        assert (counts == 1).all()
    # Random points leave some of the 64 cells empty (expected ~23 of 64).
    uniform = box.sample_interior(64, generator, method="uniform", dtype=torch.float64)
    cell = torch.floor(uniform * cells_per_axis).long()
    counts = torch.bincount(cell[:, 0] * cells_per_axis + cell[:, 1], minlength=64)
    assert (counts == 0).sum() >= 10


# ---- errors -------------------------------------------------------------------------------


@pytest.mark.parametrize("where", ["interior", "boundary"])
@pytest.mark.parametrize("method", ["halton", "Sobol", "", "random"])
def test_unknown_method_raises_config_error_listing_the_allowed(method, where, generator):
    box = dyadic_box(2)
    sample = box.sample_interior if where == "interior" else box.sample_boundary
    with pytest.raises(ConfigError) as info:
        sample(8, generator, method=method)
    message = str(info.value)
    assert repr(method) in message
    for allowed in SAMPLING_METHODS:
        assert allowed in message
    assert isinstance(info.value, PinnError) and isinstance(info.value, ValueError)


def test_sampling_methods_constant_lists_the_three_methods():
    assert set(SAMPLING_METHODS) == {"uniform", "sobol", "lhs"}


@pytest.mark.parametrize(
    ("lower", "upper"),
    [([0.0, 1.0], [1.0, 1.0]), ([0.0, 1.0], [1.0, 0.5]), ([2.0], [1.0]), ([0, 0, 0], [1, 1, -1])],
)
def test_box_rejects_upper_not_above_lower(lower, upper):
    with pytest.raises(ValueError, match="upper > lower") as info:
        Box(lower, upper)
    assert str(upper) in str(info.value) or str(list(upper)) in str(info.value)


@pytest.mark.parametrize(("lower", "upper"), [([0.0, 0.0], [1.0]), ([], [])])
def test_box_rejects_mismatched_or_empty_corners(lower, upper):
    with pytest.raises(ValueError, match="as many upper as lower"):
        Box(lower, upper)


def test_box_rejects_wrong_number_of_names():
    with pytest.raises(ValueError, match="needs 2 names"):
        Box([0.0, 0.0], [1.0, 1.0], names=["x"])


# ---- BoundaryPoints.on --------------------------------------------------------------------


def test_on_selects_the_points_of_the_named_faces(generator):
    box = Box([0.0, -1.0], [2.0, 1.0])
    boundary = box.sample_boundary(40, generator, method="uniform", dtype=torch.float64)
    x, y = boundary.points[:, 0], boundary.points[:, 1]
    assert torch.equal(boundary.on(["x_min"]), x == 0.0)
    assert torch.equal(boundary.on(["y_max"]), y == 1.0)
    both = boundary.on(["x_max", "y_min"])
    assert torch.equal(both, (boundary.part == 1) | (boundary.part == 2))
    assert torch.equal(both, (x == 2.0) | (y == -1.0))
    assert both.dtype == torch.bool and both.shape == (40,)
    everything = boundary.on(list(box.face_names))
    assert everything.all()
    assert not boundary.on([]).any()
    # Masks of the faces partition the points.
    total = sum(boundary.on([name]).long() for name in box.face_names)
    assert torch.equal(total, torch.ones(40, dtype=torch.long))


def test_on_rejects_unknown_faces_listing_the_known(generator):
    boundary = Box([0.0, 0.0], [1.0, 1.0]).sample_boundary(8, generator)
    with pytest.raises(ConfigError) as info:
        boundary.on(["x_min", "top"])
    message = str(info.value)
    assert "top" in message
    for name in ("x_min", "x_max", "y_min", "y_max"):
        assert name in message


def test_on_works_on_a_hand_built_boundary():
    boundary = BoundaryPoints(
        points=torch.zeros(3, 1),
        normals=torch.tensor([[-1.0], [1.0], [-1.0]]),
        part=torch.tensor([0, 1, 0]),
        part_names=("left", "right"),
    )
    assert boundary.on(["left"]).tolist() == [True, False, True]
    assert boundary.on(["right"]).tolist() == [False, True, False]


def test_on_accepts_a_single_face_name(generator):
    boundary = Box([0.0, 0.0], [1.0, 1.0]).sample_boundary(8, generator)
    assert torch.equal(boundary.on("x_min"), boundary.on(["x_min"]))


# ---- grid ---------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("dim", DIMS)
def test_grid_covers_the_corners_and_stays_in_the_box(dim, dtype):
    box = decimal_box(dim)
    n_per_dim = 3 if dim == 5 else 4
    grid = box.grid(n_per_dim, dtype=dtype)
    assert grid.shape == (n_per_dim**dim, dim)
    assert grid.dtype == dtype
    lower, upper = corners(box, dtype)
    assert (grid >= lower).all() and (grid <= upper).all()
    rows = {tuple(row) for row in grid.tolist()}
    assert len(rows) == n_per_dim**dim
    for corner in itertools.product(*zip(lower.tolist(), upper.tolist())):
        assert corner in rows


def test_grid_orders_the_first_axis_slowest():
    grid = Box([0.0, 10.0], [1.0, 20.0]).grid(3, dtype=torch.float64)
    expected = torch.tensor(
        [[a, b] for a in (0.0, 0.5, 1.0) for b in (10.0, 15.0, 20.0)], dtype=torch.float64
    )
    assert torch.equal(grid, expected)
