"""`windows.count = K`: train a time-dependent problem window by window (time-marching).

The time interval is cut into K equal windows. Window k is the problem on its interval
(`pinn.problem.time_windows`): its own network (pinn's networks see the window's time as
[-1, 1]), trained by every phase of `trainer.phases`, whose initial value is the previous
window's solution on `windows.points` points of the window's start (the term
"window_start", weighted `windows.weight`). With `windows.warm_start` each network starts
from the previous one's parameters. The run's model is the `TimeWindows` of the K networks.

In the run directory: history.csv holds every window's rows (a `window` column, steps and
times counted on over the windows); checkpoint.pt is the window in training (its number under
"window"); windows/<k>.pt holds window k's trained network and history once it is done, so
`resume=` continues at the window (and step) where the run stopped.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from pinn.derivatives.functions import gradient
from pinn.errors import ConfigError, require_positive
from pinn.nn.placement import placement
from pinn.nn.time_windows import TimeWindows
from pinn.problem.columns import WINDOW
from pinn.problem.problem import Problem
from pinn.problem.time_windows import START_TERM, check_windowable, needs_rate, window_problem
from pinn.settings import setting
from pinn.training.callbacks import Callback
from pinn.training.checkpoints import load_checkpoint, save_checkpoint
from pinn.training.state import FitResult

WINDOWS_DIR = "windows"


@dataclass
class WindowSettings:
    """The `windows` block of the config: count (0 or 1: no windows), weight, points,
    warm_start."""

    count: int = setting(
        0, "equal time windows, one network each; 0 or 1: one network for all times"
    )
    weight: float = setting(
        100.0, 'loss weight of the term "window_start": u = the previous window\'s u there'
    )
    points: int = setting(
        1000, "points on each window's start where it takes the previous window's u"
    )
    warm_start: bool = setting(
        True, "each window's network starts from the previous one's parameters"
    )

    def __post_init__(self):
        if isinstance(self.count, bool) or not isinstance(self.count, int) or self.count < 0:
            raise ConfigError(f"windows.count must be an integer >= 0, got {self.count!r}")
        require_positive("windows.weight", self.weight)
        require_positive("windows.points", self.points)

    @property
    def on(self) -> bool:
        return self.count > 1


# fit for one window: (its problem, model, weights, validator, resume state or None,
# checkpoint extra, callbacks) -> its result.
FitWindow = Callable[..., FitResult]


def march(
    problem: Problem,
    settings: WindowSettings,
    build: Callable[[Problem], nn.Module],
    fit_window: FitWindow,
    weights: dict[str, float],
    validator,
    run_dir: Path,
    resume: dict[str, Any] | None,
    resume_dir: Path | None,
    seed: int,
    sampler: str,
    writes: bool,
    callbacks: Sequence[Callback] = (),
) -> tuple[FitResult, TimeWindows]:
    """Train window after window; returns the whole run's result and model.

    `build(window problem)` makes a window's network; `fit_window(...)` trains it (the
    run's `fit` with its sampler, checkpoint and engine). `resume`: the checkpoint of a run
    stopped in window resume["window"], whose finished windows lie in `resume_dir`/windows/.
    Only where `writes` (rank 0) are the windows' files written. `callbacks` (the run's
    loggers) see one run: every window's rows, steps counted on, one `on_end`.
    """
    domain = check_windowable(problem)
    edges = window_edges(domain, settings.count)
    rate = needs_rate(problem)  # second order in time: the start's du/dt too
    resumed_window = -1 if resume is None else int(resume.get("window", 0))
    models: list[nn.Module] = []
    results: list[FitResult] = []
    history = WindowHistory(callbacks)
    for k in range(settings.count):
        start_values = None
        if k > 0:
            start_values = _start_values(
                domain, models[-1], edges[k], settings.points, seed + k, sampler, rate
            )
        window = window_problem(problem, edges[k], edges[k + 1], start_values)
        model = build(window)
        if models and settings.warm_start:
            _copy_parameters(models[-1], model)
        if k < resumed_window:
            result = _load_window(resume_dir, k, model)
        else:
            history.begin(k, results)
            result = fit_window(
                window,
                model,
                _window_weights(weights, problem, window, settings.weight),
                _SoFar(validator, models, edges, domain.dim - 1) if validator else None,
                resume if k == resumed_window else None,
                {"window": k},
                [history],
            )
        if writes:
            _save_window(run_dir, k, model, result)
        models.append(model)
        results.append(result)
    whole = TimeWindows(models, edges, domain.dim - 1)
    result = _joined(results)
    if writes:  # callbacks run on rank 0 only
        history.finish(result)
    return result, whole


def window_edges(domain, count: int) -> list[float]:
    """count + 1 times cutting the domain's interval into equal windows, its ends exact."""
    edges = torch.linspace(domain.start, domain.end, count + 1, dtype=torch.float64).tolist()
    edges[0], edges[-1] = domain.start, domain.end
    return edges


def trained_windows(
    problem: Problem, count: int, build: Callable[[Problem], nn.Module], run_dir: Path
) -> TimeWindows:
    """The model of a finished time-marching run in `run_dir`, from its windows/<k>.pt."""
    domain = check_windowable(problem)
    edges = window_edges(domain, count)
    models = []
    for k in range(count):
        model = build(window_problem(problem, edges[k], edges[k + 1]))
        _load_window(run_dir, k, model)
        models.append(model)
    return TimeWindows(models, edges, domain.dim - 1)


