"""The config's schema: a settings dataclass per block, each key declared once with its default,
type and one-line help (`pinn.settings.setting`), against which a composed config is checked
before any work, each mistake refused in one line.

    config = check_config(cfg)   # a typed RunConfig, or a ConfigError naming an unknown key (and
                                 # its closest match), a wrong type or a bad value

`trainer` is `TrainSettings` itself (its phases' blocks are theirs), `refinement` the geometry's
`Refinement`, `windows` time-marching's `WindowSettings`: the layer that uses a block declares
it; the blocks only the run reads are declared here. Hydra composes its defaults from these
dataclasses (`pinn.config.defaults`); `--help` and the documentation list them
(`pinn.config.docs`).
"""

from __future__ import annotations

import dataclasses
import difflib
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any  # noqa: UP035 (OmegaConf reads these)

from omegaconf import MISSING, DictConfig, OmegaConf
from omegaconf.errors import ConfigKeyError, OmegaConfBaseException

from pinn.errors import ConfigError
from pinn.geometry.refinement import Refinement
from pinn.outputs import check_loggers
from pinn.plots.files import PlotOptions
from pinn.settings import setting
from pinn.training.settings import TrainSettings, check_refinement
from pinn.training.strategies.time_marching import WindowSettings


@dataclass
class ModelSettings:
    """The block `model`: the network and the options every pinn network shares."""

    name: str = setting(
        "mlp",
        "mlp, modified_mlp, pirate, or a network class of yours by import path: my_nets.Siren",
    )
    params: dict[str, Any] = setting(
        help="a class of yours: keyword arguments besides in_dim and out_dim", factory=dict
    )
    width: int = setting(32, "neurons per hidden layer")
    depth: int = setting(
        3, "number of hidden layers (pirate: residual blocks of three layers each)"
    )
    activation: str = setting("tanh", "tanh, sin, sigmoid, softplus, silu or gelu")
    input_scaling: str = setting(
        "auto",
        "box (the domain's bounding box to [-1, 1]), none, or auto: box, but none for sin",
    )
    periodic: dict[str, float] | None = setting(
        None, "{coordinate: period}: exactly periodic in those coordinates, e.g. {x: 2.0}"
    )
    periodic_harmonics: int = setting(
        1, "multiples k of each periodic coordinate's frequency: cos, sin of k 2π x / period"
    )
    fourier_features: int = setting(0, "random Fourier features before the first layer (0 = none)")
    fourier_scale: float = setting(1.0, "standard deviation of their frequencies")
    factorize: bool = setting(
        False, "random weight factorisation: every weight row exp(s) times a direction"
    )
    factorize_mean: float = setting(
        1.0, "the log-scales s start ~ N(factorize_mean, factorize_std²)"
    )
    factorize_std: float = setting(0.1, "their standard deviation at the start (jaxpi: 0.1)")


@dataclass
class ProblemSettings:
    """The block `problem`: what a problem's yaml (conf/problem/<name>.yaml) does not set."""

    target: str = setting(
        MISSING,
        "the Problem class, as an importable path: module.Class (every problem's yaml sets it)",
    )
    params: dict[str, Any] = setting(
        help="keyword arguments for its constructor (checked against its signature)",
        factory=dict,
    )
    n_interior: int = setting(2000, "interior points per draw (per process under torchrun)")
    n_boundary: int = setting(
        200,
        "boundary points per draw, on the parts the conditions use, shared by measure "
        "(0: none, for a problem without boundary terms)",
    )
    boundary_points: dict[str, Any] = setting(
        help="points aimed at boundary parts, {part: count (>= 1) or share of n_boundary (in "
        "(0, 1))}, e.g. {hole: 600, outer: 0.1}; the other used parts share the rest by measure",
        factory=dict,
    )
    sampler: str = setting("sobol", "uniform, sobol or lhs")
    weights: dict[str, float] = setting(
        help="loss weight per term, e.g. {dirichlet: 100}; a term not named weighs 1",
        factory=dict,
    )
    # checked by Problem.attach_unknowns, which names the unknowns
    unknowns: Any = setting(
        None, "inverse problems: {name: initial guess} for the unknowns it declares"
    )


