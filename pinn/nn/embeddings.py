"""Input embeddings: random Fourier features, so an MLP can fit high frequencies quickly."""

from __future__ import annotations

import math

import torch
from torch import nn

from pinn.errors import ConfigError, require_int


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
        if not (isinstance(scale, (int, float)) and math.isfinite(scale) and scale > 0):
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
