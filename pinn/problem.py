"""What a PDE module declares: a `Problem` (domain, residual, conditions, exact solution).

A user writes, in `problems/<name>.py`:

    class Poisson(Problem):
        domain = Box([0, 0], [1, 1])
        conditions = [Dirichlet(value=0.0)]

        def residual(self, x, u):
            return u.laplacian() + torch.sin(pi * x[:, 0]) * torch.sin(pi * x[:, 1])

        def exact(self, x):
            return torch.sin(pi * x[:, 0]) * torch.sin(pi * x[:, 1]) / (2 * pi**2)

and `conf/problem/<name>.yaml` naming the class in `target`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence

import torch

from pinn.domain import BoundaryPoints, Box
from pinn.errors import ConfigError
from pinn.field import Field

# A condition's value: a constant, or a function of the (N, d) points returning (N,).
Value = float | Callable[[torch.Tensor], torch.Tensor]


class Dirichlet:
    """u = value on the named faces ("boundary" means every face).

    Args:
        on: "boundary", one face name ("x_min") or a list of face names.
        value: a constant or a function of the (N, d) boundary points returning (N,).
        out: which output the condition holds for (needed only with several outputs).
        name: the loss term's name (default "dirichlet").
    """

    def __init__(
        self,
        on: str | Sequence[str] = "boundary",
        value: Value = 0.0,
        out: str | int | None = None,
        name: str = "dirichlet",
    ):
        self.faces = on
        self.value = value
        self.out = out
        self.name = name

    def residual(self, u: Field, boundary: BoundaryPoints) -> torch.Tensor:
        """(n,) u - value at the boundary points on this condition's faces."""
        mask = _face_mask(self.faces, boundary)
        target = evaluate_value(self.value, boundary.points[mask])
        return u(self.out)[mask] - target


def evaluate_value(value: Value, points: torch.Tensor) -> torch.Tensor:
    """(n,) the value of a condition at (n, d) points, from a constant or a function."""
    if callable(value):
        result = value(points)
        if result.shape != points.shape[:1]:
            raise ValueError(
                f"a condition's value function must return shape ({points.shape[0]},), "
                f"got {tuple(result.shape)}"
            )
        return result
    return torch.full(points.shape[:1], float(value), dtype=points.dtype, device=points.device)


def _face_mask(faces: str | Sequence[str], boundary: BoundaryPoints) -> torch.Tensor:
    if faces == "boundary":
        return torch.ones_like(boundary.face, dtype=torch.bool)
    return boundary.on(faces)


class Problem:
    """Base class of a PDE problem. Subclasses set the class attributes and `residual`.

    Attributes:
        domain: the `Box` the PDE holds on; its coordinate names name the inputs.
        outputs: names of the network's outputs (default one output, "u").
        conditions: boundary conditions, each adding one named loss term.
    """

    domain: Box
    outputs: tuple[str, ...] = ("u",)
    conditions: Sequence[Dirichlet] = ()

    @property
    def inputs(self) -> tuple[str, ...]:
        return self.domain.names

    def residual(self, x: torch.Tensor, u: Field) -> torch.Tensor | dict[str, torch.Tensor]:
        """(N,) PDE residual at the (N, d) interior points x, zero where the PDE holds.

        Return a dict of (N,) tensors for a system of equations; each key becomes a loss term.
        """
        raise NotImplementedError(f"{type(self).__name__} must define residual(self, x, u)")

    def exact(self, x: torch.Tensor) -> torch.Tensor | None:
        """(N,) or (N, m) exact solution at the (N, d) points, or None when unknown."""
        return None

    @property
    def has_exact(self) -> bool:
        return type(self).exact is not Problem.exact


def load_problem(target: str, params: dict | None = None) -> Problem:
    """Import `package.module.ClassName` and construct it with `params` as keyword arguments."""
    module_name, _, class_name = target.rpartition(".")
    if not module_name:
        raise ConfigError(f"problem.target={target!r} must look like 'problems.poisson.Poisson'")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        raise ConfigError(
            f"problem.target={target!r}: cannot import module {module_name!r} ({error}). "
            "Put the module in problems/ or on PYTHONPATH."
        ) from error
    cls = getattr(module, class_name, None)
    if not (isinstance(cls, type) and issubclass(cls, Problem)):
        raise ConfigError(
            f"problem.target={target!r}: {module_name} has no Problem subclass named {class_name!r}"
        )
    return cls(**(params or {}))