class WindowHistory(Callback):
    """Shows the run's own callbacks (`followers`: its loggers, history.csv's among them) one
    run: every window's rows so far (`window` column; steps and time_s counted on from the
    windows before), checkpoint steps counted on, `on_end` once, after the last window
    (`finish`)."""

    def __init__(self, followers: Sequence[Callback] = ()):
        self.followers = list(followers)
        self.before: list[dict[str, Any]] = []
        self.window, self.step0, self.time0 = 0, 0, 0.0
        self.last: _JoinedState | None = None  # the last window's end, as the followers see it

    def begin(self, window: int, done: Sequence[FitResult]) -> None:
        joined = _joined(done)
        self.before, self.window, self.step0 = joined.history, window, joined.steps
        self.time0 = self.before[-1].get("time_s", 0.0) if self.before else 0.0

    def on_row(self, row: dict[str, Any], state) -> None:
        joined = self._joined_state(state)
        for follower in self.followers:
            follower.on_row(dict(joined.history[-1]), joined)

    def on_checkpoint(self, path: Path, step: int, state) -> None:
        for follower in self.followers:
            follower.on_checkpoint(path, step + self.step0, self._joined_state(state))

    def on_phase(self, old: str, new: str, state) -> None:
        for follower in self.followers:
            follower.on_phase(old, new, self._joined_state(state))

    def on_end(self, result: FitResult, state) -> None:
        self.last = self._joined_state(state)

    def finish(self, result: FitResult) -> None:
        """The whole run's end: each follower's `on_end` with the joined `result`."""
        for follower in self.followers:
            follower.on_end(result, self.last)

    def _joined_state(self, state) -> _JoinedState:
        rows = [_shifted(r, self.window, self.step0, self.time0) for r in state.history]
        return _JoinedState(state, self.before + rows, state.step + self.step0)


class _JoinedState:
    """A window's run state as the whole run's: `history` every window's rows so far, `step`
    counted on over the windows; everything else the window's."""

    def __init__(self, state, history: list[dict[str, Any]], step: int):
        self._state, self.history, self.step = state, history, step

    def __getattr__(self, name: str) -> Any:
        return getattr(self._state, name)


def _shifted(row: dict[str, Any], window: int, step0: int, time0: float) -> dict[str, Any]:
    shifted = {WINDOW: window, **row, "step": row["step"] + step0}
    if "time_s" in row:
        shifted["time_s"] = row["time_s"] + time0
    return shifted


def _joined(results: Sequence[FitResult]) -> FitResult:
    """One result of consecutive windows: their rows in turn, steps summed, the last loss."""
    rows, steps, time0 = [], 0, 0.0
    for window, result in enumerate(results):
        rows += [_shifted(row, window, steps, time0) for row in result.history]
        steps += result.steps
        time0 = rows[-1].get("time_s", time0) if rows else time0
    final = results[-1].final_loss if results else float("nan")
    return FitResult(history=rows, steps=steps, final_loss=final)


class _SoFar:
    """Validates a window's network together with the finished windows before it: the error
    over the whole domain of the solution as it stands (the window's network from its start
    on)."""

    def __init__(self, validator, done: list[nn.Module], edges: list[float], axis: int):
        self.validator, self.done, self.axis = validator, list(done), axis
        self.edges = [*edges[: len(done) + 1], edges[-1]]

    def errors(self, model: nn.Module) -> dict[str, float]:
        return self.validator.errors(TimeWindows([*self.done, model], self.edges, self.axis))


def _start_values(
    domain, previous: nn.Module, time: float, count: int, seed: int, sampler: str, rate: bool
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
    """(M, d) points on the window's start, the previous window's (M, m) values there and,
    with `rate`, its (M, m) time derivatives (else None); none of them carries a graph."""
    generator = torch.Generator().manual_seed(seed)
    space = domain.space.interior_float64(count, generator, sampler)
    points = torch.cat([space, torch.full((count, 1), time, dtype=space.dtype)], 1)
    dtype, device = placement(previous)
    points = points.to(dtype=dtype, device=device)
    with torch.no_grad():
        values = previous(points).reshape(count, -1)
    rates = gradient(previous, points)[:, :, -1].detach() if rate else None
    return points, values, rates


def _window_weights(weights: dict[str, float], problem: Problem, window, start_weight: float):
    """The run's weights less those of conditions the window lacks, and its start's."""
    absent = {c.name for c in problem.conditions} - {c.name for c in window.conditions}
    kept = {name: w for name, w in weights.items() if name not in absent}
    if any(c.name == START_TERM for c in window.conditions):
        kept[START_TERM] = start_weight
    return kept


def _copy_parameters(source: nn.Module, target: nn.Module) -> None:
    """target's parameters := source's (buffers, such as the input box, stay the target's)."""
    with torch.no_grad():
        for mine, theirs in zip(target.parameters(), source.parameters()):
            mine.copy_(theirs)


def _window_file(run_dir: Path, k: int) -> Path:
    return run_dir / WINDOWS_DIR / f"{k}.pt"


def _save_window(run_dir: Path, k: int, model: nn.Module, result: FitResult) -> None:
    _window_file(run_dir, k).parent.mkdir(exist_ok=True)
    state = {
        "model": model.state_dict(),
        "history": result.history,
        "steps": result.steps,
        "final_loss": result.final_loss,
    }
    save_checkpoint(_window_file(run_dir, k), state)


def _load_window(run_dir: Path | None, k: int, model: nn.Module) -> FitResult:
    """Window k's trained network (into `model`) and result, from a run being resumed."""
    path = _window_file(run_dir, k) if run_dir is not None else None
    if path is None or not path.is_file():
        raise ConfigError(
            f"time window {k}'s trained network {path} is missing: a time-marching run keeps "
            "each finished window in its directory's windows/ folder; give that directory"
        )
    state = load_checkpoint(path)
    model.load_state_dict(state["model"])
    return FitResult(
        history=list(state["history"]),
        steps=int(state["steps"]),
        final_loss=float(state["final_loss"]),
    )
