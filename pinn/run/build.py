"""From the config to the objects of a run: the network, the Laplacian estimator, the dtype,
device and seed, each refused in one line when it is not one pinn can use."""

from __future__ import annotations

from typing import Any

import torch
from omegaconf import DictConfig, OmegaConf

from pinn.derivatives.stochastic import LaplacianEstimator
from pinn.errors import ConfigError, require_int
from pinn.nn.constraints import constrain
from pinn.nn.mlp import MLP, input_box
from pinn.problem.problem import Problem

DTYPES = {"float32": torch.float32, "float64": torch.float64}


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


def initial_guesses(problem_cfg: DictConfig) -> dict[str, Any] | None:
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


def dtype_of(name: str) -> torch.dtype:
    if name not in DTYPES:
        raise ConfigError(f"dtype={name!r} is unknown; choose one of {', '.join(DTYPES)}")
    return DTYPES[name]


def device_of(name: Any) -> torch.device:
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


def seed_of(value: Any) -> int:
    require_int("seed", value, minimum=0)
    return value


def threads_of(value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ConfigError(
            f"threads must be a whole number >= 1 (or null: torch's default), got {value!r}"
        )
    return value
