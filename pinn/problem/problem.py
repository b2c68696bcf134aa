"""What a PDE module declares: a `Problem` (domain, residual, conditions, exact solution).

A problem module (`problems/<name>.py` in pinn, any `<name>.py` of a user's) holds:

    class Poisson(Problem):
        domain = Box([0, 0], [1, 1])
        conditions = [Dirichlet(value=0.0)]

        def residual(self, x, u):
            return u.laplacian() + torch.sin(pi * x[:, 0]) * torch.sin(pi * x[:, 1])

        def exact(self, x):
            return torch.sin(pi * x[:, 0]) * torch.sin(pi * x[:, 1]) / (2 * pi**2)

and `conf/problem/<name>.yaml` naming the class in `target`. The conditions (Dirichlet, Neumann,
Robin, Periodic, Initial) live in `pinn.problem.conditions`.

An inverse problem declares unknown coefficients with initial guesses, `unknowns = {"kappa":
1.0}` (`pinn.problem.unknowns`), reads them in its residual with `self.unknown("kappa")`, and feeds
samples of u into the loss with an `Observations` condition (`pinn.problem.observations`).
"""

from __future__ import annotations

import difflib
import logging
from collections.abc import Mapping, Sequence

import torch

from pinn.derivatives.field import Field
from pinn.errors import ConfigError
from pinn.geometry import Domain, SpaceTime
from pinn.problem.conditions import Condition
from pinn.problem.importing import check_params, import_module_of
from pinn.problem.quantities import QuantityTools
from pinn.problem.unknowns import Unknowns, initial_guesses, undeclared

log = logging.getLogger(__name__)

# Reference points farther outside the domain than this share of its bounding box are warned
# of: loose enough for coordinates stored in float32 (1.1 is 1.1000000238 there).
_OUTSIDE_TOLERANCE = 1e-6


