"""The cells of points on a grid: a box's whole grid, or a bounding box's grid cut to a domain.

    index = grid_indices(points)      # (M, d) grid positions, or None: the points are no grid
    blocks = grid_cells(index)        # [("quad", (C, 4)), ("triangle", (S, 3))] in 2-D

A grid cell whose 2^d corners are all points is a quadrilateral (2-D) or a hexahedron (3-D). A
cell with some corners missing (at a curved or cut boundary) gives the triangles or tetrahedra
of a Kuhn triangulation of it whose corners are all points, so the mesh reaches the boundary
points. The caller drops the cells whose centroid lies outside the domain (`cells.mesh_cells`).
"""

from __future__ import annotations

import itertools
import math

import numpy as np

# The corners of a grid cell are numbered by their offset bits (bit k: +1 along axis k); VTK
# walks a quadrilateral's and a hexahedron's corners around each face.
_VTK_ORDER = {1: [0, 1], 2: [0, 1, 3, 2], 3: [0, 1, 3, 2, 4, 5, 7, 6]}
_FULL_CELL = {1: "line", 2: "quad", 3: "hexahedron"}
_SIMPLEX = {1: "line", 2: "triangle", 3: "tetra"}
# Grid values are one linspace's: evenly spaced to rounding.
_SPACING_RTOL = 1e-6


def grid_indices(points: np.ndarray) -> np.ndarray | None:
    """(M, d) integer position of each of the (M, d) points on the grid of its coordinates'
    values, or None when the points lie on no grid: a grid is complete (every combination of
    the axes' values is a point, at any spacing) or evenly spaced along every axis (a bounding
    box's grid with the points outside a domain removed); no point twice."""
    axes, positions = zip(*(np.unique(column, return_inverse=True) for column in points.T))
    if any(len(values) < 2 for values in axes):
        return None
    index = np.stack([p.reshape(-1) for p in positions], axis=1)
    if len(np.unique(index, axis=0)) != len(points):
        return None
    complete = math.prod(len(values) for values in axes) == len(points)
    if complete or all(_evenly_spaced(values) for values in axes):
        return index
    return None


def _evenly_spaced(values: np.ndarray) -> bool:
    steps = np.diff(values)
    return bool(np.allclose(steps, steps[0], rtol=_SPACING_RTOL, atol=0))


def grid_cells(index: np.ndarray) -> list[tuple[str, np.ndarray]]:
    """The cells of points at the (M, d) grid positions `index`, as meshio cell blocks of
    point indices: the whole cells ((C, 2^d) quads or hexahedra, lines in 1-D) and the
    simplices of the partial ones ((S, d + 1) triangles or tetrahedra)."""
    dim = index.shape[1]
    corner_ids = _cell_corners(index)  # (C, 2^d), -1 where a corner is no point
    present = corner_ids >= 0
    whole = present.all(axis=1)
    blocks = [(_FULL_CELL[dim], corner_ids[whole][:, _VTK_ORDER[dim]])]
    if dim > 1:
        blocks.append((_SIMPLEX[dim], _partial_simplices(corner_ids[~whole], present[~whole])))
    return [(kind, cells) for kind, cells in blocks if len(cells)]


def _corner_bits(dim: int) -> np.ndarray:
    """(2^d, d) offset of each corner of a grid cell from its lowest one (corner c: c's bits)."""
    return (np.arange(2**dim)[:, None] >> np.arange(dim)) & 1


def _cell_corners(index: np.ndarray) -> np.ndarray:
    """(C, 2^d) point index of each corner (-1: no point there) of every grid cell that has one
    of the (M, d) grid positions `index` as a corner."""
    bits = _corner_bits(index.shape[1])
    shape = index.max(axis=0) + 1
    lowest = (index[:, None, :] - bits[None]).reshape(-1, index.shape[1])
    lowest = np.unique(lowest[((lowest >= 0) & (lowest < shape - 1)).all(axis=1)], axis=0)
    keys = np.ravel_multi_index(index.T, shape)
    order = np.argsort(keys)
    corners = (lowest[:, None, :] + bits[None]).reshape(-1, index.shape[1])
    wanted = np.ravel_multi_index(corners.T, shape)
    at = np.minimum(np.searchsorted(keys, wanted, sorter=order), len(keys) - 1)
    found = keys[order[at]] == wanted
    return np.where(found, order[at], -1).reshape(len(lowest), -1)


def _kuhn_simplices(dim: int) -> np.ndarray:
    """(2^(d-1), d!, d + 1) corner numbers of the Kuhn triangulations of a cell, one about each
    of its main diagonals: from a corner c to the opposite one, flipping one bit at a time."""
    tables = []
    for start in range(2 ** (dim - 1)):
        simplices = []
        for axes in itertools.permutations(range(dim)):
            corner, path = start, [start]
            for axis in axes:
                corner ^= 1 << axis
                path.append(corner)
            simplices.append(path)
        tables.append(simplices)
    return np.array(tables)


def _partial_simplices(corner_ids: np.ndarray, present: np.ndarray) -> np.ndarray:
    """(S, d + 1) point indices of the simplices of partial cells ((P, 2^d) `corner_ids` and
    their `present` mask) whose corners are all points: in each cell, of the Kuhn triangulation
    about the diagonal that keeps most of them."""
    dim = round(math.log2(corner_ids.shape[1]))
    table = _kuhn_simplices(dim)
    complete = present[:, table].all(axis=-1)  # (P, diagonals, d!)
    best = complete.sum(axis=-1).argmax(axis=1)  # (P,)
    cells = np.arange(len(corner_ids))
    kept = complete[cells, best]  # (P, d!)
    simplices = corner_ids[cells[:, None, None], table[best]]  # (P, d!, d + 1)
    return simplices[kept]
