"""`fit`: train a model on a problem, phase after phase: by default Adam with a decaying
learning rate, then L-BFGS (`settings.phases`).

The run's state is one `RunState` (pinn.training.state: exactly what a checkpoint holds); the
phases (pinn.training.phases, one registered class each) run in the order of
`settings.phases`, read top to bottom and call the small parts (`Parts`) at their cadence:
the loss of a batch (step_loss), history and progress (recording), checkpoints
(checkpointing), the watch on non-finite losses (divergence), the reductions over processes
(distributed).

    points  = PointSampler(problem.domain, 2000, 400, "sobol", generator)
    settings = TrainSettings(adam=AdamSettings(steps=1000), lbfgs=LBFGSSettings(steps=1000))
    result  = fit(problem, model, settings, points)

Every step's loss is checked: a NaN or inf loss stops the run with `TrainingDiverged`, and the
checkpoint on disk (written only from parameters whose loss, and every loss before, was finite)
is the last good one. So that an Adam step never waits for the device, its check is recorded
on the device and read at the next history row or checkpoint (L-BFGS checks at once); the
model in memory may by then hold the non-finite parameters that followed.

`settings.compile` compiles each step's loss with torch.compile (`pinn.training.compiling`) from the
second step on, once the first has recorded what each residual asks for.

Inside a process group (torchrun, `pinn.training.distributed`), `fit` trains data-parallel: each
process its own points, the gradients, loss and terms averaged over the processes after every
backward pass; only rank 0 writes the checkpoint and history and shows progress.

A checkpoint holds the whole state of the run (`RunState.checkpoint`), so

    result  = fit(problem, model, settings, points, resume_from="run/checkpoint.pt")

continues an interrupted run and ends bit for bit where the uninterrupted one would have.

Callbacks (`pinn.training.callbacks`) see each history row, checkpoint and change of phase,
and the end; history.csv is written by one:

    result  = fit(problem, model, settings, points, callbacks=[MyCallback()])

A problem's unknown coefficients (`Problem.unknowns`, an inverse problem) train with the
network: both optimisers get them, the checkpoint holds them and every history row has a column
with each one's current value.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import torch
from torch import nn

from pinn.derivatives import check_pointwise
from pinn.derivatives.engines import Engine
from pinn.derivatives.stochastic import LaplacianEstimator
from pinn.errors import ConfigError
from pinn.evaluation.validation import Validator
from pinn.geometry import PointSampler
from pinn.problem.conditions import on_the_time_faces
from pinn.problem.observations import Observations, outside
from pinn.problem.problem import Problem
from pinn.problem.quantities import QuantityTools, evaluate_quantities, quantity_errors
from pinn.training.callbacks import Callback, CallbackList
from pinn.training.checkpoints import Checkpoints, load_checkpoint
from pinn.training.distributed import World
from pinn.training.divergence import DivergenceWatch
from pinn.training.interrupts import Interrupts
from pinn.training.phases import PHASES, phase_class
from pinn.training.phases.parts import Parts, finish
from pinn.training.recording import Recorder
from pinn.training.settings import TrainSettings, check_refinement, unused_refinement
from pinn.training.state import FitResult, RunState
from pinn.training.step_loss import StepLoss
from pinn.training.strategies.weighting import LossWeights

log = logging.getLogger(__name__)


def fit(
    problem: Problem,
    model: nn.Module,
    settings: TrainSettings,
    points: PointSampler,
    weights: Mapping[str, float] | None = None,
    validator: Validator | None = None,
    checkpoint_path: str | Path | None = None,
    checkpoint_extra: Mapping[str, Any] | None = None,
    checkpoint_companions: Mapping[str, str] | None = None,
    engine: str = "auto",
    resume_from: Mapping[str, Any] | str | Path | None = None,
    estimator: LaplacianEstimator | None = None,
    world: World | None = None,
    callbacks: Sequence[Callback] | None = None,
) -> FitResult:
    """Train `model` on `problem` in place, by each phase of `settings.phases` in turn
    (by default Adam for `settings.adam.steps`, then L-BFGS for `settings.lbfgs.steps`).

    Args:
        weights: loss weight per term name (unnamed terms count once).
        validator: when given (`pinn.Validator`, or anything with `errors(model)`), the
            history and progress bar carry the current rel_l2. A problem's quantities of
            interest (`Problem.quantities`) that are numbers have a column each in the rows
            that validate (rank 0).
        checkpoint_path: where to write `checkpoint.pt`; None writes nothing.
        checkpoint_extra: more entries for the checkpoint (the resolved config, say).
        checkpoint_companions: files written beside the first checkpoint, {name: text} (the
            config.yaml that matches it, say): only once every check of the first step passed.
        engine: the residual engine, "auto", "taylor", "autograd" or "functorch"
            (`pinn.derivatives.engines`); the one that runs is logged once at the start.
        resume_from: a checkpoint (its path, or the dict `load_checkpoint` returns) of an
            earlier run with the same problem, model, settings, sampler and engine: training
            continues from its state and ends exactly where the uninterrupted run ends. `model`,
            `points` and the problem's unknowns are overwritten with the saved state. A
            finished run's checkpoint only restores the final model and returns its result.
        estimator: estimate every residual's `u.laplacian()` from random directions
            (`LaplacianEstimator`) instead of computing it exactly. The loss is then random, so
            a phase that needs a deterministic loss (L-BFGS's line search) is refused.
        world: the processes training this model together (`World.current()`, the default,
            reads torch.distributed's default group: one process when there is none). Every
            process calls `fit` with the same arguments but its own `points` (its generator
            seeded apart, `rank_seed`); the losses in the history are averages over the
            processes, and only rank 0 writes `checkpoint_path` and validates (the other
            ranks' rows have no rel_l2).
        callbacks: `pinn.Callback`s, called in order at each history row, checkpoint written,
            change of phase and the end (`pinn.training.callbacks`): `pinn.HistoryFile(path)`
            writes history.csv as the run goes (the rows before a resumed state included),
            `pinn.TensorBoardLogger(folder)` TensorBoard's logs. Under torchrun only rank 0
            calls them.

    A problem that declares unknowns trains them too: those attached to it (by
    `problem.attach_unknowns` or an earlier fit), or else fresh ones at their declared guesses
    in the model's dtype and on its device. `problem.unknown(name)` then holds the learned value.

    With a `checkpoint_path`, in the main thread, Ctrl-C (SIGINT) and SIGTERM stop training at
    the next step boundary: the state is checkpointed as a periodic checkpoint would hold it
    (resumed, the run ends bit for bit as if never stopped) and `TrainingInterrupted` is
    raised. The handlers are installed for the call only. Under torchrun a signal to any
    process stops all of them at the same step (`pinn.training.interrupts`).

    Raises:
        TrainingDiverged: the loss became NaN or inf; the last good checkpoint is kept.
        TrainingInterrupted: a signal stopped the run; its checkpoint holds the state.
        OutputError: the checkpoint or history could not be written (disk full, ...).
        CheckpointError, ConfigError: `resume_from` is unreadable or from another kind of run.
        ConfigError: an entry of `callbacks` is not a `pinn.Callback`.
    """
    listeners = CallbackList(callbacks or ())  # checked first
    check_refinement(settings, points.refinement.method)
    if estimator is not None:
        spanned = problem.laplacian_inputs
        if spanned is None:
            estimator.check_dimension(len(problem.inputs))
        else:
            estimator.check_dimension(len(spanned), "space coordinates")
        _refuse_deterministic(settings)
    world = world or World.current()
    if not world.is_main:
        listeners = CallbackList()  # only rank 0 calls callbacks
    else:
        _warn_of_time_faces(problem)
        _warn_of_outside_observations(problem)
        if unused := unused_refinement(settings, points.refinement.method):
            log.warning(unused)
    state = RunState(
        model,
        problem.unknowns_for(*_dtype_and_device(model, points)),
        points,
        Engine(engine, model, _probe(problem, model, points), estimator=estimator),
        LossWeights(
            weights, settings.weighting, settings.weighting_every, settings.weighting_alpha
        ),
        settings,
        world,
    )
    if resume_from is not None:
        is_path = isinstance(resume_from, (str, Path))
        state.restore(load_checkpoint(resume_from) if is_path else resume_from)
    for name in settings.phases[state.phase_index :]:  # before any work: nothing is lost
        if settings.block(name).steps:
            phase_class(name)(settings.block(name)).check(state)
    _check_phases(state)
    if state.phase == "done":  # a finished run: nothing left to train
        result = state.result()
        listeners.on_end(result, state)
        return result
    checkpoints = Checkpoints(
        checkpoint_path, settings.checkpoint_every, checkpoint_extra, world, checkpoint_companions
    )
    checkpoints.last_saved = state.resumed_from
    parts = Parts(
        StepLoss(problem, state),
        Recorder(state, validator, settings.progress, _quantities(problem, model)),
        checkpoints,
        DivergenceWatch(lambda: checkpoints.last_saved),
        listeners,
        Interrupts(enabled=checkpoint_path is not None, world=world),
    )
    state.refine_by = parts.loss.residual_magnitude  # what the phases refine the points by
    with parts.interrupts:
        return _run_phases(state, parts)


def _warn_of_time_faces(problem: Problem) -> None:
    for name in on_the_time_faces(problem.domain, problem.conditions):
        time = problem.domain.time
        log.warning(
            "condition %r holds on the whole boundary of a space-time domain, the faces "
            "%s_min and %s_max included (the final time too); to hold it on the spatial "
            "boundary only, name its parts: on=[...]",
            name,
            time,
            time,
        )


def _warn_of_outside_observations(problem: Problem) -> None:
    for condition in problem.conditions:
        if isinstance(condition, Observations) and (count := outside(condition, problem.domain)):
            log.warning(
                "observations %r: %d of the %d points lie outside the domain; the network "
                "is fitted to them there all the same (check the points' columns and units)",
                condition.name,
                count,
                len(condition.points),
            )


def _run_phases(state: RunState, parts: Parts) -> FitResult:
    """Run the phases from where `state` is, in the order of `settings.phases`, then the final
    loss; then the end."""
    try:
        if state.batch is None:  # a fresh run (a resumed one has its batch back)
            state.batch = state.points.draw()
        check_pointwise(state.model, state.batch.interior)
        state.world.broadcast_(state.parameters)  # every process starts from rank 0's
        names, resumed_at = state.settings.phases, state.phase_index
        for index in range(state.phase_index, len(names)):
            phase = phase_class(names[index])(state.settings.block(names[index]))
            if index != state.phase_index:  # not started yet: its budget is whole
                if phase.settings.steps <= 0:
                    continue  # a phase of 0 steps is skipped, unannounced
                parts.enter(state, index, phase.name)
            elif phase.steps_left(state) <= 0:
                continue  # the phase the state is in is over (or has 0 steps)
            saved = state.resumed.get("phase_state") if index == resumed_at else None
            state.active = phase
            # A line per phase: a run without a progress bar says what it is doing.
            log.info("%s: %d steps from step %d", phase.name, phase.steps_left(state), state.step)
            phase.run(state, parts, saved)
        finish(state, parts)
    finally:
        parts.recorder.close()
    result = state.result()
    parts.callbacks.on_end(result, state)
    return result


def _quantities(problem: Problem, model: nn.Module) -> Callable[[nn.Module], dict] | None:
    """The problem's quantities of interest as a function of the model (None without any),
    its quadrature points made once; evaluated here once, so that a mistake in quantities()
    or quantity_reference is refused before any training step."""
    if not problem.has_quantities:
        return None
    tools = QuantityTools(problem, model)
    values = evaluate_quantities(problem, model, tools)
    quantity_errors(values, problem.quantity_reference, f"{type(problem).__name__}")
    return lambda trained: evaluate_quantities(problem, trained, tools)


def _check_phases(state: RunState) -> None:
    """Each phase still to run refuses what it cannot train, before any of them starts."""
    settings = state.settings
    for name in settings.phases[state.phase_index :]:
        if settings.block(name).steps:
            phase_class(name)(settings.block(name)).check(state)


def _refuse_deterministic(settings: TrainSettings) -> None:
    """A stochastic Laplacian makes the loss random: refuse the phases that need it exact."""
    exact = [n for n in settings.phases if PHASES[n].deterministic and settings.block(n).steps]
    if exact:
        kept = [n for n in settings.phases if n not in exact] or ["adam"]
        raise ConfigError(
            f"a stochastic Laplacian makes the loss random, and {', '.join(exact)} needs a "
            f"deterministic one (L-BFGS's line search): set trainer.phases=[{','.join(kept)}], "
            f"or trainer.{exact[0]}.steps=0, or laplacian.method=exact"
        )


def _probe(problem: Problem, model: nn.Module, points: PointSampler) -> torch.Tensor:
    """Two points of the domain's bounding box, for tracing the model (draws nothing)."""
    dtype, device = _dtype_and_device(model, points)
    domain = problem.domain
    lower, upper = (
        torch.as_tensor(c, dtype=dtype, device=device) for c in (domain.lower, domain.upper)
    )
    return torch.stack([lower + (upper - lower) / 3, lower + 2 * (upper - lower) / 3])


def _dtype_and_device(model: nn.Module, points: PointSampler) -> tuple[torch.dtype, torch.device]:
    """Where the model's parameters live (the sampler's dtype and device for a model without)."""
    reference = next(model.parameters(), None)
    if reference is None:
        return points.dtype, torch.device(points.device)
    return reference.dtype, reference.device
