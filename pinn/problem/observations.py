"""Observations: measured values of u at given points, one loss term of an inverse problem."""

from __future__ import annotations

import numpy as np
import torch

from pinn.derivatives.field import Field
from pinn.errors import ConfigError
from pinn.geometry import BoundaryPoints
from pinn.problem.conditions import Condition, FieldAt, autograd_fields


class Observations(Condition):
    """u = values at given points anywhere in the domain: measured data; term "data".

    What an inverse problem learns its unknown coefficients from (`Problem.unknowns`). The
    network is evaluated at the points through `field_at` (site "observations:<name>"); points
    and values move to the network's dtype and device.

    Args:
        points: (M, d) tensor (or numpy array) of where u was observed.
        values: (M,) observed values of one output (the only one, or `out`), or (M, m) of all m
            outputs; a tensor or a numpy array.
        out: which output (M,) values observe (needed only with several outputs).
        name: the loss term's name.
    """

    def __init__(
        self,
        points: torch.Tensor,
        values: torch.Tensor,
        out: str | int | None = None,
        name: str = "data",
    ):
        points, values = _as_tensor(points), _as_tensor(values)
        _check_observations(points, values, out, name)
        self.points, self.values = points.detach(), values.detach()
        self.out, self.name = out, name
        self._moved: tuple | None = None  # the last copy on a training dtype and device

    def boundary_parts(self, part_names: tuple[str, ...]) -> tuple[str, ...]:
        """None: observations hold at their own points."""
        return ()

    def residual(
        self, u: Field, boundary: BoundaryPoints, field_at: FieldAt | None = None
    ) -> torch.Tensor:
        """(M,) u - values at the observed points ((M m,) when values are (M, m))."""
        self._check_against(u)
        points, values = self.on(u.values.dtype, u.values.device)
        observed = (field_at or autograd_fields(u))(points, f"observations:{self.name}")
        if values.ndim == 1:
            return observed(self.out) - values
        return (observed.values - values).reshape(-1)

    def on(self, dtype: torch.dtype, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
        """The (M, d) points and the values in `dtype` on `device`: copied once and kept, not
        at every step (on a GPU each copy from the host makes it wait, `pinn.syncs`). A new
        `points` or `values` (a time window's share of them) is copied anew."""
        moved = self._moved
        same = moved is not None and moved[0] is self.points and moved[1] is self.values
        if not (same and moved[2:4] == (dtype, device)):
            points = self.points.to(dtype=dtype, device=device)
            values = self.values.to(dtype=dtype, device=device)
            self._moved = moved = (self.points, self.values, dtype, device, points, values)
        return moved[4], moved[5]

    def _check_against(self, u: Field) -> None:
        """Refuse points of another dimension, or values for another number of outputs."""
        if self.points.shape[1] != u.dim:
            raise ConfigError(
                f"observations {self.name!r}: the points have {self.points.shape[1]} "
                f"coordinates, the domain {u.dim} ({', '.join(u.input_names)})"
            )
        outputs, names = len(u.output_names), ", ".join(u.output_names)
        if self.values.ndim == 2 and self.values.shape[1] != outputs:
            raise ConfigError(
                f"observations {self.name!r}: values have {self.values.shape[1]} columns, the "
                f"network {outputs} outputs ({names})"
            )
        if self.values.ndim == 1 and self.out is None and outputs > 1:
            raise ConfigError(
                f"observations {self.name!r}: the network has {outputs} outputs ({names}); "
                f"name the one the (M,) values observe with out=, or give (M, {outputs}) values"
            )


def outside(observations: Observations, domain) -> int:
    """How many of the observed points lie outside `domain` (its boundary counts as in)."""
    return int((~domain.contains(observations.points.double().cpu(), closed=True)).sum())


def _as_tensor(data: object) -> object:
    """A tensor as it is; numbers (a numpy array, nested lists) as a float64 tensor; anything
    else as it is, for the checks to refuse by its type."""
    if isinstance(data, torch.Tensor):
        return data
    try:
        return torch.as_tensor(np.asarray(data, dtype=np.float64))
    except (TypeError, ValueError):
        return data


def _check_observations(
    points: torch.Tensor, values: torch.Tensor, out: str | int | None, name: str
) -> None:
    """Refuse observations that are not (M, d) points with (M,) or (M, m) finite values."""

    def shape(data: object) -> object:
        return tuple(data.shape) if isinstance(data, torch.Tensor) else type(data).__name__

    if not (isinstance(points, torch.Tensor) and points.ndim == 2 and len(points) > 0):
        column = isinstance(points, torch.Tensor) and points.ndim == 1
        raise ConfigError(
            f"observations {name!r}: points must be an (M, d) tensor with M >= 1, "
            f"got {shape(points)}" + ("; for one coordinate, points[:, None]" if column else "")
        )
    count, d = points.shape
    if not (isinstance(values, torch.Tensor) and values.ndim in (1, 2) and len(values) == count):
        raise ConfigError(
            f"observations {name!r}: values must be a ({count},) or ({count}, m) tensor for the "
            f"({count}, {d}) points, got {shape(values)}"
        )
    if values.ndim == 2 and out is not None:
        raise ConfigError(
            f"observations {name!r}: out={out!r} picks one output, so values must be ({count},), "
            f"got {shape(values)}"
        )
    if not (torch.isfinite(points).all() and torch.isfinite(values).all()):
        raise ConfigError(f"observations {name!r}: points and values must all be finite")
