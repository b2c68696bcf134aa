"""From the config to the objects of a run: the network (one of pinn's or the user's own), the
Laplacian estimator, the dtype, device and seed, each refused in one line when it is not one
pinn can use."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping
from typing import Any

import torch

from pinn.config.schema import LaplacianSettings, ModelSettings
from pinn.derivatives.stochastic import LaplacianEstimator
from pinn.errors import ConfigError, is_finite_number, require_int
from pinn.geometry import Domain
from pinn.nn.constraints import HardConstraint, constrain, periodic_mismatch
from pinn.nn.mlp import input_box
from pinn.nn.options import InputOptions
from pinn.nn.registry import NETWORKS
from pinn.problem.importing import check_params, import_module_of
from pinn.problem.problem import Problem

log = logging.getLogger(__name__)

DTYPES = {"float32": torch.float32, "float64": torch.float64}


def build_model(problem: Problem, model_cfg: ModelSettings, seed: int) -> torch.nn.Module:
    """The network `model.name` names, sized for the problem, seeded; inside the problem's hard
    constraint (`Problem.hard_constraint`) when it declares one."""
    domain = problem.domain
    name, params = model_cfg.name, dict(model_cfg.params)
    if name in NETWORKS:
        if params:
            raise ConfigError(
                f"model.params={params} is for a network class of your own (model.name=module."
                f"Class); {name} takes model.width, model.depth, ... (python -m pinn --help)"
            )
        network = NETWORKS[name](
            domain.dim,
            len(problem.outputs),
            model_cfg.width,
            model_cfg.depth,
            model_cfg.activation,
            input_options(model_cfg, problem.domain),
            generator=torch.Generator().manual_seed(seed),
        )
    elif "." in name:
        _warn_of_unused_options(model_cfg)
        network = own_network(name, params, domain.dim, len(problem.outputs), seed)
    else:
        raise ConfigError(
            f"model.name={name!r} is unknown; choose one of {', '.join(NETWORKS)}, or a "
            "network class of your own by its import path, e.g. model.name=my_nets.Siren"
        )
    corners = torch.tensor([domain.lower, domain.upper], dtype=torch.float64)
    model = constrain(network, problem.hard_constraint, corners)
    if isinstance(model, HardConstraint) and name in NETWORKS:
        _warn_of_aperiodic_constraint(model, model_cfg.periodic, problem)
    return model


def input_options(model_cfg: ModelSettings, domain: Domain) -> InputOptions:
    """The `model` block's options every pinn network shares, for networks on `domain`."""
    box = input_box(model_cfg.input_scaling, model_cfg.activation, domain.lower, domain.upper)
    factorize = (model_cfg.factorize_mean, model_cfg.factorize_std)
    return InputOptions(
        **box,
        periodic=periodic_coordinates(model_cfg.periodic, domain.names),
        harmonics=model_cfg.periodic_harmonics,
        fourier_features=model_cfg.fourier_features,
        fourier_scale=model_cfg.fourier_scale,
        factorize=factorize if model_cfg.factorize else None,
    )


def _warn_of_aperiodic_constraint(model: HardConstraint, periods: Any, problem: Problem) -> None:
    """Log each coordinate the network is periodic in (`model.periodic`) along which the hard
    constraint's g or B is not: u = g + B N is then not periodic, whatever the network."""
    domain = problem.domain
    box = torch.tensor([domain.lower, domain.upper], dtype=torch.float64)
    generator = torch.Generator().manual_seed(0)
    points = box[0] + (box[1] - box[0]) * torch.rand(64, domain.dim, generator=generator)
    for index, period in periodic_coordinates(periods, domain.names).items():
        at_start = points.clone()
        at_start[:, index] = box[0, index]
        try:
            mismatch = periodic_mismatch(model, len(problem.outputs), index, period, at_start)
        except (RuntimeError, TypeError):  # a transform that runs only in the model's dtype
            return  # (it was tried there by `constrain`): nothing to tell from float64
        if mismatch is not None:
            name, (order, size) = domain.names[index], mismatch
            what = "values" if order == 0 else f"derivatives of order {order} in {name}"
            log.warning(
                "model.periodic makes the network periodic in %s (period %g), but the hard "
                "constraint u = g + B N is not: the %s of g or B differ by up to %.3g between "
                "%s = %g and %s = %g, so u has a kink there whatever the network; make g and B "
                "periodic in %s (e.g. an initial value that is), or hold that condition as a "
                "loss term instead",
                name,
                period,
                what,
                size,
                name,
                box[0, index].item(),
                name,
                box[0, index].item() + period,
                name,
            )


