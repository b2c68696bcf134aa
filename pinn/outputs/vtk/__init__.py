"""VTK files of a run's prediction for ParaView, written through meshio (`outputs.vtk=true`).

    write(run)                                                    # the writer of a finished run
    write_vtk(run_dir, problem.domain, problem.outputs, arrays)   # arrays: prediction.npz's

What each kind of domain writes (one .vtu of the points, cells between them, and one point
array per output `u`, with `u_reference` and `u_error` = |predicted - reference| where there is
a reference):

- A box, evaluated on its grid (or reference data on a complete grid): `prediction.vtu` of
  lines (1-D), quadrilaterals (2-D) or hexahedra (3-D) joining grid neighbours.
- Any other domain: its grid points carry the grid cells whose corners are all points, and
  triangles / tetrahedra where the boundary cuts a cell; scattered reference points a Delaunay
  triangulation (2-D) or tetrahedralisation (3-D, needs scipy: the `vtk` extra). Cells whose
  centroid lies outside the domain are dropped (none crosses a hole or a notch); a point left
  in no cell stays a vertex (`cells`).
- Space-time: a time series, `vtk/prediction_<k>.vtu` of the space at each time value, listed
  with their times in `prediction.vtu.series`, the index ParaView opens as one dataset with a
  time axis. Where the evaluation points lie on no time slices (3-D space and time, scattered
  reference data), the model is evaluated on a grid of the space at `SERIES_TIMES` evenly
  spaced times, with the exact solution as the reference where there is one (`slices`).
- More than three space coordinates: skipped with a log line.
"""

from __future__ import annotations

import numpy as np

from pinn.geometry import Domain, SpaceTime
from pinn.outputs.finished import FinishedRun
from pinn.outputs.vtk.files import SERIES_FOLDER, SERIES_NAME, VTU_NAME, point_fields, write_vtk
from pinn.outputs.vtk.slices import SERIES_TIMES, on_time_slices, time_slices

__all__ = [
    "SERIES_FOLDER",
    "SERIES_NAME",
    "SERIES_TIMES",
    "VTU_NAME",
    "point_fields",
    "time_slices",
    "write",
    "write_vtk",
]


def write(run: FinishedRun) -> None:
    """The prediction as VTK (prediction.vtu, or vtk/ and prediction.vtu.series in time)."""
    domain, arrays = run.problem.domain, run.prediction()
    if _needs_slices(domain, arrays["points"]):
        arrays = time_slices(run.problem, run.model)
    write_vtk(run.run_dir, domain, run.problem.outputs, arrays)


def _needs_slices(domain: Domain, points: np.ndarray) -> bool:
    """Whether the domain is space-time of at most 3-D space and the (M, d) points lie on no
    time slices (3-D space's Sobol points, scattered reference data)."""
    if not isinstance(domain, SpaceTime) or domain.space.dim > 3:
        return False
    return not on_time_slices(points, domain.space.dim)
