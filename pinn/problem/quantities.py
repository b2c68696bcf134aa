"""Quantities of interest: numbers a problem asks of its solution (a drag coefficient, a flux,
the value at a point, a centreline profile), reported in metrics.json and the history.

A problem declares them in one method, which gets a `QuantityTools` bound to the model:

    class Channel(Problem):
        quantity_reference = {"outflow": 2 / 3}   # optional: published or exact values

        def quantities(self, q):
            outflow = q.boundary_integral(lambda x, u, n: u("u") * n[:, 0], on="x_max")
            return {
                "outflow": outflow,                          # a number
                "centre": q.values([[0.5, 0.5]], "p"),       # the value at a point
                "profile": q.values(profile_points, "u"),    # a profile: (M,) numbers
            }

Integrands get the points and a lazy `Field` of the model there (`u("p")`, `u.d("x", "u")`...,
as in a residual), plus the outward unit normals on a boundary. Integrals use fixed quadrature
points (Sobol, seeded), made once per evaluator: `Domain.boundary_quadrature` on the boundary
(the trapezoidal rule on a circle), quasi-Monte Carlo in the domain.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import torch

from pinn.derivatives.engines import Engine
from pinn.derivatives.field import Field, Model
from pinn.errors import ConfigError, is_finite_number, naming_where, require_int
from pinn.nn.placement import placement
from pinn.problem.columns import QUANTITY_PREFIX
from pinn.problem.fields import problem_field

log = logging.getLogger(__name__)

# Quadrature points of an integral unless it asks for another count (powers of two: Sobol).
DOMAIN_POINTS = 2**14
BOUNDARY_POINTS = 2**12

Integrand = Callable[..., torch.Tensor]


class QuantityTools:
    """Integrals and values of a model's field, for a problem's `quantities(q)`.

    Args:
        problem: the problem (its domain, input and output names).
        model: the network (N, d) -> (N, m); its first parameter gives dtype and device.
    """

    def __init__(self, problem, model: Model):
        self.problem, self.model = problem, model
        self.dtype, self.device = placement(model)
        self._engine = Engine("autograd", model, announce=False)  # exact, whatever the run's
        self._points: dict[tuple, tuple[torch.Tensor, ...]] = {}  # quadrature, made once
        self._warned_outside = False  # points of `values` outside the domain: said once

    def field(self, points) -> Field:
        """The model's lazy field (autograd) at (M, d) points: values and derivatives."""
        points = torch.as_tensor(points, dtype=self.dtype, device=self.device)
        dim = self.problem.domain.dim
        if points.ndim != 2 or points.shape[1] != dim:
            raise ConfigError(
                f"{self._owner}: quantity points must be (M, {dim}), got {tuple(points.shape)}"
            )
        return problem_field(self._engine, self.problem, points, "quantity")

    def values(self, points, out: str | int | None = None) -> torch.Tensor:
        """(M,) one output at (M, d) points (a list of coordinates is taken too). Points
        outside the domain (its boundary included) are evaluated too, with a warning, once."""
        u = self.field(points)
        if not self._warned_outside:
            outside = ~self.problem.domain.contains(u.x.detach().double().cpu(), closed=True)
            if outside.any():
                self._warned_outside = True
                first = [round(v, 6) for v in u.x[outside][0].tolist()]
                log.warning(
                    "%s: %d of the %d points of q.values lie outside the domain (the first: "
                    "%s): the network is extrapolated there",
                    self._owner,
                    int(outside.sum()),
                    len(outside),
                    first,
                )
        return u(out)

    def integral(
        self,
        integrand: Integrand,
        n: int = DOMAIN_POINTS,
        quadrature: tuple[torch.Tensor, torch.Tensor] | None = None,
    ) -> torch.Tensor:
        """∫ integrand over the domain, by quasi-Monte Carlo at n Sobol points (fixed seed), or
        over a region of your own by your own rule.

        integrand(x, u) -> (n,), x the (n, d) points and u the field there.
        quadrature: (points, weights), (M, d) points in the domain and (M,) weights with
            Σ w f(p) ≈ ∫ f over the region meant (`ring_quadrature` around a body, say); n
            is then unused. Converted to the model's dtype and device.
        """
        if quadrature is not None:
            points, weights = self._checked_rule(quadrature)
        else:
            key = ("domain", n)
            if key not in self._points:
                generator = torch.Generator().manual_seed(0)
                domain = self.problem.domain
                points = domain.sample_interior(n, generator, "sobol", self.dtype, self.device)
                self._points[key] = (points, domain.interior_weights(points))
            points, weights = self._points[key]
        u = self.field(points)
        return self._weighted(integrand(u.x, u), weights, "integral")

    def _checked_rule(self, quadrature: object) -> tuple[torch.Tensor, torch.Tensor]:
        """(M, d) points and (M,) weights of a quadrature rule given to `integral`, or why not."""
        dim = self.problem.domain.dim
        wanted = (
            f"{self._owner}: an integral's quadrature must be (points (M, {dim}), weights (M,))"
        )
        if not (isinstance(quadrature, (tuple, list)) and len(quadrature) == 2):
            raise ConfigError(f"{wanted}, got {type(quadrature).__name__}")
        try:
            points, weights = (
                torch.as_tensor(part, dtype=self.dtype, device=self.device) for part in quadrature
            )
        except (TypeError, ValueError, RuntimeError):
            kinds = ", ".join(type(part).__name__ for part in quadrature)
            raise ConfigError(f"{wanted} of numbers, got {kinds}") from None
        if points.ndim != 2 or points.shape[1] != dim or weights.shape != points.shape[:1]:
            raise ConfigError(
                f"{wanted}, got shapes {tuple(points.shape)} and {tuple(weights.shape)}"
            )
        return points, weights

    def boundary_integral(
        self, integrand: Integrand, on: str | Sequence[str] | None = None, n: int = BOUNDARY_POINTS
    ) -> torch.Tensor:
        """∫ integrand ds over the named boundary parts (all of it for None), n points.

        integrand(x, u, normals) -> (n,), normals the (n, d) outward unit normals of the
        domain (on a hole they point into the hole: the body's own normals are -normals).
        """
        key = ("boundary", on if isinstance(on, (str, type(None))) else tuple(on), n)
        if key not in self._points:
            domain = self.problem.domain
            self._points[key] = domain.boundary_quadrature(on, n, self.dtype, self.device)
        points, normals, weights = self._points[key]
        u = self.field(points)
        return self._weighted(integrand(u.x, u, normals), weights, "boundary_integral")

    def _weighted(self, values: object, weights: torch.Tensor, kind: str) -> torch.Tensor:
        if not (isinstance(values, torch.Tensor) and values.shape == weights.shape):
            got = tuple(values.shape) if isinstance(values, torch.Tensor) else type(values)
            raise ConfigError(
                f"{self._owner}: a {kind} integrand must return ({len(weights)},), one value per "
                f"point, got {got}"
            )
        return (values * weights).sum()

    @property
    def _owner(self) -> str:
        return f"{type(self.problem).__name__}.quantities"


