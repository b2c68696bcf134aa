"""Flow past a cylinder in a channel: Schäfer & Turek's steady benchmark 2D-1 (Re = 20).

u u_x + v u_y + p_x - ν (u_xx + u_yy) = 0
u v_x + v v_y + p_y - ν (v_xx + v_yy) = 0
u_x + v_y = 0               in [0, 2.2] x [0, 0.41] minus the disk |(x, y) - (0.2, 0.2)| < 0.05
u = 4 U_m y (H - y) / H², v = 0   on the inlet x = 0 (H = 0.41, U_m = 0.3)
u = v = 0                   on the walls y = 0, y = H and on the cylinder (no slip)
p = 0                       on the outlet x = 2.2
ν = 1e-3, density 1: mean inflow Ū = 2 U_m / 3 = 0.2, diameter D = 0.1, Re = Ū D / ν = 20.

The benchmark's outlet is "do nothing" (ν ∂u/∂n - p n = 0); fixing p = 0 there instead changes
the pressure by a constant (invisible to the forces and to Δp) and the velocity by ν u_x at the
outlet, where the flow is a fully developed parabola (u_x ≈ 0).

Every condition is held exactly (no boundary loss): u = g + φ N_u, v = φ N_v, p = (2.2 - x) N_p,
φ the domain's distance to the inlet, the walls and the cylinder, g the inflow profile faded out
near the cylinder (g = profile(y) · φ_c / (φ_c + 0.1 x), φ_c the cylinder's level function).

Reference: the benchmark's values (Schäfer & Turek 1996, "Benchmark computations of laminar flow
around a cylinder", Notes Numer. Fluid Mech. 52, 547-566, Table 4 for test 2D-1): drag
coefficient C_D = 5.5795, lift coefficient C_L = 0.0106 (the midpoints of their bounds
5.57-5.59 and 0.0104-0.0110), pressure difference Δp = p(0.15, 0.2) - p(0.25, 0.2) = 0.1175
(bounds 0.1172-0.1176). C_D = 2 F_x / (Ū² D), C_L = 2 F_y / (Ū² D), F the force of the fluid
on the cylinder: F = ∮ σ n_body ds, σ = -p I + ν (∇u + ∇uᵀ). No field reference exists: a run
reports these quantities (metrics.json "quantities", "quantity_errors") and no rel_l2.

F is computed as a volume integral over the ring r <= |x - c| <= 2r around the cylinder
(`force_integrands`, a test function falling smoothly from 1 on the cylinder to 0 at 2r;
`ring_quadrature`, exact to rounding here), as finite-element codes compute it: the surface
integral needs the network's derivatives at the wall, where a PINN is least accurate. On one
trained network (the default run) the surface integral gave C_D = 7.15, the volume integral 5.573,
and 5.550-5.589 with the ring's outer radius anywhere from 1.6r to 3.8r.
"""

import torch

from pinn import Box, Disk, Field, Problem, require_positive, ring_quadrature
from pinn.problems.navier_stokes import force_integrands, steady_residuals

LENGTH, HEIGHT = 2.2, 0.41
CENTRE, RADIUS = (0.2, 0.2), 0.05
# The two points of the benchmark's pressure difference: the cylinder's front and back.
FRONT, BACK = (0.15, 0.2), (0.25, 0.2)
# The inflow profile's fade towards the cylinder: g = profile · φ_c / (φ_c + FADE x) falls from
# the profile to 0 over φ_c ~ FADE x, about 0.02 at the cylinder (D / sqrt(Re) = 0.022).
FADE = 0.1
# The no-slip distance's largest value mid-channel (about 0.1): dividing by it keeps the
# network's outputs O(u).
DISTANCE_SCALE = 0.1
# The forces are integrated over the ring RADIUS <= |x - CENTRE| <= RING (volume integrals).
RING = 2 * RADIUS
# Benchmark 2D-1's settings, for which `quantity_reference` holds.
BENCHMARK = {"peak_inflow": 0.3, "viscosity": 1e-3}


