"""`train(cfg)`: from a composed config to a trained, validated model and a full run directory.

The CLI calls it; so can tests and notebooks:

    cfg = compose_config(["problem=poisson", "trainer.adam.steps=200"])
    metrics = train(cfg, run_dir="runs/quick")
"""

from __future__ import annotations

import logging
import time
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import torch
from omegaconf import DictConfig, OmegaConf

from pinn.config.docs import key_docs
from pinn.config.schema import RunConfig, check_config
from pinn.errors import OutputError, TrainingInterrupted, reason
from pinn.evaluation.fresh_loss import fresh_loss
from pinn.evaluation.validation import Validator, can_validate
from pinn.geometry import PointSampler
from pinn.outputs import FinishedRun, chosen_writers, run_loggers, write_outputs
from pinn.outputs.memory import peak_memory
from pinn.outputs.metrics import summarise
from pinn.outputs.provenance import provenance, utc_now
from pinn.plots.files import PlotOptions
from pinn.problem.boundary_points import boundary_counts
from pinn.problem.problem import load_problem
from pinn.problem.quantities import error_kind
from pinn.problem.time_windows import check_windowable, window_counts
from pinn.run.build import (
    build_model,
    device_of,
    dtype_of,
    initial_guesses,
    laplacian_estimator,
    seed_of,
    threads_of,
)
from pinn.run.resume import checkpoint_file, load_resume
from pinn.run.rundir import claim_run_dir
from pinn.training.checkpoints import CHECKPOINT_NAME
from pinn.training.distributed import launched, process_device, rank_seed, start
from pinn.training.loop import fit
from pinn.training.strategies.time_marching import march

log = logging.getLogger("pinn")
WINDOW_SEEDS = 1_000_003  # window k's points are drawn from seed + 1 + k * this


def train(cfg: DictConfig, run_dir: str | Path = ".") -> dict[str, Any]:
    """Train, validate and write the run directory; returns the metrics.

    Every config value is checked (and the objects built) before training starts, so bad input
    costs nothing. Writes into `run_dir`: config.yaml; history.csv (as the run goes) and
    checkpoint.pt (every `trainer.checkpoint_every` steps); at the end metrics.json (with the
    run's problem, seed, device, dtype, versions, start and end times and peak memory),
    prediction.npz, solution.png and loss.png (in each of `outputs.plot_formats`), and with
    `outputs.vtk` the prediction as VTK files. A problem's unknowns start from
    `problem.unknowns.<name>` where the config gives one, else from their declared guesses;
    metrics.json holds the learned values under "unknowns". The loggers of `outputs.loggers`
    see every history row as the run goes (history.csv by default; tensorboard/ with
    `tensorboard`: `pinn.outputs`).

    With `cfg.resume` set to an earlier run's directory, continues that run from its checkpoint
    (`pinn.run.resume`: the config must be the saved one) and writes the whole run, history from
    step 0 included, into `run_dir`. Nothing is written into the resumed directory unless it is
    `run_dir` itself, and then only states later than the saved one.

    Under torchrun (`pinn.training.distributed`) every process runs this with the same config:
    it joins the process group, draws `problem.n_interior` and `problem.n_boundary` points of
    its own (the latter only on the parts the conditions use, `pinn.boundary_counts`) (per
    process, from a generator seeded for its rank), and only rank 0 writes `run_dir`; every
    process returns the metrics.

    `run_dir` is claimed for the run (`pinn.run.rundir`): one holding another run's results is
    refused unless `cfg.overwrite` (or it is the resumed run's own directory), and a lock keeps
    a second run out while this one lives. config.yaml is written with the first checkpoint,
    once the first step's checks have passed. Ctrl-C or SIGTERM stops training at a step
    boundary with its state checkpointed (`TrainingInterrupted`, naming the resume= to give).
    """
    run_dir, started_at = Path(run_dir), utc_now()
    config = check_config(cfg, key_docs())  # typed, every key known, every value checked
    resume = load_resume(cfg)  # first: a bad checkpoint or config costs nothing
    plots = config.outputs.plot_options()
    loggers = run_loggers(config.outputs.loggers, run_dir)  # a missing package refused now
    place = launched()
    in_place = resume is not None and checkpoint_file(config.resume).parent.resolve() == (
        run_dir.resolve()
    )
    claim = (
        claim_run_dir(run_dir, config.overwrite, in_place)
        if place is None or place[0] == 0  # rank 0 writes, so rank 0 claims
        else nullcontext()
    )
    with claim:
        try:
            return _train(cfg, config, run_dir, resume, plots, loggers, started_at)
        except TrainingInterrupted as stopped:
            raise TrainingInterrupted(
                f"interrupted at step {stopped.step}; continue with resume={run_dir}",
                stopped.signal,
                stopped.step,
            ) from None


