"""Figures of a run: the solution next to the exact one and its error, and the loss history."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from pathlib import Path

import torch

# Figure without pyplot: no GUI backend is chosen or changed, so this works on headless machines
# and leaves a notebook's inline backend alone.
from matplotlib.figure import Figure

from pinn.field import Model
from pinn.problem import Problem
from pinn.validation import predict
from pinn.weighting import WEIGHT_PREFIX

_NON_TERMS = {"step", "phase", "lr", "rel_l2", "time_s"}


def plot_solution(
    problem: Problem, model: Model, path: str | Path, n_per_dim: int = 101, out: int = 0
) -> None:
    """Write predicted, exact and |error| side by side (without an exact solution, predicted).

    2-D domains are drawn as colour maps; 1-D as curves; higher dimensions as the slice
    through the centre of the box in the first two coordinates.
    """
    domain = problem.domain
    dtype = next(_parameters(model), torch.zeros(())).dtype
    device = next(_parameters(model), torch.zeros(())).device
    axes_1d = [
        torch.linspace(lo, hi, n_per_dim, dtype=dtype, device=device)
        for lo, hi in zip(domain.lower[:2], domain.upper[:2])
    ]
    if domain.dim == 1:
        points = axes_1d[0][:, None]
    else:
        first, second = torch.meshgrid(axes_1d[0], axes_1d[1], indexing="ij")
        points = torch.stack([first.reshape(-1), second.reshape(-1)], dim=1)
        centre = [(lo + hi) / 2 for lo, hi in zip(domain.lower[2:], domain.upper[2:])]
        if centre:
            fixed = torch.tensor(centre, dtype=dtype, device=device).expand(len(points), -1)
            points = torch.cat([points, fixed], dim=1)
    panels = {"predicted": predict(model, points)[:, out]}
    if problem.has_exact:
        exact = problem.exact(points)
        panels["exact"] = exact if exact.ndim == 1 else exact[:, out]
        panels["|error|"] = (panels["predicted"] - panels["exact"]).abs()
    label = problem.outputs[out]
    figure = Figure(figsize=(4.6 * len(panels), 3.8))
    axes = figure.subplots(1, len(panels), squeeze=False)
    for axis, (title, values) in zip(axes[0], panels.items()):
        values = values.detach().cpu().double().numpy()
        if domain.dim == 1:
            axis.plot(points[:, 0].cpu().numpy(), values)
            axis.set_xlabel(domain.names[0])
        else:
            image = axis.pcolormesh(
                axes_1d[0].cpu().numpy(),
                axes_1d[1].cpu().numpy(),
                values.reshape(n_per_dim, n_per_dim).T,
                shading="auto",
                cmap="magma" if title == "|error|" else "viridis",
            )
            figure.colorbar(image, ax=axis)
            axis.set_xlabel(domain.names[0])
            axis.set_ylabel(domain.names[1])
            axis.set_aspect("equal")
        axis.set_title(f"{title} {label}")
    figure.tight_layout()
    figure.savefig(path, dpi=110)


def loss_columns(row: dict, skip: Collection[str] = ()) -> list[str]:
    """The columns of a history row that hold the loss or a loss term, in order.

    Left out: the bookkeeping (step, phase, lr, rel_l2, time_s), the loss weights
    (`weight_<term>`, `pinn.weighting`) and the names in `skip` (a problem's unknowns).
    """
    return [
        key
        for key in row
        if key not in _NON_TERMS and not key.startswith(WEIGHT_PREFIX) and key not in skip
    ]


def plot_loss(history: Sequence[dict], path: str | Path, skip: Collection[str] = ()) -> None:
    """Write the loss and each loss term against the step, log scale, one line per term.

    `skip`: columns that are neither (a problem's unknowns); see `loss_columns`.
    """
    figure = Figure(figsize=(6.4, 4.2))
    axis = figure.subplots()
    names = loss_columns(history[0], skip) if history else []
    steps = [row["step"] for row in history]
    for name in names:
        axis.semilogy(
            steps,
            [row[name] for row in history],
            label=name,
            linewidth=2.0 if name == "loss" else 1.2,
        )
    axis.set_xlabel("step")
    axis.set_ylabel("mean-square residual")
    axis.set_title("training loss")
    axis.legend()
    axis.grid(True, which="both", alpha=0.3)
    figure.tight_layout()
    figure.savefig(path, dpi=110)


def _parameters(model: Model):
    return model.parameters() if hasattr(model, "parameters") else iter(())
