"""Geometry: the domains a PDE is posed on, and the points drawn in them for training.

    Box, Ball, Disk, Polygon          shapes (pinn.geometry.box, .ball, .polygon)
    a | b, a & b, a - b               constructive geometry (pinn.geometry.csg)
    SpaceTime(space, t0, t1)          a spatial shape times a time interval
    PointSampler, Batch               the points of a training step (pinn.geometry.sampler)
    Refinement                        residual-based adaptive sampling (pinn.geometry.refinement)

This layer knows nothing of networks, derivatives or training.
"""

from pinn.geometry.ball import Ball, Disk
from pinn.geometry.box import Box
from pinn.geometry.csg import Difference, Intersection, Union
from pinn.geometry.domain import BoundaryPoints, Domain, Piece
from pinn.geometry.polygon import Polygon
from pinn.geometry.refinement import REFINEMENTS, Refinement, residual_magnitude
from pinn.geometry.sampler import Batch, PointSampler
from pinn.geometry.sampling import SAMPLING_METHODS
from pinn.geometry.spacetime import SpaceTime

__all__ = [
    "REFINEMENTS",
    "SAMPLING_METHODS",
    "Ball",
    "Batch",
    "BoundaryPoints",
    "Box",
    "Difference",
    "Disk",
    "Domain",
    "Intersection",
    "Piece",
    "PointSampler",
    "Polygon",
    "Refinement",
    "SpaceTime",
    "Union",
    "residual_magnitude",
]
