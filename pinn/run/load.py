"""`load_run(run_dir)`: a finished run back in Python, its trained model ready to evaluate.

run = pinn.load_run("outputs/poisson/2026-12-01_03-12-17")
run.metrics["rel_l2"], run.config.model.width, run.problem.domain
values = run.predict(points)     # {"u": (N,)} at (N, d) points, numpy or torch
"""

from __future__ import annotations

import importlib.util
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from omegaconf import DictConfig, OmegaConf

from pinn.config.schema import check_config, upgraded
from pinn.errors import CheckpointError, ConfigError
from pinn.evaluation.validation import predict
from pinn.outputs.metrics import METRICS_NAME
from pinn.problem.problem import Problem, load_problem
from pinn.run.build import build_model, device_of, dtype_of
from pinn.training.checkpoints import CHECKPOINT_NAME, check_run_entries, load_checkpoint
from pinn.training.strategies.time_marching import trained_windows

log = logging.getLogger("pinn")


@dataclass
class LoadedRun:
    """A finished run: `problem` (its unknowns attached at their learned values), `model` (the
    final parameters, in the run's dtype, on the device asked for), `config` (the run's
    resolved config), `metrics` (metrics.json) and `run_dir`."""

    problem: Problem
    model: torch.nn.Module
    config: DictConfig
    metrics: dict[str, Any]
    run_dir: Path
    _warned_outside: bool = field(default=False, repr=False)

    def predict(self, points: np.ndarray | torch.Tensor) -> dict[str, np.ndarray | torch.Tensor]:
        """{output name: (N,) values} at (N, d) points, in the model's dtype.

        numpy in (or anything np.asarray takes), numpy out; a tensor in, tensors out on its
        device. Raises ConfigError for points not shaped (N, d). Points outside the domain (its
        boundary included) are predicted too, with a warning, once: the network is
        extrapolated there.
        """
        parameter = next(self.model.parameters())
        is_tensor = isinstance(points, torch.Tensor)
        x = points if is_tensor else torch.from_numpy(np.asarray(points))
        self._check_shape(tuple(x.shape))
        self._warn_if_outside(x)
        values = predict(self.model, x.to(dtype=parameter.dtype, device=parameter.device))
        values = values.to(points.device) if is_tensor else values.cpu().numpy()
        return {name: values[:, k] for k, name in enumerate(self.problem.outputs)}

    def _warn_if_outside(self, x: torch.Tensor) -> None:
        if self._warned_outside:
            return
        outside = ~self.problem.domain.contains(x.detach().double().cpu(), closed=True)
        if outside.any():
            self._warned_outside = True
            first = [round(v, 6) for v in x[outside][0].tolist()]
            log.warning(
                "predict: %d of the %d points lie outside the domain (the first: %s, "
                "coordinates %s): the network is extrapolated there",
                int(outside.sum()),
                len(outside),
                first,
                list(self.problem.domain.names),
            )

    def _check_shape(self, shape: tuple[int, ...]) -> None:
        names = self.problem.domain.names
        if len(shape) != 2 or shape[1] != len(names):
            raise ConfigError(
                f"predict: points must be (N, {len(names)}), one column per coordinate "
                f"{list(names)}, got shape {shape}; a single point is x[None, :]"
            )


def load_run(run_dir: str | Path, device: str | torch.device = "cpu") -> LoadedRun:
    """The finished run in `run_dir`: problem, trained model on `device` (CPU by default, also
    for a run trained on a GPU), config and metrics.

    Raises:
        CheckpointError: `run_dir` holds no readable checkpoint, an unfinished run (continue it
            with resume=), or no metrics.json.
        ConfigError: the run's problem cannot be imported, or `device` is not on this machine.
    """
    run_dir = Path(run_dir).expanduser()
    state = _finished_state(run_dir)
    config = _config_of(state, run_dir)
    metrics = _metrics_of(run_dir)
    target = device_of(device)
    dtype = dtype_of(config.dtype)
    _check_importable(str(config.problem.target), metrics, run_dir)
    problem = load_problem(config.problem.target, OmegaConf.to_container(config.problem.params))

    settings = check_config(config)  # its blocks typed (keys pinn added since: their defaults)

    def build(task: Problem) -> torch.nn.Module:
        return build_model(task, settings.model, settings.seed).to(dtype=dtype, device=target)

    try:
        windows = settings.windows
        if windows.on:  # a time-marching run: one network per window, in windows/
            model = trained_windows(problem, windows.count, build, run_dir)
        else:
            model = build(problem)
            model.load_state_dict(state["model"])
    except (RuntimeError, KeyError) as error:
        raise CheckpointError(
            f"{run_dir / CHECKPOINT_NAME}: its model does not fit the network its config "
            f"describes (written by another version of pinn or the problem?): {error}"
        ) from error
    model.eval()
    _attach_learned_unknowns(problem, state.get("unknowns") or {}, dtype, target)
    return LoadedRun(problem, model, config, metrics, run_dir)


