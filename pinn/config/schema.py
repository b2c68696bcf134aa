"""The config's schema: a dataclass per block (Hydra structured configs), against which a
composed config is checked before any work, each mistake refused in one line.

    check_config(cfg)   # ConfigError naming an unknown key (and its closest match) or a wrong type

The fields' explanations live in the comments of conf/'s yaml files (`pinn.config.docs`);
here are only the names and types. `trainer` is `TrainSettings` itself, `windows`
`WindowSettings`.
"""

from __future__ import annotations

import dataclasses
import difflib
import types
import typing
from dataclasses import dataclass, field
from typing import Any  # noqa: UP035 (OmegaConf reads these)

from omegaconf import MISSING, DictConfig, OmegaConf
from omegaconf.errors import ConfigKeyError, OmegaConfBaseException

from pinn.errors import ConfigError
from pinn.training.settings import TrainSettings
from pinn.training.strategies.time_marching import WindowSettings


@dataclass
class ModelSchema:
    name: str = MISSING
    params: dict[str, Any] = field(default_factory=dict)
    width: int = MISSING
    depth: int = MISSING
    activation: str = MISSING
    input_scaling: str = MISSING
    fourier_features: int = MISSING
    fourier_scale: float = MISSING
    periodic: dict[str, float] | None = None
    periodic_harmonics: int = MISSING
    factorize: bool = MISSING
    factorize_mean: float = MISSING
    factorize_std: float = MISSING


@dataclass
class ProblemSchema:
    target: str = MISSING
    params: dict[str, Any] = field(default_factory=dict)
    n_interior: int = MISSING
    n_boundary: int = MISSING
    sampler: str = MISSING
    weights: dict[str, float] = field(default_factory=dict)
    unknowns: Any = None  # checked by Problem.attach_unknowns, which names the unknowns


@dataclass
class LaplacianSchema:
    method: str = MISSING
    samples: int = MISSING
    estimator: str = MISSING


@dataclass
class OutputsSchema:
    vtk: bool = MISSING
    plot_formats: list[str] = MISSING
    error_scale: str = MISSING


@dataclass
class DistributedSchema:
    timeout_s: float = MISSING


@dataclass
class RefinementSchema:
    method: str = MISSING
    every: int = MISSING
    candidates: int = MISSING
    add: int = MISSING
    k: float = MISSING
    c: float = MISSING


@dataclass
class ConfigSchema:
    seed: int = MISSING
    dtype: str = MISSING
    device: str = MISSING
    threads: int | None = None
    engine: str = MISSING
    laplacian: LaplacianSchema = field(default_factory=LaplacianSchema)
    resume: str | None = None
    overwrite: bool = False
    logger: str | None = None
    outputs: OutputsSchema = field(default_factory=OutputsSchema)
    distributed: DistributedSchema = field(default_factory=DistributedSchema)
    refinement: RefinementSchema = field(default_factory=RefinementSchema)
    windows: WindowSettings = field(default_factory=WindowSettings)
    model: ModelSchema = field(default_factory=ModelSchema)
    trainer: TrainSettings = field(default_factory=TrainSettings)
    problem: ProblemSchema = field(default_factory=ProblemSchema)


def check_config(cfg: DictConfig, docs: dict[str, str] | None = None) -> None:
    """Refuse `cfg` (a composed config, Hydra's own block aside) in one line unless every key is
    one of the schema's and every value has its field's type. `docs` ({key: explanation})
    completes a message about a value."""
    user = {k: v for k, v in OmegaConf.to_container(cfg, resolve=False).items() if k != "hydra"}
    try:
        merged = OmegaConf.merge(OmegaConf.structured(ConfigSchema), user)
    except OmegaConfBaseException as error:
        raise ConfigError(explain(error, docs or {})) from None
    unset = sorted(OmegaConf.missing_keys(merged))
    if unset:
        raise ConfigError(not_set(unset[0], docs or {}))


def not_set(full_key: str, docs: dict[str, str]) -> str:
    """`full_key` has no value (a `???` in the config, or a key no yaml gave)."""
    doc = docs.get(full_key)
    hint = f" ({full_key}: {doc})" if doc else ""
    return (
        f"{full_key} has no value{hint}; give it in the problem's yaml or on the command "
        f"line, {full_key}=<value>"
    )


