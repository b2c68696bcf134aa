"""The config: every key declared once, in the settings dataclass of its block, with its
default, type and help; composed by Hydra, checked once into a typed `RunConfig`.

    compose_config(overrides)      the config `python -m pinn <overrides>` runs (compose)
    check_config(cfg)              -> RunConfig, each mistake refused in one line (schema)
    RunConfig, ModelSettings,      the blocks only the run reads (schema); the others are
      ProblemSettings, ...           their layers' own (TrainSettings, Refinement, ...)
    key_reference, key_docs        every key with its default and help: --help, the docs (docs)
    CONF_DIR                       pinn's own config folder (locations)

Inside: defaults (every key's default handed to Hydra as `pinn_defaults`).
"""

from pinn.config.compose import compose_config, prepare_hydra
from pinn.config.docs import key_docs, key_reference
from pinn.config.locations import CONF_DIR
from pinn.config.schema import (
    DistributedSettings,
    LaplacianSettings,
    ModelSettings,
    OutputSettings,
    ProblemSettings,
    RunConfig,
    check_config,
)

__all__ = [
    "CONF_DIR",
    "DistributedSettings",
    "LaplacianSettings",
    "ModelSettings",
    "OutputSettings",
    "ProblemSettings",
    "RunConfig",
    "check_config",
    "compose_config",
    "key_docs",
    "key_reference",
    "prepare_hydra",
]
