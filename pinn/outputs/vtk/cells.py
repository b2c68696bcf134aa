"""The cells ParaView draws between a prediction's points, so that it shows a surface or volume.

    blocks = mesh_cells(points, inside)   # [(meshio cell type, (C, corners) point indices)]

- 1-D: lines joining the points in order.
- Points on a grid (`grid.grid_indices`): quadrilaterals / hexahedra, and triangles /
  tetrahedra where a grid cell is cut by the boundary (`grid.grid_cells`), unless these leave
  most points out (a thinned-out grid).
- Scattered points (reference data): a Delaunay triangulation (matplotlib) in 2-D, a
  tetrahedralisation (scipy, the `vtk` extra) in 3-D.

Every kind of cell whose centroid lies outside the domain is dropped, so no cell crosses the
hole of an annulus or the notch of an L-shape; a point that no cell then reaches (a lone tip)
is kept as a vertex cell, so that every point still shows.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable

import numpy as np

from pinn.outputs.vtk.grid import grid_cells, grid_indices

log = logging.getLogger("pinn")

Inside = Callable[[np.ndarray], np.ndarray]  # (N, k) points -> (N,) bool: in the closed domain
CellBlocks = list[tuple[str, np.ndarray]]
# A Delaunay simplex this small, relative to the points' extent, is a sliver of points in a line
# or a plane: no cell.
_FLAT_SIMPLEX = 1e-10
# Points on a grid take its cells when these reach at least this share of them, else Delaunay's.
_GRID_REACH = 0.5


def mesh_cells(points: np.ndarray, inside: Inside) -> CellBlocks:
    """The cells of (M, k) points, k in 1..3, as meshio cell blocks: (type, (C, corners) point
    indices), the cells whose centroid `inside` accepts, then a vertex for each point in none."""
    kept = []
    for kind, cells in _candidate_cells(points):
        cells = cells[inside(points[cells].mean(axis=1))]
        if len(cells):
            kept.append((kind, cells))
    reached = _reached(kept, len(points))
    if not reached.all():
        kept.append(("vertex", np.flatnonzero(~reached)[:, None]))
    return kept


def _candidate_cells(points: np.ndarray) -> CellBlocks:
    """The cells of (M, k) points before the domain has its say: lines in 1-D, else grid cells
    where the points lie on a grid and these reach most of them, else Delaunay's."""
    if points.shape[1] == 1:
        return [("line", _lines(points[:, 0]))]
    index = grid_indices(points)
    if index is not None:
        blocks = grid_cells(index)
        # A sparse subset of a grid (reference data thinned out) has few whole grid cells.
        if _reached(blocks, len(points)).mean() >= _GRID_REACH:
            return blocks
    return _delaunay(points)


def _reached(blocks: CellBlocks, count: int) -> np.ndarray:
    """(count,) bool: which points are a corner of some cell of the blocks."""
    reached = np.zeros(count, dtype=bool)
    for _, cells in blocks:
        reached[cells.reshape(-1)] = True
    return reached


def _lines(coordinates: np.ndarray) -> np.ndarray:
    """(M - 1, 2) point indices of the segments joining the (M,) coordinates in order."""
    order = np.argsort(coordinates, kind="stable")
    return np.stack([order[:-1], order[1:]], axis=1)


def _delaunay(points: np.ndarray) -> CellBlocks:
    """The Delaunay simplices of (M, k) scattered points, k = 2 or 3, flat ones left out."""
    dim = points.shape[1]
    if len(points) <= dim:
        return []
    simplices = _triangles(points) if dim == 2 else _tetrahedra(points)
    edges = points[simplices[:, 1:]] - points[simplices[:, :1]]  # (S, k, k)
    volumes = np.abs(np.linalg.det(edges)) / math.factorial(dim)
    extent = np.ptp(points, axis=0).max()
    simplices = simplices[volumes > _FLAT_SIMPLEX * extent**dim]
    return [("triangle" if dim == 2 else "tetra", simplices)]


def _triangles(points: np.ndarray) -> np.ndarray:
    """(S, 3) point indices of the Delaunay triangles of (M, 2) points."""
    from matplotlib.tri import Triangulation

    try:
        triangles = Triangulation(points[:, 0], points[:, 1]).triangles
    except (ValueError, RuntimeError):  # the points on a line: no triangle
        return np.empty((0, 3), dtype=np.int64)
    return np.asarray(triangles, dtype=np.int64)


def _tetrahedra(points: np.ndarray) -> np.ndarray:
    """(S, 4) point indices of the Delaunay tetrahedra of (M, 3) points (scipy's qhull)."""
    try:
        from scipy.spatial import Delaunay
    except ImportError as error:  # at the end of a run: its points, rather than no file
        log.warning(
            "outputs.vtk: the cells of scattered 3-D points are a Delaunay tetrahedralisation, "
            'which needs scipy (%s): pip install "pinn-torch[vtk]"; written as points only',
            error,
        )
        return np.empty((0, 4), dtype=np.int64)
    try:
        tetrahedra = Delaunay(points).simplices
    except (ValueError, RuntimeError):  # the points in a plane (qhull's error): no tetrahedron
        return np.empty((0, 4), dtype=np.int64)
    return np.asarray(tetrahedra, dtype=np.int64)
