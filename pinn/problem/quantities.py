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

import math
from collections.abc import Callable, Mapping, Sequence

import torch

from pinn.derivatives.field import Field, Model
from pinn.errors import ConfigError
from pinn.problem.columns import QUANTITY_PREFIX

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
        parameter = next(iter(model.parameters()), None) if hasattr(model, "parameters") else None
        self.dtype = parameter.dtype if parameter is not None else torch.float64
        self.device = parameter.device if parameter is not None else torch.device("cpu")
        self._points: dict[tuple, tuple[torch.Tensor, ...]] = {}  # quadrature, made once

    def field(self, points) -> Field:
        """The model's lazy field (autograd) at (M, d) points: values and derivatives."""
        points = torch.as_tensor(points, dtype=self.dtype, device=self.device)
        dim = self.problem.domain.dim
        if points.ndim != 2 or points.shape[1] != dim:
            raise ConfigError(
                f"{self._owner}: quantity points must be (M, {dim}), got {tuple(points.shape)}"
            )
        return Field(self.model, points, self.problem.inputs, self.problem.outputs)

    def values(self, points, out: str | int | None = None) -> torch.Tensor:
        """(M,) one output at (M, d) points (a list of coordinates is taken too)."""
        return self.field(points)(out)

    def integral(self, integrand: Integrand, n: int = DOMAIN_POINTS) -> torch.Tensor:
        """∫ integrand over the domain, by quasi-Monte Carlo at n Sobol points (fixed seed).

        integrand(x, u) -> (n,), x the (n, d) points and u the field there.
        """
        key = ("domain", n)
        if key not in self._points:
            generator = torch.Generator().manual_seed(0)
            domain = self.problem.domain
            points = domain.sample_interior(n, generator, "sobol", self.dtype, self.device)
            weights = domain.interior_weights(points)
            self._points[key] = (points, weights)
        points, weights = self._points[key]
        u = self.field(points)
        return self._weighted(integrand(u.x, u), weights, "integral")

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


def evaluate_quantities(problem, model: Model, tools: QuantityTools | None = None) -> dict:
    """{name: float or list of floats}: the problem's quantities for `model`, checked.

    tools: a `QuantityTools` to reuse (its quadrature points), else a new one.
    """
    tools = tools or QuantityTools(problem, model)
    with torch.enable_grad():  # derivatives need a graph even where the caller has none
        returned = problem.quantities(tools)
    owner = f"{type(problem).__name__}.quantities"
    if not isinstance(returned, Mapping):
        raise ConfigError(f"{owner} must return a dict {{name: value}}, got {type(returned)}")
    return {_checked_name(k, owner): _number(v, k, owner) for k, v in returned.items()}


def quantity_errors(values: Mapping, reference: Mapping, owner: str) -> dict[str, float]:
    """{name: ||q - q_ref|| / ||q_ref||} for each quantity with a reference value (for a
    number, |q - q_ref| / |q_ref|); a reference naming no quantity is refused."""
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
        norm = truth.norm().item()
        errors[name] = (value - truth).norm().item() / norm if norm > 0 else math.inf
    return errors


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
