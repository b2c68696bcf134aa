"""The VTK files of a prediction, written through meshio: one mesh, or a time series.

    write_vtk(run_dir, problem.domain, problem.outputs, arrays)   # arrays: prediction.npz's

Each file is an unstructured grid of the points (z = 0 in 2-D, y = z = 0 in 1-D) and the cells
`cells.mesh_cells` makes between them, with one point-data array per output (`u`), and where a
reference exists `u_reference` and `u_error` = |predicted - reference|.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import torch

from pinn.geometry import Domain, SpaceTime
from pinn.outputs.vtk.cells import Inside, mesh_cells
from pinn.outputs.vtk.slices import on_time_slices

log = logging.getLogger("pinn")

VTU_NAME = "prediction.vtu"
SERIES_NAME = "prediction.vtu.series"
SERIES_FOLDER = "vtk"


def write_vtk(
    run_dir: Path,
    domain: Domain,
    output_names: Sequence[str],
    arrays: Mapping[str, np.ndarray],
) -> list[Path]:
    """Write the prediction as VTK into `run_dir`; returns the files written ([] if skipped).

    `arrays` are prediction.npz's: `points` (M, d), `predicted` (M, m) and, optionally,
    `reference` (M, m), with m = len(output_names). A space-time domain's points must lie on
    time slices (`slices.time_slices` puts them there); a domain of more than three space
    coordinates is skipped with a log line.
    """
    space = domain.space if isinstance(domain, SpaceTime) else domain
    if space.dim > 3:
        _log_skipped(domain)
        return []
    fields = point_fields(output_names, arrays)
    points = arrays["points"]
    if not isinstance(domain, SpaceTime):
        path = run_dir / VTU_NAME
        _write_mesh(path, points, fields, _inside(domain))
        return [path]
    if not on_time_slices(points, space.dim):
        log.info(
            "outputs.vtk: the points of the %d-D space-time domain lie on no time slices "
            "(pinn.outputs.vtk.time_slices puts a prediction there): no VTK file written",
            domain.dim,
        )
        return []
    return _write_series(run_dir, points, fields, _inside(space))


def _log_skipped(domain: Domain) -> None:
    why = f" ({domain.dim - 1}-D space and time)" if isinstance(domain, SpaceTime) else ""
    log.info(
        "outputs.vtk: a %d-D domain%s has no picture in ParaView's 3-D space: no VTK file written",
        domain.dim,
        why,
    )


def _inside(domain: Domain) -> Inside:
    """The closed domain's membership test on numpy points."""

    def inside(points: np.ndarray) -> np.ndarray:
        return domain.contains(torch.from_numpy(points), closed=True).numpy()

    return inside


def point_fields(
    output_names: Sequence[str], arrays: Mapping[str, np.ndarray]
) -> dict[str, np.ndarray]:
    """{array name: (M,) values}: each output's prediction, and its reference and |error| where
    `arrays` holds a reference."""
    predicted = arrays["predicted"]
    reference = arrays.get("reference")
    fields = {}
    for k, name in enumerate(output_names):
        fields[name] = predicted[:, k]
        if reference is not None:
            fields[f"{name}_reference"] = reference[:, k]
            fields[f"{name}_error"] = np.abs(predicted[:, k] - reference[:, k])
    return fields


def _write_series(
    run_dir: Path, points: np.ndarray, fields: dict[str, np.ndarray], inside: Inside
) -> list[Path]:
    """One .vtu per time value (time the last coordinate) and the .series index of them."""
    folder = run_dir / SERIES_FOLDER
    folder.mkdir(exist_ok=True)
    for stale in folder.glob("prediction_*.vtu"):  # of an earlier run in this directory
        stale.unlink()
    times = np.unique(points[:, -1])
    entries, written = [], []
    for k, time in enumerate(times):
        at_time = points[:, -1] == time
        path = folder / f"prediction_{k:04d}.vtu"
        at_time_fields = {name: values[at_time] for name, values in fields.items()}
        _write_mesh(path, points[at_time, :-1], at_time_fields, inside)
        entries.append({"name": f"{SERIES_FOLDER}/{path.name}", "time": float(time)})
        written.append(path)
    index = run_dir / SERIES_NAME
    index.write_text(json.dumps({"file-series-version": "1.0", "files": entries}, indent=1))
    return [index, *written]


def _write_mesh(
    path: Path, points: np.ndarray, fields: dict[str, np.ndarray], inside: Inside
) -> None:
    """(M, k <= 3) points, the cells between them and the `fields` (M,) on them, as a .vtu."""
    import meshio  # imported here: only runs with outputs.vtk=true need it

    padded = np.zeros((len(points), 3), dtype=np.float64)
    padded[:, : points.shape[1]] = points
    cells = mesh_cells(points, inside)
    values = {name: np.ascontiguousarray(field) for name, field in fields.items()}
    meshio.Mesh(padded, cells, point_data=values).write(path, binary=True)
