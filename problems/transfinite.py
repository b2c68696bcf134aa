"""Transfinite interpolation on a box: a smooth function equal to given data on every face,
built from the data on the faces alone (Gordon & Hall 1973, "Construction of curvilinear
co-ordinate systems and applications to mesh generation", Int. J. Numer. Meth. Eng. 7, 461).

    g = face_blend(data, [x, y, z], lower, upper)     # (N, m), equal to data on each face

It gives the g of a hard constraint u = g + B N on a box whose faces carry Dirichlet data
(`beltrami` holds its velocity on the six faces of a cube this way, as Urbán, Stefanou & Pons
do in their 3-D Navier-Stokes example).

With P_i f = (1 - ξ_i) f|_{x_i = lower_i} + ξ_i f|_{x_i = upper_i}, ξ_i = (x_i - lower_i) /
(upper_i - lower_i), the linear blend along axis i, the interpolant is the Boolean sum
P f = f - (1 - P_1)(1 - P_2)...(1 - P_d) f. Each factor (1 - P_i) vanishes on both faces normal
to axis i, so P f = f on every face. Expanded, the product is a sum over each axis being kept,
set to its lower end or set to its upper end; the all-kept term is f itself and cancels, so P f
reads f only on the boundary: on the 2d faces, the edges and the corners (26 evaluations in 3-D).
"""

from collections.abc import Callable, Sequence
from itertools import product

import torch

Tensor = torch.Tensor
# data(coordinates) -> (N, K, m): the data at the d (N, K) coordinate tensors given (each
# column k one point on the boundary per row), m values per point.
FaceData = Callable[[Sequence[Tensor]], Tensor]
# Each axis in one term of the expansion: left as it is, or set to an end of the box.
KEPT, LOWER, UPPER = 0, 1, 2


def face_blend(
    data: FaceData, coordinates: Sequence[Tensor], lower: Sequence[float], upper: Sequence[float]
) -> Tensor:
    """(N, m) the transfinite interpolant of `data` at N points given by d (N,) coordinates,
    equal to data(coordinates) on each face of the box [lower, upper].

    `data` is asked once, at (N, 3^d - 1) points: each row's point with some of its
    coordinates moved onto the faces, so its values are read on the boundary only. Built of
    elementwise operations and one sum, so each row depends on that row's point alone (every
    residual engine differentiates it).
    """
    choices = [c for c in product((KEPT, LOWER, UPPER), repeat=len(coordinates)) if any(c)]
    on_faces, weights = [], []
    for axis, (coordinate, low, high) in enumerate(zip(coordinates, lower, upper)):
        role = torch.tensor([c[axis] for c in choices], device=coordinate.device)
        kept, at_lower = (role == KEPT).to(coordinate.dtype), (role == LOWER).to(coordinate.dtype)
        at_upper = (role == UPPER).to(coordinate.dtype)
        column = coordinate[:, None]  # (N, 1) against the (K,) roles: (N, K)
        on_faces.append(column * kept + low * at_lower + high * at_upper)
        fraction = (column - low) / (high - low)
        # (1 - P_i): 1 where kept, -(1 - ξ) at the lower face, -ξ at the upper one
        weights.append(kept - (1 - fraction) * at_lower - fraction * at_upper)
    weight = -torch.stack(weights).prod(dim=0)  # (N, K): P = 1 - Π (1 - P_i), f's term gone
    return (weight[:, :, None] * data(on_faces)).sum(dim=1)