def _train(
    cfg: DictConfig,
    config: RunConfig,
    run_dir: Path,
    resume: dict[str, Any] | None,
    plots: PlotOptions,
    loggers: list,
    started_at: str,
) -> dict[str, Any]:
    """`train` in the claimed `run_dir`, from the checked `config` (`cfg` as composed, for the
    files that record it), with the checked plot options and loggers."""
    dtype, device = dtype_of(config.dtype), process_device(device_of(config.device))
    if config.threads is not None:
        torch.set_num_threads(threads_of(config.threads))
    seed = seed_of(config.seed)
    world = start(device, config.distributed.timeout_s)
    problem = load_problem(config.problem.target, config.problem.params)
    windows = config.windows
    if windows.on:
        check_windowable(problem)  # before any work
    aimed = config.problem.boundary_points
    counts = boundary_counts(problem, config.problem.n_boundary, aimed)  # checked before work

    def build(task):
        return build_model(task, config.model, seed).to(dtype=dtype, device=device)

    model = build(problem)  # checked before any training; a marched run builds one per window
    unknowns = problem.attach_unknowns(dtype, device, initial_guesses(config.problem.unknowns))
    estimator = laplacian_estimator(config.laplacian, rank_seed(seed, world.rank), device)
    validator = Validator(problem, dtype=dtype, device=device) if can_validate(problem) else None
    resolved = OmegaConf.to_container(cfg, resolve=True)
    config_yaml = {"config.yaml": OmegaConf.to_yaml(cfg, resolve=True)}
    weights = dict(config.problem.weights)

    def fit_with(task, network, term_weights, checker, resume_from, extra, callbacks):
        """`fit` of `network` on `task` (the problem, or one time window of it)."""
        window = extra.get("window", 0)  # a time window's points are its own draw
        generator = torch.Generator().manual_seed(
            rank_seed(seed + 1 + WINDOW_SEEDS * window, world.rank)
        )
        points = PointSampler(
            task.domain,
            config.problem.n_interior,
            window_counts(task, config.problem.n_boundary, aimed) if windows.on else counts,
            config.problem.sampler,
            generator,
            dtype,
            device,
            refinement=config.refinement,
        )
        return fit(
            task,
            network,
            config.trainer,
            points,
            weights=term_weights,
            validator=checker,
            checkpoint_path=run_dir / CHECKPOINT_NAME,
            checkpoint_extra={"config": resolved, **extra},
            checkpoint_companions=config_yaml,
            engine=config.engine,
            resume_from=resume_from,
            estimator=estimator,
            world=world,
            callbacks=callbacks,
        )

    if world.is_main and resume is not None:
        _announce(config.resume, resume, run_dir)
    started = time.perf_counter()
    if windows.on:
        resume_dir = checkpoint_file(config.resume).parent if resume is not None else None
        result, model = march(
            problem,
            windows,
            build,
            fit_with,
            weights,
            validator,
            run_dir,
            resume,
            resume_dir,
            seed,
            config.problem.sampler,
            world.is_main,
            loggers,
        )
    else:
        result = fit_with(problem, model, weights, validator, resume, {}, loggers)
    # Training time over every invocation of the run (what a resumed one did before, too);
    # a marched run's history counts it on over its windows, those finished before a resume too.
    wall_time = time.perf_counter() - started + (resume["training"]["time_s"] if resume else 0)
    if windows.on and resume is not None:
        wall_time = result.history[-1]["time_s"]

    metrics = summarise(result, validator, model, wall_time, unknowns.values(), problem)
    sizes = config.problem.n_interior, counts
    metrics["fresh_loss"] = fresh_loss(problem, model, *sizes, weights, config.engine)
    metrics |= peak_memory(device)  # this process's, up to here: training's peak
    metrics |= provenance(cfg, device, started_at, utc_now(), problem)
    if world.is_main:
        if unknowns.names:
            learned = ", ".join(f"{n} = {value:.10g}" for n, value in unknowns.values().items())
            log.info("learned unknowns: %s", learned)
        for name, value in metrics.get("quantities", {}).items():
            error = metrics.get("quantity_errors", {}).get(name)
            kind = error_kind(problem.quantity_reference.get(name, 1.0))
            against = "" if error is None else f" ({kind} error {error:.2e})"
            log.info("quantity %s = %s%s", name, _shown(value), against)
        try:
            (run_dir / "config.yaml").write_text(config_yaml["config.yaml"])
            # outputs up to a constant shown as the errors measure them
            shown = validator.aligned(model) if validator is not None else model
            finished = FinishedRun(run_dir, problem, shown, result, metrics, validator, plots)
            write_outputs(finished, chosen_writers(config.outputs))
        except OSError as error:
            where = error.filename or f"the outputs into {run_dir}"
            raise OutputError(f"cannot write {where}: {reason(error)}") from error
    return metrics


def _announce(resume: str, state: dict[str, Any], run_dir: Path) -> None:
    path, step, phase = checkpoint_file(resume), state["step"], state["training"]["phase"]
    if phase == "done":
        log.info(
            "the run in %s had already finished at step %d: nothing left to train; "
            "its final model is validated and its outputs written again into %s",
            path.parent,
            step,
            run_dir,
        )
    else:
        where = f"step {step} ({phase})"
        if "window" in state:  # time-marching: steps count within the window
            where += f" of time window {state['window']}"
        log.info("resuming the run in %s at %s, writing to %s", path, where, run_dir)


def _shown(value: float | list[float]) -> str:
    """A quantity for the log: a number, or a profile's first values."""
    if isinstance(value, float):
        return f"{value:.6g}"
    head = ", ".join(f"{v:.4g}" for v in value[:4])
    return f"[{head}{', ...' if len(value) > 4 else ''}] ({len(value)} values)"