class Problem:
    """Base class of a PDE problem. Subclasses set the class attributes and `residual`.

    Attributes:
        domain: the `Domain` the PDE holds on (a Box, Disk, Polygon, their combinations, a
            SpaceTime); its coordinate names name the inputs.
        outputs: names of the network's outputs (default one output, "u").
        conditions: boundary and initial conditions (`pinn.problem.conditions`), each adding one
            named loss term.
        unknowns: {name: initial guess} of coefficients to learn with the network (an
            inverse problem); the residual reads each with `self.unknown(name)`.
        attached_unknowns: their parameters once `attach_unknowns` made them, else None.
        quantity_reference: {name: value} of `quantities` to compare with (published or
            exact values): metrics.json then holds each one's relative error.
    """

    domain: Domain
    outputs: tuple[str, ...] = ("u",)
    conditions: Sequence[Condition] = ()
    unknowns: Mapping[str, float] = {}
    attached_unknowns: Unknowns | None = None
    quantity_reference: Mapping[str, float | Sequence[float]] = {}
    # Outputs the PDE fixes only up to an added constant (an incompressible flow's pressure
    # with no value pinned): validation adds to each the constant that best fits the true
    # values before comparing, and reports it (`pinn.evaluation.validation.Validator`).
    up_to_constant: Sequence[str] = ()

    @property
    def inputs(self) -> tuple[str, ...]:
        return self.domain.names

    @property
    def laplacian_inputs(self) -> tuple[int, ...] | None:
        """The inputs `u.laplacian()` sums over in this problem: on a SpaceTime its space
        coordinates (time, the last input, left out: u_t = k Δu is the heat equation); on any
        other domain None, every input."""
        if isinstance(self.domain, SpaceTime):
            return tuple(range(self.domain.space.dim))
        return None

    def residual(self, x: torch.Tensor, u: Field) -> torch.Tensor | dict[str, torch.Tensor]:
        """(N,) PDE residual at the (N, d) interior points x, zero where the PDE holds.

        Return a dict of (N,) tensors for a system of equations; each key becomes a loss term.
        """
        raise NotImplementedError(f"{type(self).__name__} must define residual(self, x, u)")

    def hard_constraint(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor] | None:
        """(g, B) at the (N, d) points x, each (N,) or (N, m), or None (the default): none.

        When given, the network's output N(x) becomes u = g(x) + B(x) N(x) (`pinn.nn.constraints`):
        with B = 0 on a boundary where u = g, that Dirichlet condition holds exactly and needs
        no loss term. g and B must be pointwise functions of x built from torch operations.
        """
        return None

    def exact(self, x: torch.Tensor) -> torch.Tensor | None:
        """(N,) or (N, m) exact solution at the (N, d) points, or None when unknown."""
        return None

    def reference(self) -> tuple[torch.Tensor, torch.Tensor] | dict | None:
        """Reference data, for a problem without an exact solution (or beside one): points
        (M, d) and the solution's values there, (M,) or (M, m), as tensors or numpy arrays
        (read from a file, or computed by a reference solver); or, for some outputs only,
        each at its own points, {output name: ((M_k, d) points, (M_k,) values)} (a published
        centreline profile of one velocity component, say). Validation, the error plot and
        prediction.npz use them instead of `exact`."""
        return None

    def quantities(self, q: QuantityTools) -> dict | None:
        """Quantities of interest of the solution, or None (the default): none.

        `q` (`pinn.problem.quantities.QuantityTools`) gives `q.integral(f)` over the domain,
        `q.boundary_integral(f, on=part)`, `q.values(points, out)` and `q.field(points)`;
        return {name: number or 1-d tensor}. They are reported in metrics.json ("quantities",
        with "quantity_errors" against `quantity_reference`) and, the numbers, in each validated
        history row (every `trainer.log_every` steps).
        """
        return None

    @property
    def has_quantities(self) -> bool:
        return type(self).quantities is not Problem.quantities

    @property
    def has_exact(self) -> bool:
        return type(self).exact is not Problem.exact

    @property
    def has_reference(self) -> bool:
        return type(self).reference is not Problem.reference

    def reference_data(self) -> tuple[torch.Tensor, torch.Tensor]:
        """`reference()` checked, as float64 tensors (M, d) and (M, m), NaN where an output
        has no reference value (`check_reference`); computed once."""
        cached = self.__dict__.get("_reference_data")
        if cached is None:
            cached = check_reference(self.reference(), self.domain.dim, self.outputs, self)
            _warn_of_outside_reference(cached[0], self)
            self.__dict__["_reference_data"] = cached
        return cached

    def attach_unknowns(
        self,
        dtype: torch.dtype = torch.float64,
        device: str | torch.device = "cpu",
        initial: Mapping[str, float] | None = None,
    ) -> Unknowns:
        """Create the declared unknowns as 0-d parameters at their initial guesses; returns them.

        `initial` overrides some guesses (`problem.unknowns` in the config). `pinn.fit` calls
        this with the model's dtype and device when no unknowns are attached yet; calling it
        again starts them afresh.
        """
        owner = type(self).__name__
        guesses = initial_guesses(self.unknowns, initial, owner)
        self.attached_unknowns = Unknowns(guesses, dtype, device, owner)
        return self.attached_unknowns

    def unknowns_for(self, dtype: torch.dtype, device: torch.device) -> Unknowns:
        """The attached unknowns (refused unless in `dtype` on `device`), else fresh ones there.

        `pinn.fit` calls this with the model's dtype and device.
        """
        if self.attached_unknowns is None:
            return self.attach_unknowns(dtype, device)
        for parameter in self.attached_unknowns.parameters():
            if (parameter.dtype, parameter.device) != (dtype, device):
                raise ConfigError(
                    f"{type(self).__name__}'s unknowns are {parameter.dtype} on "
                    f"{parameter.device}, the model {dtype} on {device}: attach them with the "
                    "model's, problem.attach_unknowns(dtype, device)"
                )
        return self.attached_unknowns

    def unknown(self, name: str) -> torch.Tensor:
        """The current value of the unknown coefficient `name`: a 0-d, trainable tensor."""
        if self.attached_unknowns is None:
            owner = type(self).__name__
            if name not in self.unknowns:
                raise undeclared(name, list(self.unknowns), owner)
            raise ConfigError(
                f"{owner}.unknown({name!r}) before its unknowns exist: pinn.fit creates them, or "
                "call problem.attach_unknowns(dtype, device) before evaluating the residual"
            )
        return self.attached_unknowns[name]


def _warn_of_outside_reference(points: torch.Tensor, problem: Problem) -> None:
    """Once per problem: warn of reference points outside its domain (columns in another order
    than the problem's inputs, most often), where the network is compared all the same."""
    domain = problem.domain
    size = max(hi - lo for lo, hi in zip(domain.lower, domain.upper))
    outside = domain.level(points) < -_OUTSIDE_TOLERANCE * size
    if outside.any():
        first = [round(value, 6) for value in points[outside][0].tolist()]
        log.warning(
            "%s.reference(): %d of the %d points lie outside the domain (the first: %s); the "
            "network is compared with them there all the same. Check the points' columns: "
            "they are the inputs %s, in that order",
            type(problem).__name__,
            int(outside.sum()),
            len(points),
            first,
            list(problem.inputs),
        )


