"""What a PDE module declares: a `Problem` (domain, residual, conditions, exact solution).

A user writes, in `problems/<name>.py`:

    class Poisson(Problem):
        domain = Box([0, 0], [1, 1])
        conditions = [Dirichlet(value=0.0)]

        def residual(self, x, u):
            return u.laplacian() + torch.sin(pi * x[:, 0]) * torch.sin(pi * x[:, 1])

        def exact(self, x):
            return torch.sin(pi * x[:, 0]) * torch.sin(pi * x[:, 1]) / (2 * pi**2)

and `conf/problem/<name>.yaml` naming the class in `target`. The conditions (Dirichlet, Neumann,
Robin, Periodic, Initial) live in `pinn.conditions`.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence

import torch

from pinn.conditions import Condition
from pinn.domain import Box
from pinn.errors import ConfigError
from pinn.field import Field


class Problem:
    """Base class of a PDE problem. Subclasses set the class attributes and `residual`.

    Attributes:
        domain: the `Box` the PDE holds on; its coordinate names name the inputs.
        outputs: names of the network's outputs (default one output, "u").
        conditions: boundary and initial conditions (`pinn.conditions`), each adding one
            named loss term.
    """

    domain: Box
    outputs: tuple[str, ...] = ("u",)
    conditions: Sequence[Condition] = ()

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
