"""VTK files of a run's prediction for ParaView, written through meshio (`outputs.vtk=true`).

    write_vtk(run_dir, problem.domain, problem.outputs, arrays)   # arrays: prediction.npz's

The evaluation points are written as a point cloud (one vertex cell per point) with one
point-data array per output (`u`), and where a reference exists `u_reference` and
`u_error` = |predicted - reference|. A domain of one or two dimensions has its missing
coordinates set to 0. A space-time domain becomes a time series: one .vtu per distinct time
value (the spatial points at that time) in `vtk/`, listed with their times in
`prediction.vtu.series`, the file-series index ParaView opens as one dataset with a time axis.
A domain of more than three coordinates (time included: its evaluation points are then
scattered Sobol points, on no time slices) is skipped with a log line.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from pinn.geometry import Domain, SpaceTime
from pinn.outputs.finished import FinishedRun

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
    `reference` (M, m), with m = len(output_names).
    """
    if domain.dim > 3:
        why = ""
        if isinstance(domain, SpaceTime):
            why = (
                f" ({domain.dim - 1}-D space and time: its evaluation points lie on no time slices)"
            )
        log.info(
            "outputs.vtk: a %d-D domain%s has no picture in ParaView's 3-D space: no VTK file "
            "written",
            domain.dim,
            why,
        )
        return []
    fields = point_fields(output_names, arrays)
    points = arrays["points"]
    if not isinstance(domain, SpaceTime):
        path = run_dir / VTU_NAME
        _write_cloud(path, points, fields)
        return [path]
    return _write_series(run_dir, points, fields)


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


def _write_series(run_dir: Path, points: np.ndarray, fields: dict[str, np.ndarray]) -> list[Path]:
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
        _write_cloud(path, points[at_time, :-1], {n: v[at_time] for n, v in fields.items()})
        entries.append({"name": f"{SERIES_FOLDER}/{path.name}", "time": float(time)})
        written.append(path)
    index = run_dir / SERIES_NAME
    index.write_text(json.dumps({"file-series-version": "1.0", "files": entries}, indent=1))
    return [index, *written]


def _write_cloud(path: Path, points: np.ndarray, fields: dict[str, np.ndarray]) -> None:
    """(M, k <= 3) points as an unstructured grid of M vertices with the `fields` (M,) on them."""
    import meshio  # imported here: only runs with outputs.vtk=true need it

    padded = np.zeros((len(points), 3), dtype=np.float64)
    padded[:, : points.shape[1]] = points
    vertices = [("vertex", np.arange(len(points)).reshape(-1, 1))]
    values = {name: np.ascontiguousarray(field) for name, field in fields.items()}
    meshio.Mesh(padded, vertices, point_data=values).write(path, binary=True)


def write(run: FinishedRun) -> None:
    """The prediction as VTK (prediction.vtu, or vtk/ and prediction.vtu.series in time)."""
    write_vtk(run.run_dir, run.problem.domain, run.problem.outputs, run.prediction())
