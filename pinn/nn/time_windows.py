"""A model made of one network per time window: what a time-marching run trains (`windows.count`).

    model = TimeWindows([net0, net1, net2], edges=[0.0, 0.3, 0.6, 1.0], axis=1)
    model(x)   # net_k(x) where edges[k] <= t < edges[k + 1] (the last window includes its end)

It is pointwise, so every residual engine differentiates it: each point's value and
derivatives are those of the network of its window.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from pinn.errors import ConfigError


class TimeWindows(nn.Module):
    """u(x) = models[k](x) for the window k whose interval [edges[k], edges[k + 1]) holds x's
    time coordinate `x[:, axis]`; times before the first edge take the first window's network,
    times after the last the last one's.

    Args:
        models: one network per window, each mapping (N, d) points to (N, m) values.
        edges: len(models) + 1 increasing times.
        axis: the time coordinate's column.
    """

    def __init__(self, models: Sequence[nn.Module], edges: Sequence[float], axis: int):
        super().__init__()
        edges = [float(e) for e in edges]
        if len(edges) != len(models) + 1 or any(b <= a for a, b in zip(edges, edges[1:])):
            raise ConfigError(
                f"TimeWindows needs {len(models) + 1} increasing edges for {len(models)} "
                f"models, got {edges}"
            )
        self.models, self.edges, self.axis = nn.ModuleList(models), edges, axis

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(N, m) the values at the (N, d) points x."""
        time = x[:, self.axis : self.axis + 1]
        values = self.models[0](x)
        # Each later window overrides from its start on: one where per window, pointwise.
        for model, start in zip(self.models[1:], self.edges[1:-1]):
            values = torch.where(time >= start, model(x), values)
        return values
