"""Points come out in the requested dtype and on the requested device, for every shape kind."""

from __future__ import annotations

import pytest
import torch
from shape_cases import case

DEVICES = [
    "cpu",
    "meta",
    pytest.param(
        "cuda",
        marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device"),
    ),
]
KINDS = ["disk", "l_polygon", "square_with_hole", "union_of_boxes", "spacetime_disk"]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("case_id", KINDS)
def test_points_have_the_requested_dtype_and_device(case_id, device, dtype, generator):
    domain = case(case_id).domain
    interior = domain.sample_interior(20, generator, dtype=dtype, device=device)
    boundary = domain.sample_boundary(24, generator, dtype=dtype, device=device)
    assert interior.shape == (20, domain.dim)
    assert interior.dtype == dtype and interior.device.type == device
    assert boundary.points.shape == boundary.normals.shape == (24, domain.dim)
    for tensor in (boundary.points, boundary.normals):
        assert tensor.dtype == dtype and tensor.device.type == device
    assert boundary.part.dtype == torch.long and boundary.part.device.type == device
    if device != "meta":
        assert boundary.on(boundary.part_names[0]).device.type == device


@pytest.mark.parametrize("case_id", KINDS)
def test_float32_points_are_the_float64_points_rounded(case_id):
    """Points are drawn in float64 and cast: the dtype changes no draw."""
    domain = case(case_id).domain
    single = domain.sample_interior(30, torch.Generator().manual_seed(4), dtype=torch.float32)
    double = domain.sample_interior(30, torch.Generator().manual_seed(4), dtype=torch.float64)
    assert torch.equal(single, double.float())


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("case_id", KINDS)
def test_level_and_distance_keep_the_dtype_of_the_points(case_id, dtype, generator):
    domain = case(case_id).domain
    points = domain.sample_interior(10, generator, dtype=dtype)
    assert domain.level(points).dtype == dtype
    assert domain.distance(points).dtype == dtype
    assert domain.contains(points).dtype == torch.bool
