"""Input embeddings: the box rescaling, an exactly periodic embedding of chosen coordinates, and
random Fourier features (so a network fits high frequencies quickly); `input_layers` chains the
ones a network asks for, the same way for every network.

    layers, width = input_layers(d, lower, upper, periodic={1: 2.0}, fourier_features=64, ...)
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import nn

from pinn.errors import ConfigError, is_finite_number, require_int
from pinn.nn.options import InputOptions


class FourierFeatures(nn.Module):
    """Maps x to [sin(2π x B), cos(2π x B)] (Tancik et al. 2020), optionally followed by x.

    B is a fixed random (d, n_features) matrix with independent N(0, scale²) entries. It is a
    buffer, not a parameter: it is never trained, moves with `.to()` and is saved in the state
    dict, so a reloaded model embeds exactly as before.

    Args:
        in_dim: d, the number of input coordinates.
        n_features: n, the number of random frequencies (columns of B).
        scale: standard deviation of B's entries; larger values mean higher frequencies.
        include_input: also pass x through unchanged, after the sines and cosines.
        generator: seeds B, so the same seed gives the same embedding.
        dtype: dtype of B (the default dtype if None); `.to(dtype)` converts it later.

    Shapes: (N, d) -> (N, out_dim), out_dim = 2 n, or 2 n + d with `include_input`.
    Put it first in an `nn.Sequential`, followed by `nn.Linear(embedding.out_dim, width)`.
    """

    def __init__(
        self,
        in_dim: int,
        n_features: int,
        scale: float = 1.0,
        include_input: bool = False,
        generator: torch.Generator | None = None,
        dtype: torch.dtype | None = None,
    ):
        super().__init__()
        require_int("FourierFeatures in_dim", in_dim, minimum=1)
        require_int("FourierFeatures n_features", n_features, minimum=1)
        if not (is_finite_number(scale) and scale > 0):
            raise ConfigError(
                f"FourierFeatures scale must be a positive finite number, got {scale!r}; "
                "it is the standard deviation of the random frequencies (try 1.0 to 10.0)"
            )
        self.in_dim = in_dim
        self.n_features = n_features
        self.scale = float(scale)
        self.include_input = include_input
        draw = torch.randn(in_dim, n_features, generator=generator, dtype=dtype)
        self.register_buffer("frequencies", draw * self.scale)

    @property
    def out_dim(self) -> int:
        """Width of the embedding: 2 n_features, plus in_dim with `include_input`."""
        return 2 * self.n_features + (self.in_dim if self.include_input else 0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(N, d) points -> (N, out_dim) features [sin, cos(, x)]."""
        if x.shape[-1] != self.in_dim:
            raise ValueError(
                f"FourierFeatures was built for {self.in_dim} input coordinates but got points "
                f"of shape {tuple(x.shape)}; build it with in_dim={x.shape[-1]}"
            )
        angles = x @ (2 * math.pi * self.frequencies)
        parts = [torch.sin(angles), torch.cos(angles)]
        if self.include_input:
            parts.append(x)
        return torch.cat(parts, dim=-1)

    def extra_repr(self) -> str:
        return (
            f"in_dim={self.in_dim}, n_features={self.n_features}, scale={self.scale}, "
            f"include_input={self.include_input}"
        )


