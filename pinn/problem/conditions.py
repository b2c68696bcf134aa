"""Conditions on the boundary and at the initial time, and observations: each one loss term.

    Dirichlet(on="x_min", value=0.0)                  u = value
    Neumann(on="x_max", value=1.0)                    du/dn = value, n the outward normal
    Robin(on="x_max", a=1.0, b=2.0, value=0.0)        a u + b du/dn = value
    Periodic(on=("x_min", "x_max"))                   u(p) = u(p') at matching points
    Initial(value=u0, time="t"), Initial(rate=v0)     u = u0, du/dt = v0 on the face t_min
    Observations(points, values)                      u = values at points (observations)
    BoundaryResidual(f, on="hole")                    f(points, u, normals) = 0: any residual

`on` is "boundary" (all of it), a part name (a box's face "x_min", a disk's "circle", a polygon's
"edge2", or the name given to a shape), a list of them, or a predicate: a function of the (N, d)
boundary points returning an (N,) bool mask, for part of a part. A value (and
Robin's `a`, `b`) is a constant or a function of the (n, d) points returning (n,); with
`normals=True` (Neumann, Robin), a function of the points and their (n, d) outward unit normals,
`value(points, normals)`, for a flux given as a vector field, q . n.

A condition holds only where it says: "boundary" includes a time-dependent domain's t_min and
t_max faces, so name the spatial parts there (`on=["x_min", "x_max"]`).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence

import torch

from pinn.derivatives.field import Field
from pinn.errors import ConfigError, validating
from pinn.geometry import BoundaryPoints, SpaceTime
from pinn.geometry.domain import known_parts

# A condition's value: a constant, or a function of the (n, d) points returning (n,).
Value = float | Callable[[torch.Tensor], torch.Tensor]
# Where a condition holds: "boundary", part name(s), or a predicate (N, d) -> (N,) bool.
Where = str | Sequence[str] | Callable[[torch.Tensor], torch.Tensor]
# Makes a field at (n, d) points for a named site; the loss passes the engine's, so every
# evaluation of the network is planned (`pinn.derivatives.engines`).
FieldAt = Callable[[torch.Tensor, str], Field]


class Condition:
    """A condition: one loss term, `name`, the mean square of `residual`.

    Subclasses implement `residual(u, boundary, field_at)`: the (n,) residual, zero where the
    condition holds, from `u`, the field at every boundary point (`boundary.points`). A
    condition that needs the network elsewhere asks `field_at(points, site)` for a field.
    `boundary_parts` says which parts' points it reads (every part, unless it overrides it):
    the sampler draws points only there (`pinn.boundary_counts`).
    """

    name: str

    def boundary_parts(self, part_names: tuple[str, ...]) -> tuple[str, ...]:
        """The boundary parts whose points `residual` reads, of the domain's `part_names`."""
        return part_names

    def residual(
        self, u: Field, boundary: BoundaryPoints, field_at: FieldAt | None = None
    ) -> torch.Tensor:
        raise NotImplementedError(f"{type(self).__name__} must define residual")


class _OnFaces(Condition):
    """A condition on the boundary points that `on` selects (parts or a predicate)."""

    def __init__(self, on: Where, out: str | int | None, name: str):
        if not (isinstance(on, str) or callable(on) or _is_names(on)):
            raise ConfigError(
                f"condition {name!r}: on={on!r} must be 'boundary', a part name, a list of part "
                "names, or a function of the (N, d) points returning an (N,) bool mask"
            )
        self.on, self.out, self.name = on, out, name

    def _mask(self, boundary: BoundaryPoints) -> torch.Tensor | slice:
        return select(self.on, boundary, self.name)

    def boundary_parts(self, part_names: tuple[str, ...]) -> tuple[str, ...]:
        """The parts `on` names; every part for "boundary" or a predicate (it may pick any)."""
        if callable(self.on) or self.on == "boundary":
            return part_names
        return (self.on,) if isinstance(self.on, str) else tuple(self.on)


