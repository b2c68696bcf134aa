"""Unknown coefficients of an inverse problem: trainable scalars learned with the network.

A problem declares them with initial guesses and reads them in its residual:

    class InversePoisson(Problem):
        unknowns = {"kappa": 1.0}

        def residual(self, x, u):
            return -self.unknown("kappa") * u.laplacian() - source(x)

`pinn.fit` attaches them (`Problem.attach_unknowns`: one 0-d parameter each, in the model's
dtype and on its device), trains them with the network's parameters, saves them in the
checkpoint and logs their values in the history; `train(cfg)` also writes them into
metrics.json and takes other initial guesses from the config (`problem.unknowns.<name>`).
"""

from __future__ import annotations

from collections.abc import Mapping

import torch
from torch import nn

from pinn.errors import CheckpointError, ConfigError, is_finite_number
from pinn.problem.columns import BOOKKEEPING


class Unknowns(nn.Module):
    """One trainable 0-d parameter per unknown coefficient, created at its initial guess.

    Args:
        initial: {name: initial guess}; names are Python identifiers (they become history
            columns and config keys), guesses finite numbers.
        dtype, device: where the parameters live (the model's dtype and device).
        owner: who declared them, for the error messages (e.g. "InversePoisson").
    """

    def __init__(
        self,
        initial: Mapping[str, float],
        dtype: torch.dtype = torch.float64,
        device: str | torch.device = "cpu",
        owner: str = "the problem",
    ):
        super().__init__()
        check_declaration(initial, owner)
        self.owner = owner
        self.names = tuple(initial)
        # A list, not an nn.ParameterDict: that refuses names such as "values" or "keys".
        self.scalars = nn.ParameterList(
            nn.Parameter(torch.tensor(float(guess), dtype=dtype, device=device))
            for guess in initial.values()
        )
        # Whether the loss was checked to depend on each (`pinn.problem.loss`), once.
        self.use_checked = False

    def __getitem__(self, name: str) -> torch.Tensor:
        """The 0-d parameter `name`: differentiable, so a residual can use it in a loss."""
        if name not in self.names:
            raise undeclared(name, self.names, self.owner)
        return self.scalars[self.names.index(name)]

    def values(self) -> dict[str, float]:
        """{name: current value} as Python floats, for the history and metrics.json."""
        return {name: p.item() for name, p in zip(self.names, self.scalars)}

    def state(self) -> dict[str, torch.Tensor]:
        """{name: 0-d CPU tensor}: plain data for a checkpoint."""
        return {name: p.detach().cpu().clone() for name, p in zip(self.names, self.scalars)}

    def load_state(self, state: Mapping[str, torch.Tensor]) -> None:
        """Set every unknown to its value in `state` (what `state()` returned), names checked."""
        if set(state) != set(self.names):
            raise CheckpointError(
                f"the checkpoint's unknowns {sorted(state)} are not this problem's "
                f"{sorted(self.names)}: resume with the problem the run was started with"
            )
        with torch.no_grad():
            for name, parameter in zip(self.names, self.scalars):
                parameter.copy_(state[name])


def undeclared(name: str, names: tuple[str, ...] | list[str], owner: str) -> ConfigError:
    """The error for asking an unknown `name` that `owner` does not declare."""
    return ConfigError(
        f"{owner} has no unknown named {name!r}; its unknowns are {list(names)}. "
        f"Declare it with its initial guess: unknowns = {{{name!r}: 1.0}}"
    )


def check_declaration(initial: Mapping[str, float], owner: str) -> None:
    """Refuse unknowns that are not {identifier: finite number}, or take a reserved name."""
    if not isinstance(initial, Mapping):
        raise ConfigError(
            f"{owner}.unknowns must map names to initial guesses, e.g. {{'kappa': 1.0}}, "
            f"got {initial!r}"
        )
    for name, guess in initial.items():
        if not (isinstance(name, str) and name.isidentifier()) or name in BOOKKEEPING:
            raise ConfigError(
                f"{owner}: unknown name {name!r} must be a Python identifier other than "
                f"{', '.join(BOOKKEEPING)} (it names a history column and a config key)"
            )
        if not is_finite_number(guess):
            raise ConfigError(
                f"{owner}: the initial guess of unknown {name!r} must be a finite number, "
                f"got {guess!r}"
            )


def initial_guesses(
    declared: Mapping[str, float], overrides: Mapping[str, float] | None, owner: str
) -> dict[str, float]:
    """The declared guesses with `overrides` (from `problem.unknowns` in the config) applied."""
    check_declaration(declared, owner)
    overrides = dict(overrides or {})
    extra = sorted(set(overrides) - set(declared))
    if extra:
        raise ConfigError(
            f"problem.unknowns names {extra}, which {owner} does not declare; its "
            f"unknowns are {list(declared)} (declare them in the class: unknowns = {{...}})"
        )
    for name, guess in overrides.items():
        if not is_finite_number(guess):
            raise ConfigError(f"problem.unknowns.{name} must be a finite number, got {guess!r}")
    return {**declared, **overrides}