def check_reference(
    data: object, dim: int, outputs: Sequence[str], problem: Problem
) -> tuple[torch.Tensor, torch.Tensor]:
    """Reference data as float64 tensors (M, d), (M, m); refused unless shaped so and finite.

    `data` is (points, values) for every output at the same points, or {output name: (points,
    values)} for some outputs, each at its own points; the latter comes back with its point sets
    stacked and NaN where an output has no value (a point of another output's set).
    """
    name = f"{type(problem).__name__}.reference()"
    if isinstance(data, Mapping):
        return _per_output_reference(data, dim, outputs, name)
    if not (isinstance(data, (tuple, list)) and len(data) == 2):
        raise ConfigError(
            f"{name} must return (points, values) or {{output name: (points, values)}}, got "
            f"{type(data).__name__}"
        )
    points, values = _finite_points_and_values(data, dim, name)
    m = len(outputs)
    if values.shape != (len(points), m) and not (m == 1 and values.shape == (len(points),)):
        shapes = f"({len(points)},) or ({len(points)}, 1)" if m == 1 else f"({len(points)}, {m})"
        raise ConfigError(
            f"{name}: values must be {shapes} for the {m} output(s) {list(outputs)} at the "
            f"{len(points)} points, got "
            f"{tuple(values.shape)}; for some outputs only, return {{name: (points, values)}}, "
            f"e.g. {{{outputs[0]!r}: (points, values)}}"
        )
    return points, values.reshape(len(points), m)


def _per_output_reference(
    data: Mapping, dim: int, outputs: Sequence[str], name: str
) -> tuple[torch.Tensor, torch.Tensor]:
    """{output: (points, values)} as stacked (M, d) points and (M, m) values, NaN elsewhere."""
    unknown = [key for key in data if key not in outputs]
    if unknown or not data:
        raise ConfigError(
            f"{name}: a dict of reference data is keyed by output name, one or more of "
            f"{list(outputs)}; got {list(data)}"
        )
    all_points, all_values = [], []
    for output, pair in data.items():
        where = f"{name}[{output!r}]"
        if not (isinstance(pair, (tuple, list)) and len(pair) == 2):
            raise ConfigError(f"{where} must be (points, values), got {type(pair).__name__}")
        points, values = _finite_points_and_values(pair, dim, where)
        if values.shape != (len(points),):
            raise ConfigError(
                f"{where}: values must be ({len(points)},), one per point, got "
                f"{tuple(values.shape)}"
            )
        column = torch.full((len(points), len(outputs)), torch.nan, dtype=torch.float64)
        column[:, list(outputs).index(output)] = values
        all_points.append(points)
        all_values.append(column)
    return torch.cat(all_points), torch.cat(all_values)


def _finite_points_and_values(pair, dim: int, name: str) -> tuple[torch.Tensor, torch.Tensor]:
    """(points, values) as float64 tensors: points (M, d) with M >= 1, everything finite."""
    points, values = (torch.as_tensor(part, dtype=torch.float64) for part in pair)
    if points.ndim != 2 or points.shape[1] != dim or len(points) == 0:
        raise ConfigError(
            f"{name}: points must be (M, {dim}) with M >= 1, got {tuple(points.shape)}"
        )
    if not (torch.isfinite(points).all() and torch.isfinite(values).all()):
        raise ConfigError(f"{name}: points and values must all be finite")
    return points, values


def load_problem(target: str, params: dict | None = None) -> Problem:
    """Import `package.module.ClassName` and construct it with `params` as keyword arguments."""
    module_name, _, class_name = target.rpartition(".")
    if not module_name:
        raise ConfigError(
            f"problem.target={target!r} must look like 'module.ClassName', "
            "e.g. 'pinn.problems.poisson.Poisson' or 'reaction.Reaction'"
        )
    module = import_module_of(target, module_name)  # a failure says which file and line
    cls = getattr(module, class_name, None)
    if not (isinstance(cls, type) and issubclass(cls, Problem)):
        found = sorted(
            name
            for name, value in vars(module).items()
            if isinstance(value, type) and issubclass(value, Problem) and value is not Problem
        )
        close = difflib.get_close_matches(class_name, found, n=1)
        hint = f"; did you mean {module_name}.{close[0]}?" if close else ""
        listing = f" (it has {', '.join(found)})" if found and not close else ""
        raise ConfigError(
            f"problem.target={target!r}: {module_name} has no Problem subclass named "
            f"{class_name!r}{hint}{listing}"
        )
    params = params or {}
    check_params(cls, params)
    return cls(**params)