class Dirichlet(_OnFaces):
    """u = value where `on` selects (default: all of it); term "dirichlet".

    Args:
        on: where it holds (see the module docstring).
        value: a constant or a function of the (n, d) points returning (n,).
        out: which output it holds for (needed only with several outputs).
        name: the loss term's name.
    """

    def __init__(
        self,
        on: Where = "boundary",
        value: Value = 0.0,
        out: str | int | None = None,
        name: str = "dirichlet",
    ):
        super().__init__(on, out, name)
        self.value = value

    def residual(
        self, u: Field, boundary: BoundaryPoints, field_at: FieldAt | None = None
    ) -> torch.Tensor:
        """(n,) u - value at the selected points."""
        mask = self._mask(boundary)
        return u(self.out)[mask] - evaluate_value(self.value, boundary.points[mask], self.name)


class _OnFacesWithNormals(_OnFaces):
    """A condition whose value functions may take the outward normals too (`normals=True`)."""

    normals: bool = False

    def _evaluate(self, value: Value, boundary: BoundaryPoints, mask) -> torch.Tensor:
        """(n,) a value at the selected points, given their normals too when `normals`."""
        normals = boundary.normals[mask] if self.normals else None
        return evaluate_value(value, boundary.points[mask], self.name, normals)


class Neumann(_OnFacesWithNormals):
    """du/dn = value where `on` selects, n the outward unit normal; term "neumann".

    Arguments as for `Dirichlet`, and `normals`: when True, `value` is a function of the (n, d)
    points and their (n, d) outward unit normals, `value(points, normals)` -> (n,) (a flux
    q . n on a curved boundary, say). On x_min the outward normal is -e_x, so du/dn = -du/dx.
    """

    def __init__(
        self,
        on: Where = "boundary",
        value: Value = 0.0,
        out: str | int | None = None,
        name: str = "neumann",
        normals: bool = False,
    ):
        super().__init__(on, out, name)
        self.value, self.normals = value, _normals_flag(normals, name, {"value": value})

    def residual(
        self, u: Field, boundary: BoundaryPoints, field_at: FieldAt | None = None
    ) -> torch.Tensor:
        """(n,) du/dn - value at the selected points."""
        mask = self._mask(boundary)
        flux = normal_derivative(u, boundary.normals, self.out)[mask]
        return flux - self._evaluate(self.value, boundary, mask)


class Robin(_OnFacesWithNormals):
    """a u + b du/dn = value where `on` selects; term "robin".

    Args:
        on: where it holds, as for `Dirichlet`.
        a: the coefficient of u: a constant or a function of the (n, d) points returning (n,).
        b: the coefficient of du/dn, likewise.
        value: the right-hand side, likewise.
        out: which output it holds for (needed only with several outputs).
        name: the loss term's name.
        normals: when True, each of `a`, `b`, `value` that is a function takes the points and
            their (n, d) outward unit normals, `f(points, normals)` -> (n,).
    """

    def __init__(
        self,
        on: Where = "boundary",
        a: Value = 1.0,
        b: Value = 1.0,
        value: Value = 0.0,
        out: str | int | None = None,
        name: str = "robin",
        normals: bool = False,
    ):
        super().__init__(on, out, name)
        self.a, self.b, self.value = a, b, value
        self.normals = _normals_flag(normals, name, {"a": a, "b": b, "value": value})

    def residual(
        self, u: Field, boundary: BoundaryPoints, field_at: FieldAt | None = None
    ) -> torch.Tensor:
        """(n,) a u + b du/dn - value at the selected points."""
        mask = self._mask(boundary)
        flux = normal_derivative(u, boundary.normals, self.out)[mask]
        a, b, value = (self._evaluate(v, boundary, mask) for v in (self.a, self.b, self.value))
        return a * u(self.out)[mask] + b * flux - value