class PeriodicEmbedding(nn.Module):
    """Replaces each periodic coordinate x_j (period P_j) by cos(k ω_j x_j), sin(k ω_j x_j),
    k = 1..harmonics, ω_j = 2π / P_j; the other coordinates pass through unchanged, first.

    Whatever follows sees x_j only through these, so the network is periodic in x_j with period
    P_j exactly, and so is every derivative of it. Both maps are fixed matrices (buffers): the
    pass-through a 0/1 selection, the phases a (d, n_periodic * harmonics) frequency matrix.

    Args:
        in_dim: d, the number of input coordinates.
        periods: {coordinate index: its period > 0}; at least one.
        harmonics: K >= 1, the multiples of each base frequency.

    The buffers are float64 (a period is then exact to float64 whatever the model's dtype) and
    cast to the points' dtype on use.

    Shapes: (N, d) -> (N, out_dim), out_dim = d - n_periodic + 2 n_periodic K.
    """

    def __init__(
        self,
        in_dim: int,
        periods: dict[int, float],
        harmonics: int = 1,
    ):
        super().__init__()
        require_int("PeriodicEmbedding in_dim", in_dim, minimum=1)
        require_int("model.periodic_harmonics", harmonics, minimum=1)
        if not periods:
            raise ConfigError("PeriodicEmbedding needs at least one periodic coordinate")
        for index, period in periods.items():
            if not (isinstance(index, int) and 0 <= index < in_dim):
                raise ConfigError(
                    f"PeriodicEmbedding: coordinate {index!r} is not one of 0..{in_dim - 1}"
                )
            if not (is_finite_number(period) and period > 0):
                raise ConfigError(
                    f"the period of coordinate {index} must be a positive finite number, "
                    f"got {period!r}"
                )
        self.in_dim, self.harmonics = in_dim, harmonics
        self.periods = {int(i): float(p) for i, p in sorted(periods.items())}
        kept = [j for j in range(in_dim) if j not in self.periods]
        select = torch.zeros(in_dim, len(kept), dtype=torch.float64)
        for column, j in enumerate(kept):
            select[j, column] = 1.0
        phases = torch.zeros(in_dim, len(self.periods) * harmonics, dtype=torch.float64)
        for row, (j, period) in enumerate(self.periods.items()):
            for k in range(harmonics):
                phases[j, row * harmonics + k] = 2 * math.pi * (k + 1) / period
        self.register_buffer("select", select)
        self.register_buffer("phases", phases)

    @property
    def out_dim(self) -> int:
        n_periodic = len(self.periods)
        return self.in_dim - n_periodic + 2 * n_periodic * self.harmonics

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(N, d) points -> (N, out_dim): [the other coordinates, cosines, sines]."""
        angles = x @ self.phases.to(x.dtype)
        kept = x @ self.select.to(x.dtype)
        return torch.cat([kept, torch.cos(angles), torch.sin(angles)], dim=-1)

    def extra_repr(self) -> str:
        return f"periods={self.periods}, harmonics={self.harmonics}"


class Rescale(nn.Module):
    """Maps the box [lower, upper] affinely onto [-1, 1]^d, where tanh-like layers work best.

    Not trained: the corners are buffers, so they move with `.to()` and live in the state dict.
    """

    def __init__(self, lower: Sequence[float], upper: Sequence[float]):
        super().__init__()
        lower_t = torch.tensor(lower, dtype=torch.float64)
        upper_t = torch.tensor(upper, dtype=torch.float64)
        self.register_buffer("center", (upper_t + lower_t) / 2)
        self.register_buffer("half_width", (upper_t - lower_t) / 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # The corners are kept in float64; cast so a float32 model stays float32.
        return (x - self.center.to(x.dtype)) / self.half_width.to(x.dtype)


def input_layers(
    in_dim: int, options: InputOptions, generator: torch.Generator | None = None
) -> tuple[list[nn.Module], int]:
    """The layers a network puts before its first dense layer, in this order, and their output
    width: `Rescale` of the box [lower, upper] (when both are given), `PeriodicEmbedding` of the
    coordinates in `periodic` ({index: period}, the periods in the coordinates' own units), then
    `FourierFeatures` (with the input passed on) when `fourier_features` > 0; `generator`
    draws the Fourier frequencies."""
    layers: list[nn.Module] = []
    lower, upper = options.lower, options.upper
    if options.rescaled:
        layers.append(Rescale(lower, upper))
    width = in_dim
    if options.periodic:
        # The rescaling stretches coordinate j by 2 / (upper_j - lower_j): so does its period.
        periods = {
            j: p * (2 / (upper[j] - lower[j]) if options.rescaled else 1.0)
            for j, p in options.periodic.items()
        }
        embedding = PeriodicEmbedding(width, periods, options.harmonics)
        layers.append(embedding)
        width = embedding.out_dim
    if options.fourier_features:
        features = FourierFeatures(
            width,
            options.fourier_features,
            options.fourier_scale,
            include_input=True,
            generator=generator,
        )
        layers.append(features)
        width = features.out_dim
    return layers, width