@dataclass
class LaplacianSettings:
    """The block `laplacian`: how u.laplacian() is computed in residuals."""

    method: str = setting(
        "exact", "exact, or stochastic: an unbiased estimate from random directions (Adam only)"
    )
    samples: int = setting(
        16, "stochastic: directions per point; the variance falls like 1/samples"
    )
    estimator: str = setting(
        "sparse", "stochastic: sparse (random coordinates), rademacher or gaussian (Hutchinson)"
    )


@dataclass
class OutputSettings:
    """The block `outputs`: what a run logs as it goes, and what it writes at its end besides
    metrics.json, history.csv and prediction.npz (`pinn.outputs`)."""

    loggers: list[str] = setting(
        help="called at every history row, in order: history (history.csv as the run goes), "
        'tensorboard (<run dir>/tensorboard/; pip install "pinn-torch[tensorboard]")',
        factory=lambda: ["history"],
    )
    vtk: bool = setting(
        False, "true: prediction.vtu for ParaView (space-time: vtk/*.vtu, prediction.vtu.series)"
    )
    plot_formats: list[str] = setting(
        help="solution and loss plots in each of these formats: png, pdf, svg",
        factory=lambda: ["png"],
    )
    error_scale: str = setting(
        "linear", "colour scale of the |error| maps: linear, or log (zero errors at its bottom)"
    )

    def __post_init__(self):
        check_loggers(self.loggers)
        self.plot_options()

    def plot_options(self) -> PlotOptions:
        """The formats and error scale of the run's figures, checked."""
        return PlotOptions.from_config(vars(self))


@dataclass
class DistributedSettings:
    """The block `distributed`: `torchrun --nproc_per_node=N -m pinn ...` trains over N
    processes."""

    timeout_s: float = setting(
        300.0, "a process waiting longer for the others (one died or hangs) ends the run"
    )


@dataclass
class RunConfig:
    """The whole config of a run, `python -m pinn` and `pinn.train(cfg)` alike."""

    seed: int = setting(0, "seeds the network's initialisation and the point sampler")
    dtype: str = setting("float64", "float32 or float64")
    device: str = setting("cpu", "any torch device string: cpu, cuda, cuda:1")
    threads: int | None = setting(None, "torch CPU threads; null keeps torch's default")
    engine: str = setting("auto", "residual engine: auto, taylor, autograd or functorch")
    laplacian: LaplacianSettings = setting(
        help="how u.laplacian() is computed in residuals", factory=LaplacianSettings
    )
    resume: str | None = setting(
        None,
        "an earlier run's directory: continue it from its checkpoint.pt (same config, but the "
        "L-BFGS and Gauss-Newton budgets may change)",
    )
    overwrite: bool = setting(
        False, "true: replace the results of another run in this run directory (else refused)"
    )
    outputs: OutputSettings = setting(
        help="what a finished run writes besides metrics.json, history.csv, prediction.npz",
        factory=OutputSettings,
    )
    distributed: DistributedSettings = setting(
        help="torchrun --nproc_per_node=N -m pinn ... trains over N processes",
        factory=DistributedSettings,
    )
    problem: ProblemSettings = setting(
        help="what a problem's yaml (conf/problem/<name>.yaml) does not set",
        factory=ProblemSettings,
    )
    refinement: Refinement = setting(
        help="residual-based adaptive sampling of the interior points (RAR, RAD), in each "
        "phase at its refine_every",
        factory=Refinement,
    )
    windows: WindowSettings = setting(
        help="time-marching: train a time-dependent problem window by window",
        factory=WindowSettings,
    )
    model: ModelSettings = setting(help="the network", factory=ModelSettings)
    trainer: TrainSettings = setting(help="how to train: the phases in turn", factory=TrainSettings)

    def __post_init__(self) -> None:
        # Blocks checked together: the phases refine by the refinement group's method.
        if isinstance(self.trainer, TrainSettings) and isinstance(self.refinement, Refinement):
            check_refinement(self.trainer, self.refinement.method)