def _check_importable(target: str, metrics: Mapping[str, Any], run_dir: Path) -> None:
    """Refuse, saying how to make it importable, a run whose problem module Python cannot find
    here (a module of one's own, run from another folder than the one the run started in)."""
    module = target.rpartition(".")[0]
    try:
        found = importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a parent package that is missing too
        found = False
    if found:
        return
    file = (metrics.get("problem") or {}).get("file")
    if file:
        folder = Path(file).parent
        for _ in range(module.count(".")):  # a module in a package: the package's parent
            folder = folder.parent
        how = (
            f"the run's problem was defined in {file}: put {folder} on the path first, "
            f"sys.path.insert(0, {str(folder)!r}) in Python or PYTHONPATH={folder} in the shell, "
            "or call load_run from that folder"
        )
    else:
        how = (
            "put the folder holding it on the path first (sys.path.insert(0, <folder>), or "
            "PYTHONPATH), or call load_run from the folder the run was started in"
        )
    raise ConfigError(
        f"load_run: the run in {run_dir} trained problem.target={target!r}, and Python cannot "
        f"import its module {module!r} here; {how}"
    )


def _finished_state(run_dir: Path) -> dict[str, Any]:
    """The checkpoint of the finished run in `run_dir`, refused in one line otherwise."""
    path = run_dir / CHECKPOINT_NAME
    if not path.is_file():
        what = "no directory" if not run_dir.is_dir() else f"no {CHECKPOINT_NAME} in it"
        raise CheckpointError(
            f"load_run: {run_dir} is not a run directory ({what}); give the directory a run "
            "wrote, e.g. outputs/<problem>/<date_time>"
        )
    state = load_checkpoint(path)
    training = state.get("training")
    if not isinstance(training, Mapping):
        raise CheckpointError(f"load_run: {path} holds no run (written by fit() alone?)")
    check_run_entries(state, f"load_run: {path}")
    if training.get("phase") != "done":
        raise CheckpointError(
            f"load_run: the run in {run_dir} has not finished (its checkpoint is at step "
            f"{state.get('step')}, {training.get('phase')}); finish it first with its command "
            f"and resume={run_dir}"
        )
    return state


def _config_of(state: Mapping[str, Any], run_dir: Path) -> DictConfig:
    """The run's config: the checkpoint's saved one, else config.yaml next to it."""
    if isinstance(state.get("config"), Mapping):
        return OmegaConf.create(upgraded(state["config"]))
    path = run_dir / "config.yaml"
    if path.is_file():
        return OmegaConf.create(upgraded(OmegaConf.to_container(OmegaConf.load(path))))
    raise CheckpointError(
        f"load_run: {run_dir} holds no config (neither in the checkpoint nor "
        "config.yaml); it was not written by `pinn.train` or `python -m pinn`"
    )


def _metrics_of(run_dir: Path) -> dict[str, Any]:
    path = run_dir / METRICS_NAME
    if not path.is_file():
        raise CheckpointError(
            f"load_run: {run_dir} has a finished checkpoint but no {METRICS_NAME} (the run "
            f"stopped while writing its outputs); write them with its command and resume={run_dir}"
        )
    return json.loads(path.read_text())


def _attach_learned_unknowns(
    problem: Problem, saved: Mapping[str, torch.Tensor], dtype: torch.dtype, device: torch.device
) -> None:
    """Give the problem's unknowns (if it declares any) their learned values."""
    if problem.unknowns:
        learned = {name: float(value) for name, value in saved.items()}
        problem.attach_unknowns(dtype, device, learned)
