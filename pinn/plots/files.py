"""The files of a run's plots: the formats (`outputs.plot_formats`) and the |error| maps' scale
(`outputs.error_scale`) as a `PlotOptions`, checked before training, and `save_figure`, which
writes a figure in each format."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from matplotlib import rc_context
from matplotlib.figure import Figure

from pinn.errors import ConfigError
from pinn.plots.parts import ERROR_SCALES

PLOT_FORMATS = ("png", "pdf", "svg")
DPI = 110  # of a PNG, and of the maps rasterised inside a PDF or SVG


@dataclass(frozen=True)
class PlotOptions:
    """How a run's plots are written: `formats` (each of `PLOT_FORMATS`) and the |error| maps'
    `error_scale` ("linear" or "log")."""

    formats: tuple[str, ...] = ("png",)
    error_scale: str = "linear"

    def __post_init__(self):
        for name in self.formats:
            if name not in PLOT_FORMATS:
                raise ConfigError(
                    f"outputs.plot_formats: {name!r} is not a plot format; choose from "
                    f"{', '.join(PLOT_FORMATS)}, e.g. outputs.plot_formats=[png,pdf]"
                )
        if self.error_scale not in ERROR_SCALES:
            raise ConfigError(
                f"outputs.error_scale={self.error_scale!r} is unknown; choose "
                f"{' or '.join(ERROR_SCALES)}"
            )

    @classmethod
    def from_config(cls, outputs: Mapping | None) -> PlotOptions:
        """From the config's `outputs:` block (defaults for missing keys); a single format may
        be given as a string. Raises ConfigError for an unknown format or scale."""
        outputs = outputs or {}
        formats = outputs.get("plot_formats", ["png"])
        if isinstance(formats, str):
            formats = [formats]
        if not isinstance(formats, Sequence):
            raise ConfigError(
                f"outputs.plot_formats must be a list of formats such as [png,pdf], got {formats!r}"
            )
        unique = tuple(dict.fromkeys(str(name).lower() for name in formats))
        return cls(unique, str(outputs.get("error_scale", "linear")))


def save_figure(figure: Figure, stem: str | Path, formats: Sequence[str] = ("png",)) -> list[Path]:
    """Write `figure` to `<stem>.<format>` for each format; returns the paths written."""
    paths = [Path(f"{stem}.{name}") for name in formats]
    # TrueType fonts in a PDF (matplotlib's default, Type 3, is refused by many journals); the
    # setting holds for these calls only.
    with rc_context({"pdf.fonttype": 42}):
        for path in paths:
            figure.savefig(path, dpi=DPI)
    return paths
