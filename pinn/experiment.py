"""`train(cfg)`: from a composed config to a trained, validated model and a full run directory.

The CLI calls it; so can tests and notebooks:

    cfg = compose_config(["problem=poisson", "trainer.steps=200"])
    metrics = train(cfg, run_dir="runs/quick")
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
from omegaconf import DictConfig, OmegaConf

from pinn.constraints import constrain
from pinn.derivatives.stochastic import LaplacianEstimator
from pinn.errors import ConfigError
from pinn.geometry import PointSampler, Refinement
from pinn.models import MLP, input_box
from pinn.plots import plot_loss, plot_solution
from pinn.problem import Problem, load_problem
from pinn.resume import checkpoint_file, load_resume
from pinn.training.checkpoint import CHECKPOINT_NAME
from pinn.training.distributed import process_device, rank_seed, start
from pinn.training.history import HISTORY_NAME, HistoryCSV
from pinn.training.loop import fit
from pinn.training.settings import TrainSettings
from pinn.training.state import FitResult
from pinn.validation import Validator, can_validate, evaluation_points, predict

PREDICTION_NAME = "prediction.npz"
CONF_DIR = Path(__file__).resolve().parent.parent / "conf"
DTYPES = {"float32": torch.float32, "float64": torch.float64}
log = logging.getLogger("pinn")


def compose_config(overrides: list[str] | None = None, config_dir: str | Path = CONF_DIR):
    """The config `python -m pinn <overrides>` would run, composed without starting a run."""
    from hydra import compose, initialize_config_dir

    with initialize_config_dir(config_dir=str(Path(config_dir).resolve()), version_base="1.3"):
        return compose(config_name="config", overrides=list(overrides or []))


def train(cfg: DictConfig, run_dir: str | Path = ".") -> dict[str, Any]:
    """Train, validate and write the run directory; returns the metrics.

    Every config value is checked (and the objects built) before training starts, so bad input
    costs nothing. Writes into `run_dir`: config.yaml; history.csv (as the run goes) and
    checkpoint.pt (every `trainer.checkpoint_every` steps); at the end metrics.json,
    prediction.npz, solution.png and loss.png. A problem's unknowns start from
    `problem.unknowns.<name>` where the config gives one, else from their declared guesses;
    metrics.json holds the learned values under "unknowns".

    With `cfg.resume` set to an earlier run's directory, continues that run from its checkpoint
    (`pinn.resume`: the config must be the saved one) and writes the whole run, history from
    step 0 included, into `run_dir`. Nothing is written into the resumed directory unless it is
    `run_dir` itself, and then only states later than the saved one.

    Under torchrun (`pinn.training.distributed`) every process runs this with the same config:
    it joins the process group, draws `problem.n_interior` and `problem.n_boundary` points of
    its own (per process, from a generator seeded for its rank), and only rank 0 writes
    `run_dir`; every process returns the metrics.
    """
    run_dir = Path(run_dir)
    resume = load_resume(cfg)  # first: a bad checkpoint or config costs nothing
    dtype, device = _dtype(cfg.dtype), process_device(_device(cfg.device))
    if cfg.threads:
        torch.set_num_threads(int(cfg.threads))
    seed = _seed(cfg.seed)
    world = start(device, cfg.distributed.timeout_s)
    problem = load_problem(cfg.problem.target, OmegaConf.to_container(cfg.problem.params))
    model = build_model(problem, cfg.model, seed).to(dtype=dtype, device=device)
    unknowns = problem.attach_unknowns(dtype, device, _initial_guesses(cfg.problem))
    settings = TrainSettings(**OmegaConf.to_container(cfg.trainer))
    generator = torch.Generator().manual_seed(rank_seed(seed + 1, world.rank))
    points = PointSampler(
        problem.domain,
        cfg.problem.n_interior,
        cfg.problem.n_boundary,
        cfg.problem.sampler,
        generator,
        dtype,
        device,
        refinement=Refinement(**OmegaConf.to_container(cfg.refinement)),
    )
    estimator = laplacian_estimator(cfg.laplacian, rank_seed(seed, world.rank), device)
    validator = Validator(problem, dtype=dtype, device=device) if can_validate(problem) else None
    resolved = OmegaConf.to_container(cfg, resolve=True)

    if world.is_main:
        if resume is not None:
            _announce(cfg.resume, resume, run_dir)
        run_dir.mkdir(parents=True, exist_ok=True)
        (run_dir / "config.yaml").write_text(OmegaConf.to_yaml(cfg, resolve=True))
    started = time.perf_counter()
    result = fit(
        problem,
        model,
        settings,
        points,
        weights=OmegaConf.to_container(cfg.problem.weights),
        validator=validator,
        checkpoint_path=run_dir / CHECKPOINT_NAME,
        checkpoint_extra={"config": resolved},
        engine=cfg.engine,
        resume_from=resume,
        history_path=run_dir / HISTORY_NAME,
        estimator=estimator,
        world=world,
    )
    # Training time over every invocation of the run (what a resumed one did before, too).
    wall_time = time.perf_counter() - started + (resume["training"]["time_s"] if resume else 0)

    metrics = summarise(result, validator, model, wall_time, unknowns.values())
    if world.is_main:
        if unknowns.names:
            learned = ", ".join(f"{n} = {value:.6g}" for n, value in unknowns.values().items())
            log.info("learned unknowns: %s", learned)
        write_outputs(run_dir, problem, model, result, metrics, validator)
    return metrics


def _initial_guesses(problem_cfg: DictConfig) -> dict[str, Any] | None:
    """`problem.unknowns` of the config ({name: initial guess}), or None where it has none."""
    guesses = problem_cfg.get("unknowns")
    if guesses is None:
        return None
    if not isinstance(guesses, DictConfig):
        raise ConfigError(
            f"problem.unknowns must map unknown names to initial guesses, e.g. "
            f"{{kappa: 1.0}}, got {guesses!r}"
        )
    return OmegaConf.to_container(guesses)


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
        log.info(
            "resuming the run in %s at step %d (%s), writing to %s", path, step, phase, run_dir
        )


def build_model(problem: Problem, model_cfg: DictConfig, seed: int) -> torch.nn.Module:
    """The MLP the config asks for, sized for the problem, seeded; inside the problem's hard
    constraint (`Problem.hard_constraint`) when it declares one."""
    domain = problem.domain
    box = input_box(model_cfg.input_scaling, model_cfg.activation, domain.lower, domain.upper)
    network = MLP(
        domain.dim,
        len(problem.outputs),
        model_cfg.width,
        model_cfg.depth,
        model_cfg.activation,
        **box,
        fourier_features=model_cfg.fourier_features,
        fourier_scale=model_cfg.fourier_scale,
        generator=torch.Generator().manual_seed(seed),
    )
    corners = torch.tensor([domain.lower, domain.upper], dtype=torch.float64)
    return constrain(network, problem.hard_constraint, corners)


def summarise(
    result: FitResult,
    validator: Validator | None,
    model,
    wall_time: float,
    unknowns: dict[str, float] | None = None,
) -> dict:
    """metrics.json's content: errors (None without an exact solution), time, steps, loss,
    and the learned `unknowns` ({name: value}) of a problem that has any."""
    errors = validator.errors(model) if validator else {"rel_l2": None, "max_abs_error": None}
    metrics = {
        **errors,
        "wall_time_s": wall_time,
        "steps": result.steps,
        "final_loss": result.final_loss,
    }
    if unknowns:
        metrics["unknowns"] = dict(unknowns)
    return metrics


def write_outputs(
    run_dir: Path,
    problem: Problem,
    model,
    result: FitResult,
    metrics: dict,
    validator: Validator | None = None,
) -> None:
    """metrics.json, history.csv, prediction.npz, solution.png and loss.png in `run_dir`."""
    (run_dir / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n")
    HistoryCSV(run_dir / HISTORY_NAME).update(result.history)
    write_prediction(run_dir / PREDICTION_NAME, problem, model, validator)
    plot_solution(problem, model, run_dir / "solution.png", validator)
    plot_loss(result.history, run_dir / "loss.png", skip=metrics.get("unknowns", {}))


def write_prediction(
    path: Path, problem: Problem, model, validator: Validator | None = None
) -> None:
    """prediction.npz: `points` (M, d) and `predicted` (M, m) on the evaluation set, and
    `reference` (M, m), the exact or reference solution there, when there is one."""
    if validator is not None:
        points, arrays = validator.points, {"reference": validator.reference}
    else:
        dtype = next(model.parameters()).dtype
        device = next(model.parameters()).device
        points, arrays = evaluation_points(problem, dtype=dtype, device=device), {}
    arrays = {"points": points, "predicted": predict(model, points), **arrays}
    numpy_arrays = {name: value.detach().cpu().double().numpy() for name, value in arrays.items()}
    np.savez(path, **numpy_arrays)


def laplacian_estimator(
    laplacian_cfg: DictConfig, seed: int, device: torch.device
) -> LaplacianEstimator | None:
    """The `laplacian:` block as an estimator (None for the exact Laplacian); its generator,
    on `device`, is seeded from `seed` apart from the network's and the sampler's."""
    method = laplacian_cfg.method
    if method == "exact":
        return None
    if method != "stochastic":
        raise ConfigError(f"laplacian.method={method!r} is unknown; choose exact or stochastic")
    generator = torch.Generator(device=device).manual_seed(seed + 2)
    return LaplacianEstimator(laplacian_cfg.samples, laplacian_cfg.estimator, generator)


def _dtype(name: str) -> torch.dtype:
    if name not in DTYPES:
        raise ConfigError(f"dtype={name!r} is unknown; choose one of {', '.join(DTYPES)}")
    return DTYPES[name]


def _device(name: Any) -> torch.device:
    """The torch device `device=` names, refused in one line if this machine does not have it."""
    try:
        device = torch.device(str(name))
    except RuntimeError:
        raise ConfigError(
            f"device={name!r} is not a device torch knows; use cpu, cuda or cuda:N (a GPU), "
            "or mps (Apple silicon)"
        ) from None
    if device.type == "cpu":
        return device
    backend = getattr(torch, device.type, None)
    available = backend is not None and hasattr(backend, "is_available") and backend.is_available()
    if not available:
        raise ConfigError(
            f"device={name!r}: this machine has no {device.type} device "
            f"(torch.{device.type}.is_available() is False); use device=cpu"
        )
    count = backend.device_count() if hasattr(backend, "device_count") else 1
    if device.index is not None and device.index >= count:
        raise ConfigError(
            f"device={name!r}: this machine has {count} {device.type} device(s), numbered from 0"
        )
    return device


def _seed(value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ConfigError(f"seed must be a whole number >= 0, got {value!r}")
    return value
