"""Beltrami flow: unsteady incompressible Navier-Stokes in three dimensions, exact in closed form
(Ethier & Steinman 1994, "Exact fully 3D Navier-Stokes solutions for benchmarking", Int. J.
Numer. Meth. Fluids 19, 369-375).

u_t + (u·∇)u + ∇p - ν Δu = 0,   ∇·u = 0      on [-1, 1]³ x [0, 1], u = (u, v, w), density 1
u(x, 0) and u on the six faces those of the exact solution, p on the six faces likewise, with
the decay e^(-ν d² t) and (x1, x2, x3) cycled through (x, y, z), (y, z, x), (z, x, y) for
(u, v, w):
    u_1 = -a [e^(a x1) sin(a x2 + d x3) + e^(a x3) cos(a x1 + d x2)] e^(-ν d² t)
    p = -a²/2 Σ_cycles [e^(2a x1) + 2 sin(a x1 + d x2) cos(a x3 + d x1) e^(a (x2 + x3))]
        e^(-2ν d² t)

The velocity is a Beltrami field (parallel to its vorticity), so the advection is a gradient the
pressure balances, and each component decays as the heat equation would. a = π/4, d = π/2, ν = 1
(Re = 1) are Ethier & Steinman's (`params`); Urbán, Stefanou & Pons's example (self-scaled
quasi-Newton, J. Comput. Phys. 2025) takes a = d = 1 on the same domain, with Re = 1.

Conditions, held exactly (u = g + B N, no boundary points, no weights to balance, as Urbán et
al. do): the velocity by g = u(x, 0) + P[u(·, t) - u(·, 0)], P the transfinite interpolation
on the cube's faces (`pinn.problems.transfinite`), and B = t (1 - x²)(1 - y²)(1 - z²), which
vanishes at t = 0 and on every face; g reads the exact solution only at t = 0 and on the faces.

The pressure is fixed by the equations only up to a function of time; it is held on the six
faces too, g = P[p(·, t)] and B = (1 - x²)(1 - y²)(1 - z²) (no condition at t = 0: p is not
evolved). That is more data than the velocity needs, but the exact solution's, so consistent;
it fixes the function of time, so p is compared as it is (no `up_to_constant`, which would
remove one constant for all times). Held on one face only (x = -1), p's error grew linearly
with the distance from it, the integral of the momentum residual: rel_l2 2.6e-3 for p where
u, v, w were at 1.6e-4 (docs, the problem library).
"""

from math import pi

import torch

from pinn import Box, Field, Problem, SpaceTime, require_positive
from pinn.problems.navier_stokes import unsteady_residuals
from pinn.problems.transfinite import face_blend

Tensor = torch.Tensor
LOWER, UPPER, DURATION = -1.0, 1.0, 1.0


