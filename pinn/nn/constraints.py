"""Hard constraints: u = g(x) + B(x) N(x), a network whose output satisfies Dirichlet exactly.

    model = HardConstraint(network, problem.hard_constraint)

With B = 0 where u = g is prescribed, every output of `model` meets that condition whatever the
weights, so the condition leaves the loss and stops competing with the PDE residual.

Every residual engine differentiates through the transform like through any other module:
the forward Taylor pass traces g, B and the network together and carries the product rule
through each operation, with no separate pass for the transform.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from pinn.derivatives.functions import derivative
from pinn.errors import ConfigError

Tensor = torch.Tensor
# (N, d) points -> (g, B), each (N,) or (N, m) (a single column serves every output).
Transform = Callable[[Tensor], tuple[Tensor, Tensor]]


class HardConstraint(nn.Module):
    """u(x) = g(x) + B(x) * network(x), (N, d) -> (N, m).

    Args:
        network: the trained model N, pointwise, (N, d) -> (N, m).
        transform: x -> (g, B), pointwise functions of the points built from torch
            operations (torch.func differentiates them), each (N,), (N, 1) or (N, m).
    """

    def __init__(self, network: nn.Module, transform: Transform):
        super().__init__()
        self.network = network
        self.transform = transform

    def forward(self, x: Tensor) -> Tensor:
        outputs = self.network(x)
        shift, scale = self.parts(x, outputs.shape[-1])
        return shift + scale * outputs

    def parts(self, x: Tensor, n_outputs: int) -> tuple[Tensor, Tensor]:
        """(g, B) at the (N, d) points, each (N, 1) or (N, m), checked."""
        result = self.transform(x)
        if not (isinstance(result, tuple) and len(result) == 2):
            raise ConfigError(
                f"hard_constraint(x) must return a pair (g, B), got {type(result).__name__}"
            )
        return tuple(_as_columns(name, part, x, n_outputs) for name, part in zip("gB", result))


def _as_columns(name: str, part: object, x: Tensor, n_outputs: int) -> Tensor:
    if not isinstance(part, Tensor):
        part = torch.as_tensor(part, dtype=x.dtype, device=x.device).expand(x.shape[0])
    if part.ndim == 1:
        part = part[:, None]
    if part.ndim != 2 or part.shape[0] != x.shape[0] or part.shape[1] not in (1, n_outputs):
        raise ConfigError(
            f"hard_constraint: {name} must have shape (N,), (N, 1) or (N, {n_outputs}) for "
            f"(N, d) = {tuple(x.shape)} points, got {tuple(part.shape)}"
        )
    return part


def constrain(network: nn.Module, transform: Transform, probe: Tensor) -> nn.Module:
    """`network` inside `HardConstraint(network, transform)`, or itself where the transform
    returns None (a problem without a hard constraint: `Problem.hard_constraint`).

    `probe`: a few (n, d) points at which the transform is tried once, so a wrong shape is
    reported before any training.
    """
    probe = probe.to(next(network.parameters()).dtype)
    with torch.no_grad():
        if transform(probe) is None:
            return network
        model = HardConstraint(network, transform)
        model(probe)
    return model


def periodic_mismatch(
    model: HardConstraint,
    n_outputs: int,
    index: int,
    period: float,
    points: Tensor,
    orders: int = 2,
) -> tuple[int, float] | None:
    """Where g or B of a hard constraint (of `n_outputs` outputs) is not periodic along
    coordinate `index`: compares them and their derivatives along it up to `orders` at the
    (M, d) `points` and at the points shifted by `period`, in float64. Returns (the lowest order
    that differs, by how much at most), or None where they agree to 1e-8 of their size. A
    network periodic in that coordinate gives a u = g + B N that is not periodic where they
    differ (a kink at the ends for order 1)."""
    points = points.to(torch.float64)
    shifted = points.clone()
    shifted[:, index] += period
    left, right = (_along(model, p, index, n_outputs, orders) for p in (points, shifted))
    for order in range(orders + 1):
        difference = (left[order] - right[order]).abs().max().item()
        size = max(left[order].abs().max().item(), right[order].abs().max().item(), 1.0)
        if difference > 1e-8 * size:
            return order, difference
    return None


def _along(model: HardConstraint, x: Tensor, index: int, n_outputs: int, orders: int):
    """[(M, 2m) g and B side by side, then their derivatives along x_index, orders 1..orders]."""

    def g_and_b(points: Tensor) -> Tensor:
        g, scale = model.parts(points, n_outputs)
        return torch.cat([g.expand(-1, n_outputs), scale.expand(-1, n_outputs)], dim=1)

    with torch.enable_grad():
        derivatives = [derivative(g_and_b, x, index, n, "autograd") for n in range(1, orders + 1)]
        return [g_and_b(x).detach()] + [d.detach() for d in derivatives]
