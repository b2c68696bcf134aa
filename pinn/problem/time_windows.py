"""A time-dependent problem cut into time windows, for time-marching (`windows.count`).

    window = window_problem(problem, 0.25, 0.5, (points, values, None))

is the problem on [0.25, 0.5] (same residual, hard constraint and outputs) whose initial value
is the previous window's solution: a term "window_start", u = values at the (M, d) `points` on
t = 0.25 (and du/dt = rates, `(points, values, rates)`, for a problem second order in time: one
that declares an `Initial(rate=...)`). The problem's own conditions hold where they still
apply: those on space's parts throughout, `Initial` ones and those on `<time>_min` in the first
window only, those on `<time>_max` in the last only, observations at their points inside the
window.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence

import torch

from pinn.errors import ConfigError
from pinn.geometry import SpaceTime
from pinn.problem.boundary_points import boundary_counts, used_parts
from pinn.problem.conditions import Condition, Initial, autograd_fields
from pinn.problem.observations import Observations
from pinn.problem.problem import Problem

START_TERM = "window_start"


class TimeWindow(Problem):
    """`base` on a window of its time interval (`window_problem` makes one)."""

    def __init__(self, base: Problem, domain: SpaceTime, conditions: Sequence[Condition]):
        self.base, self.domain, self.conditions = base, domain, tuple(conditions)
        self.outputs = base.outputs

    def __repr__(self) -> str:
        return f"{type(self.base).__name__} on t in [{self.domain.start}, {self.domain.end}]"

    def residual(self, x, u):
        return self.base.residual(x, u)

    def hard_constraint(self, x):
        return self.base.hard_constraint(x)


def window_problem(
    problem: Problem,
    start: float,
    end: float,
    start_values: tuple[torch.Tensor, torch.Tensor, torch.Tensor | None] | None = None,
) -> TimeWindow:
    """`problem` on [start, end]; `start_values` ((M, d) points on t = start, (M, m) values,
    (M, m) du/dt or None) is the previous window's solution there (None for the first
    window)."""
    domain = check_windowable(problem)
    window = domain.window(start, end)
    kept = [c for c in (_in_window(c, window, domain) for c in problem.conditions) if c]
    if start_values is not None:
        kept.append(WindowStart(*start_values, axis=domain.dim - 1))
    return TimeWindow(problem, window, kept)


def window_counts(
    window: TimeWindow, n_boundary: int, aimed: Mapping[str, int | float]
) -> dict[str, int]:
    """`boundary_counts` for one window: `aimed` (checked on the whole problem) less the parts
    no condition of this window reads (the initial face, after the first window)."""
    used = used_parts(window)
    return boundary_counts(window, n_boundary, {p: v for p, v in aimed.items() if p in used})


def needs_rate(problem: Problem) -> bool:
    """Whether a window's start must match du/dt too: the problem gives it at its initial
    time (an `Initial(rate=...)`), so it is second order in time."""
    return any(isinstance(c, Initial) and c.rate is not None for c in problem.conditions)


class WindowStart(Condition):
    """u = values (and du/dt = rates) at (M, d) points on a window's start: the previous
    window's solution there; term "window_start". The network is evaluated there through
    `field_at` (site "window_start")."""

    name = START_TERM

    def __init__(self, points, values, rates=None, axis: int = -1):
        self.points, self.values, self.rates, self.axis = points, values, rates, axis

    def boundary_parts(self, part_names: tuple[str, ...]) -> tuple[str, ...]:
        """None: the start values hold at their own points."""
        return ()

    def residual(self, u, boundary, field_at=None) -> torch.Tensor:
        """(M m,) u - values, then (M m,) du/dt - rates where rates are given."""
        field = (field_at or autograd_fields(u))(self.points, START_TERM)
        mismatch = [(field.values - self.values).reshape(-1)]
        if self.rates is not None:
            rates = torch.stack([field.d(self.axis, k) for k in range(self.values.shape[1])], 1)
            mismatch.append((rates - self.rates).reshape(-1))
        return torch.cat(mismatch)


def check_windowable(problem: Problem) -> SpaceTime:
    """The problem's SpaceTime domain; refuses a problem time-marching cannot split."""
    name = type(problem).__name__
    if not isinstance(problem.domain, SpaceTime):
        raise ConfigError(
            f"windows.count > 1 marches in time, and {name}'s domain is a "
            f"{type(problem.domain).__name__}, not a SpaceTime: set windows.count=0"
        )
    if problem.unknowns:
        raise ConfigError(
            f"windows.count > 1 trains one network per time window, and {name} declares "
            f"unknowns ({', '.join(problem.unknowns)}) that all windows share: set windows.count=0"
        )
    return problem.domain


def _in_window(condition: Condition, window: SpaceTime, whole: SpaceTime) -> Condition | None:
    """The part of `condition` that holds in `window` (None: none of it)."""
    first = window.start == whole.start
    if isinstance(condition, Initial):
        return condition if first else None
    if isinstance(condition, Observations):
        time = condition.points[:, -1]
        inside = (time >= window.start) & (time <= window.end)
        if not inside.any():
            return None
        kept = copy.copy(condition)
        kept.points, kept.values = condition.points[inside], condition.values[inside]
        return kept
    on = getattr(condition, "on", None)
    if isinstance(on, str) and on != "boundary":
        on = [on]
    if not isinstance(on, (list, tuple)):
        return condition  # all of the boundary, a predicate, or a condition of one's own
    faces = [f"{window.time}_{side}" for side in window.time_faces]
    absent = {f"{window.time}_min", f"{window.time}_max"} - set(faces)
    parts = [part for part in on if part not in absent]
    if not parts:
        return None
    kept = copy.copy(condition)
    kept.on = parts
    return kept