class Beltrami(Problem):
    """3-D unsteady Navier-Stokes for (u, v, w, p) on [-1, 1]³ x [0, 1]: Ethier & Steinman's
    Beltrami flow, velocity held on the faces and at t = 0, pressure on the faces.

    Args:
        a: the flow's spatial rate (> 0; π/4 by default).
        d: its rotation rate (> 0; π/2): the velocity decays like e^(-ν d² t).
        viscosity: ν (> 0; 1, so Re = 1).
    """

    domain = SpaceTime(Box([LOWER] * 3, [UPPER] * 3), 0.0, DURATION)
    outputs = ("u", "v", "w", "p")

    def __init__(self, a: float = pi / 4, d: float = pi / 2, viscosity: float = 1.0):
        for key, value in (("a", a), ("d", d), ("viscosity", viscosity)):
            require_positive(f"problem.params.{key}", value)
        self.a, self.d, self.viscosity = float(a), float(d), float(viscosity)

    def residual(self, x: Tensor, u: Field) -> dict[str, Tensor]:
        return unsteady_residuals(u, viscosity=self.viscosity)

    def hard_constraint(self, x: Tensor) -> tuple[Tensor, Tensor]:
        space, t = x[:, :3].unbind(1), x[:, 3]
        # The data change in time by a factor alone: u by e^(-ν d² t), p by its square. The
        # blend, linear and in space alone, is so taken once, of the data at t = 0, and scaled.
        faces = face_blend(self._initial_data, space, [LOWER] * 3, [UPPER] * 3)  # (N, 4)
        decay = self._decay(t)[:, None]
        g_velocity = self.velocity(*space) + (decay - 1) * faces[:, :3]
        g_pressure = decay**2 * faces[:, 3:]
        bubble = torch.stack([(UPPER - c) * (c - LOWER) for c in space]).prod(dim=0)
        b_velocity = (t / DURATION) * bubble  # 1 at most (the centre, t = 1)
        g = torch.cat([g_velocity, g_pressure], dim=1)
        b = torch.stack([b_velocity, b_velocity, b_velocity, bubble], dim=1)
        return g, b

    def _initial_data(self, on_faces: list[Tensor]) -> Tensor:
        """(..., 4) the exact (u, v, w, p) at t = 0 at coordinates of one shape (...)."""
        pressure = self.pressure(*on_faces, torch.zeros_like(on_faces[0]))
        return torch.cat([self.velocity(*on_faces), pressure[..., None]], dim=-1)

    def exact(self, x: Tensor) -> Tensor:
        x_, y, z, t = x.unbind(1)
        velocity = self.velocity(x_, y, z) * self._decay(t)[:, None]
        return torch.cat([velocity, self.pressure(x_, y, z, t)[:, None]], dim=1)

    def velocity(self, x: Tensor, y: Tensor, z: Tensor) -> Tensor:
        """(..., 3) the exact (u, v, w) at t = 0, at coordinates of one (broadcast) shape (...);
        at time t it is e^(-ν d² t) times this."""
        a = self.a
        growth, (sine, cosine) = self._growths(x, y, z), self._waves(x, y, z)
        # u_1 = -a [e^(a x1) sin(a x2 + d x3) + e^(a x3) cos(a x1 + d x2)], (x1, x2, x3) cycled
        return -a * torch.stack(
            [growth[k] * sine[(k + 1) % 3] + growth[(k + 2) % 3] * cosine[k] for k in range(3)], -1
        )

    def pressure(self, x: Tensor, y: Tensor, z: Tensor, t: Tensor) -> Tensor:
        """(...) the exact p at coordinates of one (broadcast) shape (...)."""
        a = self.a
        growth, (sine, cosine) = self._growths(x, y, z), self._waves(x, y, z)
        # e^(2a x1) + 2 sin(a x1 + d x2) cos(a x3 + d x1) e^(a (x2 + x3)), (x1, x2, x3) cycled
        total = sum(
            growth[k] ** 2
            + 2 * sine[k] * cosine[(k + 2) % 3] * growth[(k + 1) % 3] * growth[(k + 2) % 3]
            for k in range(3)
        )
        return -(a**2) / 2 * total * self._decay(t) ** 2

    def _decay(self, t: Tensor) -> Tensor:
        """e^(-ν d² t): the velocity's decay in time (the pressure's is its square)."""
        return torch.exp(-self.viscosity * self.d**2 * t)

    def _growths(self, x: Tensor, y: Tensor, z: Tensor) -> list[Tensor]:
        """[e^(a x), e^(a y), e^(a z)]."""
        return [torch.exp(self.a * c) for c in (x, y, z)]

    def _waves(self, x: Tensor, y: Tensor, z: Tensor) -> tuple[list[Tensor], list[Tensor]]:
        """The sines and cosines of the three angles a x + d y, a y + d z, a z + d x."""
        angles = [self.a * c1 + self.d * c2 for c1, c2 in ((x, y), (y, z), (z, x))]
        return [torch.sin(q) for q in angles], [torch.cos(q) for q in angles]