class Cylinder(Problem):
    """Steady Navier-Stokes for (u, v, p) in a channel past a cylinder (benchmark 2D-1).

    Args:
        peak_inflow: U_m, the inflow's centreline speed (0.3 in 2D-1).
        viscosity: ν (1e-3 in 2D-1).
    """

    outputs = ("u", "v", "p")
    quantity_reference = {"drag": 5.5795, "lift": 0.0106, "pressure_drop": 0.1175}

    def __init__(
        self,
        peak_inflow: float = BENCHMARK["peak_inflow"],
        viscosity: float = BENCHMARK["viscosity"],
    ):
        settings = {"peak_inflow": peak_inflow, "viscosity": viscosity}
        for key, value in settings.items():
            require_positive(f"problem.params.{key}", value)
        self.peak_inflow = float(peak_inflow)
        self.viscosity = float(viscosity)
        self.cylinder = Disk(CENTRE, RADIUS, name="cylinder")
        # the forces' quadrature rule, made once: quantities() runs at every validated row
        self.ring = ring_quadrature(CENTRE, RADIUS, RING)
        self.domain = Box([0.0, 0.0], [LENGTH, HEIGHT]) - self.cylinder
        self.conditions = []
        if settings != BENCHMARK:
            self.quantity_reference = {}  # the benchmark's values are for 2D-1's settings

    @property
    def mean_inflow(self) -> float:
        """Ū, the inflow's mean speed: two thirds of the parabola's peak."""
        return 2 * self.peak_inflow / 3

    def residual(self, x: torch.Tensor, u: Field) -> dict[str, torch.Tensor]:
        return steady_residuals(u, viscosity=self.viscosity)

    def inflow(self, y: torch.Tensor) -> torch.Tensor:
        """(N,) the parabolic inflow u(0, y)."""
        return 4 * self.peak_inflow * y * (HEIGHT - y) / HEIGHT**2

    def hard_constraint(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        around = -self.cylinder.level(x)  # (|x - c|² - r²) / (2r): > 0 in the fluid
        # the inflow carried downstream, faded out within about a boundary layer of the cylinder
        profile = self.inflow(x[:, 1]) * around / (around + FADE * x[:, 0])
        walls = ["x_min", "y_min", "y_max", "cylinder"]
        no_slip = self.domain.distance(x, on=walls) / DISTANCE_SCALE
        outlet = (LENGTH - x[:, 0]) / LENGTH
        zero = torch.zeros_like(profile)
        return (
            torch.stack([profile, zero, zero], dim=1),
            torch.stack([no_slip, no_slip, outlet], dim=1),
        )

    def quantities(self, q) -> dict[str, torch.Tensor]:
        """Drag and lift coefficients on the cylinder and the pressure drop across it."""

        def force(component: int):
            def integrand(x, u):
                test, gradient = ring_test_function(x)
                return force_integrands(u, test, gradient, self.viscosity)[component]

            return q.integral(integrand, quadrature=self.ring)

        scale = 2 / (self.mean_inflow**2 * 2 * RADIUS)
        pressure = q.values([FRONT, BACK], "p")
        return {
            "drag": scale * force(0),
            "lift": scale * force(1),
            "pressure_drop": pressure[0] - pressure[1],
        }


def ring_test_function(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(N,) w and (N, 2) ∇w at points of the ring around the cylinder: w = 1 - s² (3 - 2s),
    s = (|x - c| - RADIUS) / (RING - RADIUS): 1 on the cylinder, 0 with its slope at RING."""
    offset = x - torch.tensor(CENTRE, dtype=x.dtype, device=x.device)
    radius = offset.norm(dim=1)
    s = ((radius - RADIUS) / (RING - RADIUS)).clamp(0, 1)
    slope = -6 * s * (1 - s) / (RING - RADIUS)  # dw/dr
    return 1 - s**2 * (3 - 2 * s), (slope / radius)[:, None] * offset
