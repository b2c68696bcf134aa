"""The steady incompressible Navier-Stokes equations in two dimensions, for the flow problems
(kovasznay, cavity, cylinder): velocity (u, v) and pressure p, density 1, kinematic viscosity ν.

u u_x + v u_y + p_x - ν (u_xx + u_yy) = 0
u v_x + v v_y + p_y - ν (v_xx + v_yy) = 0
u_x + v_y = 0
"""

import torch

from pinn import Field


def steady_residuals(u: Field, viscosity: float) -> dict[str, torch.Tensor]:
    """{"momentum_x", "momentum_y", "continuity"}: (N,) each, for a field with the outputs
    u, v, p over the inputs x, y."""
    vx, vy = u("u"), u("v")

    def momentum(out: str, pressure_axis: str) -> torch.Tensor:
        advection = vx * u.d("x", out) + vy * u.d("y", out)
        return advection + u.d(pressure_axis, "p") - viscosity * u.laplacian(out)

    return {
        "momentum_x": momentum("u", "x"),
        "momentum_y": momentum("v", "y"),
        "continuity": u.d("x", "u") + u.d("y", "v"),
    }
