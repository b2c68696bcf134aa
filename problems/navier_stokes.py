"""The incompressible Navier-Stokes equations, for the flow problems: steady in two dimensions
(kovasznay, cavity, cylinder), velocity (u, v) and pressure p, density 1, kinematic viscosity ν,

u u_x + v u_y + p_x - ν (u_xx + u_yy) = 0
u v_x + v v_y + p_y - ν (v_xx + v_yy) = 0
u_x + v_y = 0

and unsteady in three (beltrami, `unsteady_residuals`): velocity (u, v, w), time t.
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


def force_integrands(
    u: Field, test: torch.Tensor, test_gradient: torch.Tensor, viscosity: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """(N,) x and (N,) y integrands whose integrals over the fluid are the force of the fluid
    on a body, F = ∮ σ n_body ds, σ = -p I + ν (∇u + ∇uᵀ), computed as a volume integral.

    test: (N,) a function w equal to 1 on the body's surface and 0 on every other boundary;
    test_gradient: (N, 2) its gradient. Momentum (u·∇)u = ∇·σ, times w, integrated by parts:
    F_k = -∫ [((u·∇)u)_k w + σ_kj ∂_j w] dx. For an exact solution this is the surface
    integral; for a trained network it differs by ∫ w times the momentum residual, and it
    reads the force from the flow around the body rather than from the derivatives at its wall
    alone (a PINN's least accurate ones). Finite elements compute benchmark forces this way
    (John 2004, "Reference values for drag and lift of a two-dimensional time-dependent flow
    around a cylinder", Int. J. Numer. Meth. Fluids 44, 777-788).
    """
    speed_u, speed_v, p = u("u"), u("v"), u("p")
    u_x, u_y, v_x, v_y = u.d("x", "u"), u.d("y", "u"), u.d("x", "v"), u.d("y", "v")
    shear = viscosity * (u_y + v_x)
    w_x, w_y = test_gradient[:, 0], test_gradient[:, 1]
    force_x = (
        (speed_u * u_x + speed_v * u_y) * test + (-p + 2 * viscosity * u_x) * w_x + shear * w_y
    )
    force_y = (
        (speed_u * v_x + speed_v * v_y) * test + shear * w_x + (-p + 2 * viscosity * v_y) * w_y
    )
    return -force_x, -force_y


def unsteady_residuals(
    u: Field,
    viscosity: float,
    axes: tuple[str, ...] = ("x", "y", "z"),
    velocity: tuple[str, ...] = ("u", "v", "w"),
    time: str = "t",
) -> dict[str, torch.Tensor]:
    """{"momentum_<axis>" for each axis, "continuity"}: (N,) each, the unsteady incompressible
    equations in any dimension (3-D by default, for `beltrami`), density 1:

        ∂u_i/∂t + Σ_j u_j ∂u_i/∂x_j + ∂p/∂x_i - ν Δu_i = 0,    Σ_i ∂u_i/∂x_i = 0

    for a field with the outputs `velocity` (one per axis) and p over the inputs `axes` and
    `time` (a SpaceTime: `u.laplacian` sums over the space alone)."""
    speeds = [u(name) for name in velocity]

    def momentum(out: str, axis: str) -> torch.Tensor:
        advection = sum(s * u.d(a, out) for s, a in zip(speeds, axes))
        return u.d(time, out) + advection + u.d(axis, "p") - viscosity * u.laplacian(out)

    terms = {f"momentum_{axis}": momentum(out, axis) for out, axis in zip(velocity, axes)}
    terms["continuity"] = sum(u.d(axis, out) for out, axis in zip(velocity, axes))
    return terms