class BoundaryResidual(_OnFaces):
    """Any residual on the boundary points that `on` selects: one loss term, `name`, the mean
    square of `residual(x, u, normals)` there.

    For a condition none of the others write, such as a traction sigma . n = 0 on a hole
    (mixed derivatives of several outputs) or a flux that depends on u:

        def traction_x(x, u, n):  # (n, d) points, the field, (n, d) outward unit normals
            sxx = u.d("x", "u") + nu * u.d("y", "v")
            sxy = 0.5 * (1 - nu) * (u.d("y", "u") + u.d("x", "v"))
            return sxx * n[:, 0] + sxy * n[:, 1]

        BoundaryResidual(traction_x, on="hole", name="traction_x")

    Args:
        residual: a function of the (N, d) boundary points, the field `u` there (`pinn.Field`:
            u(), u.d, u.d2, u.grad, u.laplacian ..., each output by name) and their (N, d)
            outward unit normals, returning the (N,) residual, zero where the condition holds.
            It sees every boundary point of the batch; the term keeps those `on` selects.
            A condition of several components (both of a traction's) is one
            BoundaryResidual each.
        on: where it holds, as for `Dirichlet`: "boundary", a part name, a list of them, or a
            predicate of the points.
        name: its loss term (weighted by `problem.weights.<name>`).
    """

    def __init__(
        self,
        residual: Callable[[torch.Tensor, Field, torch.Tensor], torch.Tensor],
        on: Where = "boundary",
        name: str = "boundary_residual",
    ):
        if not callable(residual):
            raise ConfigError(
                f"condition {name!r}: residual must be a function of (points, u, normals), "
                f"got {residual!r}"
            )
        super().__init__(on, None, name)
        self.function = residual

    def residual(
        self, u: Field, boundary: BoundaryPoints, field_at: FieldAt | None = None
    ) -> torch.Tensor:
        """(n,) the user's residual at the selected points."""
        mask = self._mask(boundary)
        values = self.function(boundary.points, u, boundary.normals)
        n = boundary.points.shape[0]
        if validating() and not (isinstance(values, torch.Tensor) and values.shape == (n,)):
            is_tensor = isinstance(values, torch.Tensor)
            got = tuple(values.shape) if is_tensor else type(values).__name__
            raise ConfigError(
                f"condition {self.name!r}: its residual must return a tensor of shape ({n},) for "
                f"({n}, d) boundary points, got {got}"
            )
        return values[mask]


class Initial(Condition):
    """u = value (or du/dt = rate) at the initial time: on the face `<time>_min`.

    Give exactly one of `value` (term "initial") and `rate` (term "initial_rate"); a second
    order in time problem takes two `Initial` conditions. The box must name its time
    coordinate, e.g. `Box([0, 0], [1, 1], names=["x", "t"])`.

    Args:
        value: u at t_min, a constant or a function of the (n, d) points returning (n,).
        rate: du/dt at t_min, likewise.
        time: the name of the time coordinate.
        out: which output it holds for (needed only with several outputs).
        name: the loss term's name; by default "initial" with `value`, "initial_rate" with
            `rate`.
    """

    def __init__(
        self,
        value: Value | None = None,
        rate: Value | None = None,
        time: str = "t",
        out: str | int | None = None,
        name: str | None = None,
    ):
        if (value is None) == (rate is None):
            raise ConfigError(
                "Initial needs exactly one of value= and rate=; for both, give two conditions: "
                "Initial(value=...), Initial(rate=...)"
            )
        self.value, self.rate, self.time, self.out = value, rate, time, out
        self.name = name or ("initial" if rate is None else "initial_rate")

    def boundary_parts(self, part_names: tuple[str, ...]) -> tuple[str, ...]:
        """The face `<time>_min`."""
        return (f"{self.time}_min",)

    def residual(
        self, u: Field, boundary: BoundaryPoints, field_at: FieldAt | None = None
    ) -> torch.Tensor:
        """(n,) u - value (or du/dt - rate) at the points on the face `<time>_min`."""
        if self.time not in u.input_names:
            raise ConfigError(
                f"condition {self.name!r}: no coordinate is named {self.time!r}; the coordinates "
                f"are {list(u.input_names)}. Name the time one, e.g. Box(..., names=['x', 't'])"
            )
        mask = select(f"{self.time}_min", boundary, self.name)
        points = boundary.points[mask]
        if self.rate is None:
            return u(self.out)[mask] - evaluate_value(self.value, points, self.name)
        return u.d(self.time, self.out)[mask] - evaluate_value(self.rate, points, self.name)


