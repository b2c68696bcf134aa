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

An inverse problem declares unknown coefficients with initial guesses, `unknowns = {"kappa":
1.0}` (`pinn.unknowns`), reads them in its residual with `self.unknown("kappa")`, and feeds
samples of u into the loss with an `Observations` condition (`pinn.observations`).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence

import torch

from pinn.conditions import Condition
from pinn.domain import Box
from pinn.errors import ConfigError
from pinn.field import Field
from pinn.unknowns import Unknowns, initial_guesses, undeclared


class Problem:
    """Base class of a PDE problem. Subclasses set the class attributes and `residual`.

    Attributes:
        domain: the `Box` the PDE holds on; its coordinate names name the inputs.
        outputs: names of the network's outputs (default one output, "u").
        conditions: boundary and initial conditions (`pinn.conditions`), each adding one
            named loss term.
        unknowns: {name: initial guess} of coefficients to learn with the network (an
            inverse problem); the residual reads each with `self.unknown(name)`.
        attached_unknowns: their parameters once `attach_unknowns` made them, else None.
    """

    domain: Box
    outputs: tuple[str, ...] = ("u",)
    conditions: Sequence[Condition] = ()
    unknowns: Mapping[str, float] = {}
    attached_unknowns: Unknowns | None = None

    @property
    def inputs(self) -> tuple[str, ...]:
        return self.domain.names

    def residual(self, x: torch.Tensor, u: Field) -> torch.Tensor | dict[str, torch.Tensor]:
        """(N,) PDE residual at the (N, d) interior points x, zero where the PDE holds.

        Return a dict of (N,) tensors for a system of equations; each key becomes a loss term.
        """
        raise NotImplementedError(f"{type(self).__name__} must define residual(self, x, u)")

    def hard_constraint(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor] | None:
        """(g, B) at the (N, d) points x, each (N,) or (N, m), or None (the default): none.

        When given, the network's output N(x) becomes u = g(x) + B(x) N(x) (`pinn.constraints`):
        with B = 0 on a boundary where u = g, that Dirichlet condition holds exactly and needs
        no loss term. g and B must be pointwise functions of x built from torch operations.
        """
        return None

    def exact(self, x: torch.Tensor) -> torch.Tensor | None:
        """(N,) or (N, m) exact solution at the (N, d) points, or None when unknown."""
        return None

    @property
    def has_exact(self) -> bool:
        return type(self).exact is not Problem.exact

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