def check_config(cfg: DictConfig, docs: dict[str, str] | None = None) -> RunConfig:
    """`cfg` (a composed config, Hydra's own block aside) as a typed `RunConfig`, each block
    its settings dataclass, every value checked by it; refused in one line unless every key is
    one of the schema's, every value has its field's type and passes its block's checks.
    `docs` ({key: explanation}) completes a message about a value."""
    user = {k: v for k, v in OmegaConf.to_container(cfg, resolve=True).items() if k != "hydra"}
    try:
        merged = OmegaConf.merge(OmegaConf.structured(RunConfig), user)
    except OmegaConfBaseException as error:
        raise ConfigError(explain(error, docs or {})) from None
    unset = sorted(OmegaConf.missing_keys(merged))
    if unset:
        raise ConfigError(not_set(unset[0], docs or {}))
    return OmegaConf.to_object(merged)  # each block's __post_init__ checks its values


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
LIST_EXAMPLES = {
    "trainer.phases": "adam,gauss_newton",
    "outputs.plot_formats": "png,pdf",
    "outputs.loggers": "history,tensorboard",
}

# Keys of earlier versions, and where each went: {old key: what to write now}.
MOVED_KEYS = {
    "logger": "outputs.loggers=[history,tensorboard] (logger=tensorboard before 0.2)",
    "refinement.every": "trainer.adam.refine_every=<steps> (each phase has its own interval "
    "now: trainer.lbfgs.refine_every, trainer.bfgs.refine_every, "
    "trainer.gauss_newton.refine_every; 0 = never)",
}


def upgraded(saved: Mapping[str, Any]) -> dict[str, Any]:
    """A saved run's config (a plain dict) with the keys of earlier versions in their places
    now (`MOVED_KEYS`), what it computed unchanged: `logger: <name>` becomes `outputs.loggers`
    [history, <name>]; `refinement.every` becomes `trainer.adam.refine_every` where the run
    refined its points (only Adam did), and goes where it did not (it changed nothing)."""
    config = dict(saved)
    if "logger" in config:
        name = config.pop("logger")
        loggers = ["history"] if name is None else ["history", name]
        config["outputs"] = {**config.get("outputs", {}), "loggers": loggers}
    refinement = config.get("refinement")
    if isinstance(refinement, Mapping) and "every" in refinement:
        refinement = dict(refinement)
        every = refinement.pop("every")
        config["refinement"] = refinement
        if refinement.get("method", "none") != "none":
            trainer = dict(config.get("trainer") or {})
            trainer["adam"] = {**(trainer.get("adam") or {}), "refine_every": every}
            config["trainer"] = trainer
    return config


def unknown_key(full_key: str) -> str:
    """`full_key` is no key of its block: say so, list the block's keys and the closest one."""
    if full_key in MOVED_KEYS:
        return f"config key {full_key!r} has moved: write {MOVED_KEYS[full_key]}"
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
    same = [dotted for dotted, leaf in inner.items() if leaf == key]  # the first block's first
    return same[:1] or difflib.get_close_matches(key, [*valid, *inner], n=1)


def block_schema(block: str) -> type | None:
    """The dataclass of a dotted block ("" is the top level), None where it is not one."""
    schema: Any = RunConfig
    for part in filter(None, block.split(".")):
        schema = field_types(schema).get(part)
    return schema if dataclasses.is_dataclass(schema) else None


def field_type(full_key: str) -> Any:
    """The annotated type of a dotted key, or Any where the schema does not say."""
    block, _, key = full_key.rpartition(".")
    schema = block_schema(block)
    if schema is None:
        parent = _without_none(field_type(block)) if block else Any
        args = typing.get_args(parent)
        return args[-1] if typing.get_origin(parent) is dict and args else Any
    return field_types(schema).get(key, Any)


def _without_none(kind: Any) -> Any:
    """`kind` without its None: dict[str, float] for dict[str, float] | None."""
    if typing.get_origin(kind) in (typing.Union, types.UnionType):
        inner = [a for a in typing.get_args(kind) if a is not type(None)]
        return inner[0] if len(inner) == 1 else kind
    return kind


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