class Periodic(Condition):
    """u at each point p of the face on[0] equals u at the matching point p' of face on[1].

    The faces are the planes x = lower and x = upper of the domain's bounding box for one
    coordinate x: a Box's, or those of a SpaceTime of a box, or of any shape whose faces they are
    (a channel with a hole inside). p' is p with x moved to the opposite plane, so the pairs
    match exactly whatever points the sampler drew; the network is evaluated at p' through
    `field_at` (site "periodic:<name>"). With `derivative=True` the derivative across the faces
    matches too.

    Args:
        on: two opposite faces, e.g. ("x_min", "x_max").
        derivative: also require du/dx(p) = du/dx(p') for the coordinate x across the faces.
        out: which output it holds for (needed only with several outputs).
        name: the loss term's name.
    """

    def __init__(
        self,
        on: Sequence[str] = ("x_min", "x_max"),
        derivative: bool = False,
        out: str | int | None = None,
        name: str = "periodic",
    ):
        self.faces = tuple(on) if _is_names(on) else ()
        coordinates = [face.rpartition("_") for face in self.faces]
        if not (
            len(coordinates) == 2
            and coordinates[0][0] == coordinates[1][0]
            and {coordinates[0][2], coordinates[1][2]} == {"min", "max"}
        ):
            raise ConfigError(
                f"Periodic needs two opposite faces such as ('x_min', 'x_max'), got on={on!r}"
            )
        self.coordinate = coordinates[0][0]
        self.derivative, self.out, self.name = derivative, out, name

    def boundary_parts(self, part_names: tuple[str, ...]) -> tuple[str, ...]:
        """The face on[0] only: the network is evaluated on on[1] at its points moved across."""
        return self.faces[:1]

    def residual(
        self, u: Field, boundary: BoundaryPoints, field_at: FieldAt | None = None
    ) -> torch.Tensor:
        """(n,) u(p) - u(p'), followed by (n,) du/dx(p) - du/dx(p') with `derivative`."""
        first, second = self.faces
        domain = boundary.domain
        if domain is None:
            raise ConfigError(
                f"condition {self.name!r} needs boundary points that know their domain"
            )
        mask = select(first, boundary, self.name)
        known_parts([second], boundary.part_names)  # refuses an unknown name, listing the parts
        axis = domain.names.index(self.coordinate)
        corner = domain.upper if second.endswith("_max") else domain.lower
        mapped = boundary.points[mask].clone()
        mapped[:, axis] = corner[axis]  # exactly on the opposite face
        self._check_opposite(domain, mapped)
        field_at = field_at or autograd_fields(u)
        opposite = field_at(mapped, f"periodic:{self.name}")
        residual = u(self.out)[mask] - opposite(self.out)
        if not self.derivative:
            return residual
        jump = u.d(axis, self.out)[mask] - opposite.d(axis, self.out)
        return torch.cat([residual, jump])

    def _check_opposite(self, domain, mapped: torch.Tensor) -> None:
        """Refuse faces that are not opposite planes: the moved points must lie on the boundary."""
        size = max(hi - lo for lo, hi in zip(domain.lower, domain.upper))
        off = domain.level(mapped.detach()).abs() > 1e-9 * size
        if validating() and off.any():
            raise ConfigError(
                f"condition {self.name!r}: {self.faces[0]} and {self.faces[1]} are not opposite "
                f"planes of the domain's bounding box: {int(off.sum())} points of "
                f"{self.faces[0]} moved across land off the boundary (e.g. "
                f"{mapped[off][0].tolist()}); Periodic pairs the faces of a box"
            )


def normal_derivative(
    u: Field, normals: torch.Tensor, out: str | int | None = None
) -> torch.Tensor:
    """(N,) du/dn = grad u . n at every point of the field, from (N, d) outward normals."""
    return (u.grad(out) * normals).sum(dim=1)


def on_the_time_faces(domain: object, conditions: Sequence[Condition]) -> list[str]:
    """The names of the conditions that hold on all of a space-time domain's boundary, its
    t_min and t_max faces included: at the final time too, which a user seldom means."""
    if not isinstance(domain, SpaceTime):
        return []
    return [c.name for c in conditions if isinstance(c, _OnFaces) and c.on == "boundary"]


