"""A config composed as `python -m pinn <overrides>` composes it, from a notebook or a test.

cfg = compose_config(["problem=poisson", "trainer.adam.steps=200"])
config = check_config(cfg)     # the typed RunConfig a run reads (pinn.config.schema)
"""

from __future__ import annotations

from pathlib import Path

from omegaconf import DictConfig

from pinn.config.defaults import register_defaults
from pinn.config.docs import register_help
from pinn.config.locations import CONF_DIR, user_conf_overrides


def prepare_hydra(conf_dir: str | Path = CONF_DIR, user_dir: str | Path | None = None) -> None:
    """What conf/config.yaml's defaults list names besides files: `pinn_defaults` (every key's
    default) and `hydra/help=pinn` (listing `user_dir`'s problems too)."""
    register_defaults()
    register_help(conf_dir, user_dir)


def compose_config(
    overrides: list[str] | None = None, config_dir: str | Path = CONF_DIR
) -> DictConfig:
    """The config `python -m pinn <overrides>` would run, composed without starting a run:
    pinn's configs (or `config_dir`'s), then the working directory's conf/
    (`pinn.config.locations`)."""
    from hydra import compose, initialize_config_dir

    prepare_hydra(config_dir)
    config_dir = Path(config_dir).resolve()
    overrides = list(overrides or [])
    overrides += user_conf_overrides(overrides, library=config_dir)
    with initialize_config_dir(config_dir=str(config_dir), version_base="1.3"):
        return compose(config_name="config", overrides=overrides)