def ring_quadrature(
    centre: Sequence[float],
    inner: float,
    outer: float,
    n_radial: int = 16,
    n_angular: int = 256,
    dtype: torch.dtype = torch.float64,
    device: str | torch.device = "cpu",
) -> tuple[torch.Tensor, torch.Tensor]:
    """(n_radial n_angular, 2) points and their weights for ∫ f over the 2-d ring
    inner <= |x - centre| <= outer: Gauss-Legendre in the radius, the trapezoidal rule in the
    angle. Exact for f = r^k cos(jθ), sin(jθ) with k + 1 < 2 n_radial and j < n_angular; for a
    smooth f the error falls exponentially in both counts. For `QuantityTools.integral`'s
    `quadrature` (a body's force as a volume integral around it, say)."""
    if len(centre) != 2:
        raise ConfigError(f"ring_quadrature: centre must be 2 numbers (x, y), got {centre!r}")
    if not (is_finite_number(inner) and is_finite_number(outer) and 0 <= inner < outer):
        raise ConfigError(
            "ring_quadrature: radii must be numbers with 0 <= inner < outer < inf, got "
            f"{inner!r}, {outer!r}"
        )
    require_int("ring_quadrature n_radial", n_radial, minimum=1)
    require_int("ring_quadrature n_angular", n_angular, minimum=1)
    nodes, gauss_weights = np.polynomial.legendre.leggauss(n_radial)
    half_width = (outer - inner) / 2
    radius = torch.as_tensor(inner + half_width * (nodes + 1), dtype=torch.float64)
    radial_weights = torch.as_tensor(half_width * gauss_weights, dtype=torch.float64)
    angle = torch.arange(n_angular, dtype=torch.float64) * (2 * math.pi / n_angular)
    radius, angle = (part.reshape(-1) for part in torch.meshgrid(radius, angle, indexing="ij"))
    points = torch.stack(
        [centre[0] + radius * torch.cos(angle), centre[1] + radius * torch.sin(angle)], dim=1
    )
    # dA = r dr dθ; every angle weighs 2π / n_angular
    weights = radial_weights.repeat_interleave(n_angular) * radius * (2 * math.pi / n_angular)
    return points.to(dtype=dtype, device=device), weights.to(dtype=dtype, device=device)