def _warn_of_unused_options(model_cfg: ModelSettings) -> None:
    """Log the options of pinn's networks set away from their defaults (by the command line or
    a problem's yaml) that a class of one's own does not get: only model.params reach it."""
    defaults = ModelSettings()
    unused = [
        f"model.{field.name}={getattr(model_cfg, field.name)!r}"
        for field in dataclasses.fields(ModelSettings)
        if field.name not in ("name", "params")
        and getattr(model_cfg, field.name) != getattr(defaults, field.name)
    ]
    if unused:
        log.warning(
            "%s have no effect on model.name=%s: a network class of your own gets only "
            "model.params (its keyword arguments), e.g. +model.params.width=64",
            ", ".join(unused),
            model_cfg.name,
        )


def periodic_coordinates(periods: Any, names: tuple[str, ...]) -> dict[int, float]:
    """`model.periodic` ({coordinate name: period}, or null) as {coordinate index: period}."""
    if periods is None:
        return {}
    if not isinstance(periods, dict):
        raise ConfigError(
            f"model.periodic must map coordinate names to periods, e.g. {{{names[0]}: 2.0}}, "
            f"got {periods!r}"
        )
    indices = {}
    for coordinate, period in periods.items():
        if coordinate not in names:
            raise ConfigError(
                f"model.periodic names {coordinate!r}, which is not a coordinate of the "
                f"problem's domain; its coordinates are {', '.join(names)}"
            )
        if not (is_finite_number(period) and period > 0):
            raise ConfigError(
                f"model.periodic.{coordinate} must be its period, a number > 0, got {period!r}"
            )
        indices[names.index(coordinate)] = float(period)
    return indices


def own_network(
    path: str, params: dict[str, Any], in_dim: int, out_dim: int, seed: int
) -> torch.nn.Module:
    """`module.Class(in_dim=d, out_dim=m, **model.params)` made under torch's global seed `seed`
    (the caller's random state kept), refused in one line unless it is an nn.Module mapping
    (N, d) points to (N, m) values."""
    module_name, _, class_name = path.rpartition(".")
    module = import_module_of(path, module_name, key="model.name")
    cls = getattr(module, class_name, None)
    if not (isinstance(cls, type) and issubclass(cls, torch.nn.Module)):
        raise ConfigError(
            f"model.name={path!r}: {module_name} has no torch.nn.Module subclass named "
            f"{class_name!r}"
        )
    check_params(cls, params, key="model.params", supplied=("in_dim", "out_dim"))
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        network = cls(in_dim=in_dim, out_dim=out_dim, **params)
    probe = torch.zeros(2, in_dim, dtype=next(network.parameters(), torch.zeros(())).dtype)
    try:
        shape = tuple(network(probe).shape)
    except Exception as error:
        raise ConfigError(
            f"model.name={path!r}: the network fails on points of shape (2, {in_dim}): "
            f"{type(error).__name__}: {error}"
        ) from error
    if shape != (2, out_dim):
        raise ConfigError(
            f"model.name={path!r}: the network maps points of shape (2, {in_dim}) to {shape}; "
            f"a pinn network maps (N, {in_dim}) points to (N, {out_dim}) values"
        )
    return network


def initial_guesses(guesses: Any) -> dict[str, Any] | None:
    """`problem.unknowns` of the config ({name: initial guess}), or None where it has none."""
    if guesses is None:
        return None
    if not isinstance(guesses, Mapping):
        raise ConfigError(
            f"problem.unknowns must map unknown names to initial guesses, e.g. "
            f"{{kappa: 1.0}}, got {guesses!r}"
        )
    return dict(guesses)


def laplacian_estimator(
    laplacian_cfg: LaplacianSettings, seed: int, device: torch.device
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
