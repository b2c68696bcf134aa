"""A lazy, caching view of a network's outputs and their input derivatives at a batch of points.

`Field` runs the network once and computes derivatives only when asked, each at most once:

    u = Field(model, x, input_names=("x", "y"))
    u.laplacian()            # one backward for the gradient, one more per input dimension
    u.d("x"), u.d2("x")      # reuse the gradient and the second-derivative row already built
    u.d("x", order=3)        # one more backward of d²u/dx² (any order: one backward each)

Every derivative is built with `create_graph=True`, so it stays differentiable in the model's
parameters and goes straight into a loss.

The batch "sum trick": for a pointwise model (row i of the output depends only on row i of the
input), d(sum_i u_i)/dx_i = du_i/dx_i, so one backward pass of the batch sum gives every point's
gradient at once. That is why models must be pointwise (see `pinn.derivatives.check_pointwise`).

A field also records what it was asked for (`requests`), so an engine can plan a single
forward pass that computes exactly that next time (`pinn.derivatives.engines`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import torch

from pinn.derivatives.univariate import check_order
from pinn.errors import ConfigError, IndexOutOfRangeError, UnknownNameError

Model = Callable[[torch.Tensor], torch.Tensor]


class LaplacianDraws(Protocol):
    """What a field needs of a stochastic Laplacian estimator (`LaplacianEstimator`)."""

    def draw(
        self, x: torch.Tensor, inputs: Sequence[int] | None = None
    ) -> tuple[torch.Tensor, float]:
        """Random directions for the (N, d) points x over the `inputs` given (None: all) and
        the factor that unbiases their sum."""


@dataclass
class Requests:
    """Which input derivatives a residual asked for (input indices; outputs are not tracked).

    first: inputs of first derivatives; diagonal: inputs j of d²u/dx_j²; laplacian: whether the
    Laplacian itself was asked for; mixed: pairs (i, j), i < j, of mixed second derivatives;
    expression: whether a derivative of an expression of the outputs was asked for
    (`Field.derivative`), which only differentiating through the points can give;
    higher: pairs (i, n) of derivatives d^n u/dx_i^n of order n >= 3 (`d(var, order=n)`).
    """

    first: set[int] = field(default_factory=set)
    diagonal: set[int] = field(default_factory=set)
    laplacian: bool = False
    mixed: set[tuple[int, int]] = field(default_factory=set)
    expression: bool = False
    higher: set[tuple[int, int]] = field(default_factory=set)


class Field:
    """Outputs of `f` at points `x`, with lazily computed, cached input derivatives (autograd).

    Args:
        f: a pointwise callable (N, d) -> (N, m); an (N,) output counts as m = 1.
        x: (N, d) points. They are detached: derivatives are taken with respect to a copy.
        input_names: d names for the input coordinates, so `d("x")` can be asked by name.
        output_names: m names for the outputs, so `u("v")` can be asked by name.

        estimator: when given, `laplacian()` is its unbiased estimate from random directions
            (`pinn.derivatives.stochastic.LaplacianEstimator`), drawn once per field.
        laplacian_inputs: the input indices `laplacian()` sums over (sorted; None: all). A
            residual on a SpaceTime gets its space coordinates
            (`Problem.laplacian_inputs`): u_t = k Δu means Δ in space.

    Every method returns one output component as an (N,) or (N, d[, d]) tensor. With a single
    output `out` may be left out; with several, name it (or give its index).
    """

    # A class default too, for subclasses that fill their caches without calling __init__.
    laplacian_inputs: tuple[int, ...] | None = None

    def __init__(
        self,
        f: Model,
        x: torch.Tensor,
        input_names: Sequence[str] | None = None,
        output_names: Sequence[str] | None = None,
        estimator: LaplacianDraws | None = None,
        laplacian_inputs: Sequence[int] | None = None,
    ):
        if x.ndim != 2:
            raise ValueError(f"points must have shape (N, d), got {tuple(x.shape)}")
        self.f = f
        # Before the first pass: a Taylor field draws the estimator's directions in it.
        self.laplacian_inputs = None if laplacian_inputs is None else tuple(laplacian_inputs)
        # Differentiable copies of the points, for autograd; not in a compiled step, which
        # holds only planned Taylor fields (their values need no graph back to the points).
        compiling = torch.compiler.is_compiling()
        self.x = x.detach() if compiling else x.detach().requires_grad_(True)
        self.requests = Requests()
        self.estimator = estimator
        self._drawn: tuple[torch.Tensor, float] | None = None  # the estimator's directions
        # Caches, filled by whichever computation gets there first (`_evaluate` may fill some).
        self._first: dict[tuple[int, int], torch.Tensor] = {}  # (out, i) -> (N,)
        self._second: dict[tuple[int, int, int], torch.Tensor] = {}  # (out, i <= j) -> (N,)
        self._laplacians: dict[int, torch.Tensor] = {}  # out -> (N,)
        self._higher: dict[tuple[int, int, int], torch.Tensor] = {}  # (out, i, order >= 3)
        self.values = self._evaluate()
        self.input_names = tuple(input_names or [f"x{i}" for i in range(x.shape[1])])
        self.output_names = tuple(output_names or [f"u{i}" for i in range(self.values.shape[1])])
        _check_names("input", self.input_names, x.shape[1])
        _check_names("output", self.output_names, self.values.shape[1])

    @property
    def dim(self) -> int:
        return self.x.shape[1]

    # ---- what a residual asks for -------------------------------------------------------

    def __call__(self, out: str | int | None = None) -> torch.Tensor:
        """(N,) value of one output."""
        return self.values[:, self._output(out)]

    def d(self, var: str | int, out: str | int | None = None, *, order: int = 1) -> torch.Tensor:
        """(N,) derivative d^order u / d var^order of one output (order 1 by default; 2 is
        `d2(var)`; any int >= 1, e.g. order=3 for the u_xxx of KdV)."""
        order = check_order(order)
        k, i = self._output(out), self._input(var)
        if order == 2:
            self.requests.diagonal.add(i)
            return self._second_derivative(k, i, i)
        if order >= 3:
            self.requests.higher.add((i, order))
            return self._higher_derivative(k, i, order)
        self.requests.first.add(i)
        return self._first_derivative(k, i)

    def d2(self, var: str | int, var2: str | int | None = None, out: str | int | None = None):
        """(N,) second derivative d²u/d var d var2 (var2 defaults to var: the diagonal term).
        The output is named by keyword, `out=`: a second positional name is a coordinate."""
        if var2 in self.output_names and var2 not in self.input_names:
            raise ConfigError(
                f"u.d2({var!r}, {var2!r}): {var2!r} is an output, not a coordinate; the second "
                f"derivative of {var2!r} is u.d2({var!r}, out={var2!r}) (a second positional name "
                f"is the mixed derivative's other coordinate: u.d2({var!r}, "
                f"{self.input_names[-1]!r}, out={var2!r}))"
            )
        k, i = self._output(out), self._input(var)
        j = i if var2 is None else self._input(var2)
        if i == j:
            self.requests.diagonal.add(i)
        else:
            self.requests.mixed.add((min(i, j), max(i, j)))
        return self._second_derivative(k, i, j)

    def grad(self, out: str | int | None = None) -> torch.Tensor:
        """(N, d) gradient of one output."""
        k = self._output(out)
        self.requests.first.update(range(self.dim))
        return torch.stack([self._first_derivative(k, i) for i in range(self.dim)], dim=1)

    def hessian_diag(self, out: str | int | None = None) -> torch.Tensor:
        """(N, d) diagonal second derivatives of one output: one backward per dimension."""
        k = self._output(out)
        self.requests.diagonal.update(range(self.dim))
        return self._diagonal(k)

    def laplacian(self, out: str | int | None = None) -> torch.Tensor:
        """(N,) Laplacian of one output, from the diagonal alone; with an estimator, its
        unbiased estimate from the estimator's random directions. Over `laplacian_inputs`
        when they are set (a SpaceTime's space), else over every input."""
        if self.laplacian_inputs is not None and self.estimator is None:
            return self._partial_laplacian(out, self.laplacian_inputs)
        k = self._output(out)
        self.requests.laplacian = True
        if k not in self._laplacians:
            if self.estimator is None:
                self._laplacians[k] = self._diagonal(k).sum(dim=1)
            else:
                self._laplacians[k] = self._estimated_laplacian(k)
        return self._laplacians[k]

    def _partial_laplacian(self, out: str | int | None, inputs: tuple[int, ...]) -> torch.Tensor:
        """(N,) Σ d²u/dx_i² over the inputs i given, from diagonal second derivatives."""
        return torch.stack([self.d2(i, out=out) for i in inputs], dim=1).sum(dim=1)

    def hessian(self, out: str | int | None = None) -> torch.Tensor:
        """(N, d, d) full Hessian of one output, for PDEs with mixed terms."""
        k = self._output(out)
        self.requests.diagonal.update(range(self.dim))
        self.requests.mixed.update((i, j) for i in range(self.dim) for j in range(i + 1, self.dim))
        rows = [
            torch.stack([self._second_derivative(k, i, j) for j in range(self.dim)], dim=1)
            for i in range(self.dim)
        ]
        return torch.stack(rows, dim=1)

    def derivative(self, expression: torch.Tensor, var: str | int) -> torch.Tensor:
        """(N,) d(expression)/d var for an (N,) expression built from this field's values and
        derivatives, e.g. the flux k(u) u_x of ∂x(k(u) u_x), or u² in ∂x(u²).

        Differentiates through the points by autograd, whichever engine made the field: a
        residual that asks for it runs on autograd at that site (a Taylor pass gives numbers,
        not functions of the points, so it could not be differentiated further).
        """
        i = self._input(var)
        self.requests.expression = True
        if not (isinstance(expression, torch.Tensor) and expression.shape == self.x.shape[:1]):
            raise ValueError(
                f"derivative() takes an (N,) = ({self.x.shape[0]},) tensor built from this "
                f"field, got {type(expression).__name__} "
                f"{tuple(getattr(expression, 'shape', ()))}"
            )
        if not expression.requires_grad or not self._depends_on_points():
            raise ValueError(
                "derivative() needs an expression computed from this field's outputs on a "
                "field that differentiates through its points; this field holds planned "
                "Taylor values (the engine switches the site to autograd from the next step on)"
            )
        return _backward(expression, self.x)[:, i]

    def _depends_on_points(self) -> bool:
        return True

    # ---- how derivatives are computed: nested reverse mode (subclasses fill caches first) ---

    def _evaluate(self) -> torch.Tensor:
        values = self.f(self.x)
        if values.ndim == 1:
            values = values.unsqueeze(1)
        if values.ndim != 2 or values.shape[0] != self.x.shape[0]:
            raise ValueError(
                f"the model must map (N, d) points to (N, m) outputs; "
                f"got {tuple(values.shape)} from input {tuple(self.x.shape)}"
            )
        return values

    def _first_derivative(self, k: int, i: int) -> torch.Tensor:
        if (k, i) not in self._first:
            gradient = _backward(self.values[:, k], self.x)  # every input in one pass
            for j in range(self.dim):
                self._first[(k, j)] = gradient[:, j]
        return self._first[(k, i)]

    def _second_derivative(self, k: int, i: int, j: int, keep_row: bool = True) -> torch.Tensor:
        key = (k, min(i, j), max(i, j))
        if key not in self._second:
            row = _backward(self._first_derivative(k, i), self.x)  # row i of the Hessian
            if not keep_row:  # keep one column, not the (N, d) row: d rows would be N d² numbers
                self._second[key] = row[:, j].clone()
                return self._second[key]
            for other in range(self.dim):
                self._second.setdefault((k, min(i, other), max(i, other)), row[:, other])
        return self._second[key]

    def _higher_derivative(self, k: int, i: int, order: int) -> torch.Tensor:
        """(N,) d^order u_k / dx_i^order, order >= 3: one backward of the batch sum of the
        derivative one order lower (cached, like it), keeping column i."""
        key = (k, i, order)
        if key not in self._higher:
            lower = (
                self._second_derivative(k, i, i)
                if order == 3
                else self._higher_derivative(k, i, order - 1)
            )
            self._higher[key] = _backward(lower, self.x)[:, i]
        return self._higher[key]

    def _estimated_laplacian(self, k: int) -> torch.Tensor:
        directions, scale = self._directions()
        gradient = torch.stack([self._first_derivative(k, i) for i in range(self.dim)], dim=1)
        return scale * quadratic_forms_sum(gradient, self.x, directions)

    def _directions(self) -> tuple[torch.Tensor, float]:
        """The estimator's directions for these points, drawn on first use, then kept."""
        if self._drawn is None:
            self._drawn = self.estimator.draw(self.x, self.laplacian_inputs)
        return self._drawn

    def _diagonal(self, k: int) -> torch.Tensor:
        """(N, d) d²u_k/dx_j² for every j, one backward each, holding only the diagonal."""
        keep_rows = self.dim <= 8  # small d: rows are cheap and serve later mixed requests
        return torch.stack(
            [self._second_derivative(k, j, j, keep_rows) for j in range(self.dim)], dim=1
        )

    def _output(self, out: str | int | None) -> int:
        if out is None:
            if len(self.output_names) != 1:
                first = self.output_names[0]
                raise ConfigError(
                    f"this field has {len(self.output_names)} outputs {list(self.output_names)}; "
                    f"name the one you want: u({first!r}), u.d('x', {first!r}), "
                    f"u.d2('x', out={first!r}), u.laplacian({first!r}) in a residual, "
                    f"out={first!r} in a condition "
                    f"(Dirichlet(on=..., value=..., out={first!r}))"
                )
            return 0
        return _index("output", out, self.output_names)

    def _input(self, var: str | int) -> int:
        return _index("input", var, self.input_names)


def _backward(y: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """(N, d) gradient of sum(y) w.r.t. x, kept differentiable; zeros where y ignores x."""
    if not y.requires_grad:
        return torch.zeros_like(x)
    (grad,) = torch.autograd.grad(y.sum(), x, create_graph=True, allow_unused=True)
    return torch.zeros_like(x) if grad is None else grad


def quadratic_forms_sum(
    gradient: torch.Tensor, x: torch.Tensor, directions: torch.Tensor
) -> torch.Tensor:
    """(N,) Σ_i v_i^T H v_i per point, from the (N, d) gradient of a pointwise function at x
    (built with create_graph=True): by the batch sum trick, one backward of Σ_n ∇u(x_n)·v_n
    gives every point's H v_n, one pass per direction.

    directions: (N, s, d) floats, or (N, s) input indices standing for unit vectors.
    """
    total = torch.zeros_like(gradient[:, 0])
    for v in directions.unbind(dim=1):
        if v.is_floating_point():
            hessian_v = _backward((gradient * v).sum(dim=1), x)
            total = total + (hessian_v * v).sum(dim=1)
        else:
            column = v[:, None]
            hessian_v = _backward(gradient.gather(1, column)[:, 0], x)
            total = total + hessian_v.gather(1, column)[:, 0]
    return total


def _index(kind: str, key: str | int, names: tuple[str, ...]) -> int:
    if isinstance(key, int):
        if not 0 <= key < len(names):
            raise IndexOutOfRangeError(
                f"{kind} index {key} out of range for {len(names)} {kind}s {list(names)}"
            )
        return key
    if key not in names:
        raise UnknownNameError(f"unknown {kind} {key!r}; the {kind}s are {list(names)}")
    return names.index(key)


def _check_names(kind: str, names: tuple[str, ...], expected: int) -> None:
    if len(names) != expected:
        raise ValueError(f"{expected} {kind} names needed, got {list(names)}")