def evaluate_quantities(problem, model: Model, tools: QuantityTools | None = None) -> dict:
    """{name: float or list of floats}: the problem's quantities for `model`, checked.

    tools: a `QuantityTools` to reuse (its quadrature points), else a new one.
    """
    tools = tools or QuantityTools(problem, model)
    owner = f"{type(problem).__name__}.quantities"
    with torch.enable_grad():  # derivatives need a graph even where the caller has none
        returned = naming_where(owner, lambda: problem.quantities(tools))
    if not isinstance(returned, Mapping):
        raise ConfigError(f"{owner} must return a dict {{name: value}}, got {type(returned)}")
    return {_checked_name(k, owner): _number(v, k, owner) for k, v in returned.items()}


def quantity_errors(values: Mapping, reference: Mapping, owner: str) -> dict[str, float]:
    """{name: ||q - q_ref|| / ||q_ref||} for each quantity with a reference value (for a
    number, |q - q_ref| / |q_ref|), the absolute error ||q - q_ref|| where the reference is 0
    (`error_kind`); a reference naming no quantity is refused."""
    unknown = sorted(set(reference) - set(values))
    if unknown:
        raise ConfigError(
            f"{owner}: quantity_reference names {unknown}, which quantities() does not return; "
            f"it returns {sorted(values)}"
        )
    errors = {}
    for name, truth in reference.items():
        truth = torch.as_tensor(truth, dtype=torch.float64).reshape(-1)
        value = torch.as_tensor(values[name], dtype=torch.float64).reshape(-1)
        if value.shape != truth.shape:
            raise ConfigError(
                f"{owner}: quantity {name!r} has {value.numel()} value(s), its reference "
                f"{truth.numel()}"
            )
        scale = truth.norm().item() if error_kind(truth) == "relative" else 1.0
        errors[name] = (value - truth).norm().item() / scale
    return errors


def error_kind(truth: object) -> str:
    """ "relative" for a reference value with a nonzero entry, "absolute" for one that is 0
    (where a relative error means nothing): how `quantity_errors` measured it."""
    return "relative" if torch.as_tensor(truth, dtype=torch.float64).any() else "absolute"


def quantity_columns(values: Mapping) -> dict[str, float]:
    """The quantities that are single numbers as history columns, `q_<name>`: value."""
    return {
        QUANTITY_PREFIX + name: value for name, value in values.items() if isinstance(value, float)
    }


def _checked_name(name: object, owner: str) -> str:
    if not (isinstance(name, str) and name):
        raise ConfigError(f"{owner}: quantity names must be non-empty strings, got {name!r}")
    return name


def _number(value: object, name: str, owner: str) -> float | list[float]:
    """A quantity as a float (0-d or one-element) or a list of floats (1-d)."""
    wanted = f"{owner}: quantity {name!r} must be a number or a 1-d tensor of numbers, got"
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu()
    try:
        tensor = torch.as_tensor(value, dtype=torch.float64)
    except (TypeError, ValueError, RuntimeError):
        raise ConfigError(f"{wanted} {type(value).__name__}") from None
    if tensor.ndim > 1:
        raise ConfigError(f"{wanted} shape {tuple(tensor.shape)}")
    return tensor.item() if tensor.ndim == 0 else tensor.tolist()