def explain(error: OmegaConfBaseException, docs: dict[str, str]) -> str:
    """One line for an OmegaConf error about the config: the key, and what it should be."""
    full_key = str(getattr(error, "full_key", "") or getattr(error, "key", "") or "")
    if isinstance(error, ConfigKeyError) or "not in struct" in str(error):
        return unknown_key(full_key)
    message = str(error).splitlines()[0].strip()
    kind = field_type(full_key)
    doc = docs.get(full_key) or docs.get(full_key.rpartition(".")[0], "")
    hint = f" ({full_key}: {doc})" if doc else ""
    if typing.get_origin(kind) is list:  # OmegaConf's words ("AnyNode is not a ListConfig")
        example = LIST_EXAMPLES.get(full_key, "a,b")  # would only puzzle
        return f"{full_key} must be {describe(kind)} in brackets, e.g. {full_key}=[{example}]{hint}"
    return f"{full_key} must be {describe(kind)}: {message}{hint}"


# An example value of each list-valued key, for the message refusing a value that is no list.
LIST_EXAMPLES = {"trainer.phases": "adam,gauss_newton", "outputs.plot_formats": "png,pdf"}


def unknown_key(full_key: str) -> str:
    """`full_key` is no key of its block: say so, list the block's keys and the closest one."""
    block, _, key = full_key.rpartition(".")
    group, _, rest = full_key.partition(".")
    top_level = [f.name for f in dataclasses.fields(block_schema(""))]
    if group == "problem" and rest.split(".")[0] in top_level:  # its yaml read as the block
        return (
            f"unknown config key {full_key!r}: a yaml in conf/problem/ that gives "
            f"'{rest.split('.')[0]}:' must begin with the line '# @package _global_'; add it"
        )
    schema = block_schema(block)
    if schema is None:  # inside a free-form block (problem.params, problem.weights)
        return (
            f"{full_key} is not in the config yet; check its spelling (problem.weights names "
            "loss terms, problem.params the problem's constructor arguments), and add a key "
            f"the yaml does not give with a +: +{full_key}=<value>"
        )
    valid = [f.name for f in dataclasses.fields(schema)]
    if key in valid:  # a key of the schema that the config lacks
        return not_set(full_key, {})
    close = _closest(schema, key, valid)
    prefix = f"{block}." if block else ""
    where = f"the keys of {block} are" if block else "the top-level keys are"
    guess = f"; did you mean {prefix}{close[0]}?" if close else ""
    return f"unknown config key {full_key!r}: {where} {', '.join(valid)}{guess}"


def _closest(schema: type, key: str, valid: list[str]) -> list[str]:
    """The key of the block closest to `key`, or of a block inside it (in trainer, for
    lbfgs_steps: lbfgs.steps; for lr: adam.lr), as [] or [it]."""
    inner = {
        f"{name}.{leaf.name}": leaf.name
        for name, kind in field_types(schema).items()
        if dataclasses.is_dataclass(kind)
        for leaf in dataclasses.fields(kind)
    }
    close = difflib.get_close_matches(key, [*valid, *inner], n=1)
    return close or [dotted for dotted, leaf in inner.items() if leaf == key][:1]


def block_schema(block: str) -> type | None:
    """The dataclass of a dotted block ("" is the top level), None where it is not one."""
    schema: Any = ConfigSchema
    for part in filter(None, block.split(".")):
        schema = field_types(schema).get(part)
    return schema if dataclasses.is_dataclass(schema) else None


def field_type(full_key: str) -> Any:
    """The annotated type of a dotted key, or Any where the schema does not say."""
    block, _, key = full_key.rpartition(".")
    schema = block_schema(block)
    if schema is None:
        parent = field_type(block) if block else Any
        args = typing.get_args(parent)
        return args[-1] if typing.get_origin(parent) is dict and args else Any
    return field_types(schema).get(key, Any)


def field_types(schema: type) -> dict[str, Any]:
    return typing.get_type_hints(schema)


def describe(kind: Any) -> str:
    """A type in the user's words: "a whole number", "null or a whole number", ..."""
    names = {int: "a whole number", float: "a number", bool: "true or false", str: "a string"}
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if kind is Any:
        return "a value"
    if kind in names:
        return names[kind]
    if origin in (typing.Union, types.UnionType) and type(None) in args:
        inner = [a for a in args if a is not type(None)]
        return f"null or {describe(inner[0])}"
    if origin is dict:
        return f"a mapping of names to {describe(args[1]).removeprefix('a ')}s, e.g. {{name: 1.0}}"
    if origin is list:
        return f"a list of {describe(args[0]).removeprefix('a ')}s"
    return "a value"