def select(on: Where, boundary: BoundaryPoints, name: str) -> torch.Tensor | slice:
    """What indexes the boundary points `on` selects; refuses an empty or bad selection.

    on="boundary" gives `slice(None)`, which indexes like an all-True mask without a copy and
    without a count only known from the mask's values (which a compiled step cannot have);
    named parts give their (n,) long row indices (`BoundaryPoints.rows_on`: n is known on the
    host, so neither indexing nor the check waits for the device); a predicate, or points whose
    parts' rows are unknown, the (N,) bool mask.
    """
    if callable(on):
        mask = on(boundary.points)
        n = boundary.points.shape[0]
        if not (isinstance(mask, torch.Tensor) and mask.dtype == torch.bool and mask.shape == (n,)):
            is_tensor = isinstance(mask, torch.Tensor)
            got = f"{mask.dtype} {tuple(mask.shape)}" if is_tensor else type(mask).__name__
            raise ConfigError(
                f"condition {name!r}: its predicate must return a ({n},) bool tensor for the "
                f"({n}, d) boundary points, got {got}"
            )
    elif on == "boundary":
        return slice(None)
    else:
        rows = boundary.rows_on(on)
        if rows is not None:
            if len(rows) == 0:
                raise _selects_none(name, boundary)
            return rows
        mask = boundary.on(on)
    if validating() and not mask.any():
        raise _selects_none(name, boundary)
    return mask


def _selects_none(name: str, boundary: BoundaryPoints) -> ConfigError:
    return ConfigError(
        f"condition {name!r} selects none of the {boundary.points.shape[0]} boundary points; "
        "draw more (problem.n_boundary, or aim some at it: problem.boundary_points) or "
        "check where it holds"
    )


def evaluate_value(
    value: Value, points: torch.Tensor, name: str, normals: torch.Tensor | None = None
) -> torch.Tensor:
    """(n,) the value of the condition `name` at (n, d) points, from a constant or a function:
    of the points, or of the points and their (n, d) outward `normals` when those are given."""
    if callable(value):
        arguments = (points,) if normals is None else (points, normals)
        try:
            result = value(*arguments)
        except TypeError:  # read the signature only then: not at every step of a good run
            _check_arity(value, arguments, name)
            raise
        if not isinstance(result, torch.Tensor) or result.shape != points.shape[:1]:
            is_tensor = isinstance(result, torch.Tensor)
            got = tuple(result.shape) if is_tensor else type(result).__name__
            raise ConfigError(
                f"condition {name!r}: its value function must return a tensor of shape "
                f"({points.shape[0]},) for ({points.shape[0]}, d) points, got {got}"
            )
        return result
    return torch.full(points.shape[:1], float(value), dtype=points.dtype, device=points.device)


def _check_arity(function: Callable, arguments: tuple, name: str) -> None:
    """Refuse a value function that cannot take `arguments` (the points, and the normals with
    normals=True), saying which flag it needs; one that can returns (its own TypeError stands)."""
    try:
        inspect.signature(function).bind(*arguments)
    except TypeError:
        wants = "(points, normals)" if len(arguments) == 1 else "(points) only"
        flag = "normals=True" if len(arguments) == 1 else "normals=False (the default)"
        given = "(points)" if len(arguments) == 1 else "(points, normals)"
        raise ConfigError(
            f"condition {name!r}: its value function is called with {given} but takes "
            f"{wants}: give the condition {flag}, or change the function's arguments"
        ) from None
    except ValueError:  # no signature to read (some builtins): let the call speak
        pass


def _normals_flag(normals: object, name: str, values: dict[str, Value]) -> bool:
    """`normals` checked: a bool, and when True at least one of `values` is a function."""
    if not isinstance(normals, bool):
        raise ConfigError(f"condition {name!r}: normals must be True or False, got {normals!r}")
    if normals and not any(callable(v) for v in values.values()):
        raise ConfigError(
            f"condition {name!r}: normals=True passes the outward normals to a value function, "
            f"but {', '.join(values)} {'is' if len(values) == 1 else 'are'} constant; give a "
            "function of (points, normals), or leave normals=False"
        )
    return normals


def _is_names(on: object) -> bool:
    return (
        isinstance(on, Sequence)
        and not isinstance(on, str)
        and all(isinstance(face, str) for face in on)
    )


def autograd_fields(u: Field) -> FieldAt:
    """Plain autograd fields of u's network, for a condition used outside `loss_terms`."""
    return lambda points, site: Field(
        u.f, points, u.input_names, u.output_names, laplacian_inputs=u.laplacian_inputs
    )
