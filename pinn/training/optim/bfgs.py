"""Dense BFGS and its self-scaled variants: the inverse Hessian as a P x P matrix in float64.

    optimizer = BFGS(parameters, settings)             # settings: BFGSSettings
    done, why = optimizer.iterate(closure, 100, on_iteration, tolerance=0.0)

The iterations and the strong Wolfe line search are `QuasiNewton`'s
(pinn.training.optim.quasi_newton). After a step s = x' - x, with y = g' - g the change of the
gradient, the inverse Hessian H becomes (Al-Baali's self-scaled Broyden family, as written by
Urbán, Stefanou & Pons, J. Comput. Phys. 523 (2025) 113656, eqs. 11-23)

    H' = (H - (H y)(H y)ᵀ / yᵀHy + φ (yᵀHy) v vᵀ) / τ + s sᵀ / yᵀs,
    v  = s / yᵀs - H y / yᵀHy,

which meets the secant condition H' y = s for every φ and τ. With

    h = yᵀHy / yᵀs,   b = sᵀBs / yᵀs = -t sᵀg / yᵀs (B = H⁻¹, s = -t H g),   a = b h - 1 >= 0,

the updates of `UPDATES` choose (θ the Broyden parameter of the direct form,
φ = (1 - θ) / (1 + aθ)):

- "bfgs": θ = 0 (φ = 1), τ = 1: plain BFGS.
- "ssbfgs": θ = 0, τ = min(1, 1/b): self-scaled BFGS (Al-Baali 1998; Urbán et al. eq. 11).
- "ssbroyden": self-scaled Broyden (Al-Baali & Khalfan's wide interval, Urbán et al. eqs.
  13-23): ρ⁻ = min(1, h (1 - sqrt(a / (1 + a)))), θ⁻ = (ρ⁻ - 1) / a, θ⁺ = 1 / ρ⁻,
  θ = max(θ⁻, min(θ⁺, (1 - b) / b)), σ = 1 + aθ, σ' = |σ|^(1 / (1 - P)), ρ = min(1, 1/b),
  τ = min(ρ σ', σ) when θ <= 0, else ρ min(σ', 1/θ). With a = 0 (H y parallel to s) every
  member of the family gives the same H', and θ = 0 is taken.

H starts as the identity. A pair is skipped when its curvature yᵀs is not positive beyond
rounding (relative to yᵀy, as in pinn's L-BFGS), and H starts afresh (the identity) when its
direction is no descent. H is kept across a redraw of the points (the same PDE, new points: the
authors' practice); it is the optimiser's state, saved whole in a checkpoint.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import torch

from pinn.training.optim.line_search import Trial
from pinn.training.optim.quasi_newton import QuasiNewton

if TYPE_CHECKING:  # the settings' module runs this algorithm: imported for the hints only
    from pinn.training.phases.bfgs import BFGSSettings

UPDATES = ("ssbroyden", "ssbfgs", "bfgs")


def broyden_parameters(update: str, a: float, b: float, h: float, n: int) -> tuple[float, float]:
    """(θ, τ) of `update` for one step, from a, b, h (see the module) and the dimension n."""
    if update == "bfgs":
        return 0.0, 1.0
    if update == "ssbfgs":
        return 0.0, min(1.0, 1.0 / b)
    if a <= 0:  # H y ∥ s: the family's members coincide; take θ = 0
        theta = 0.0
    else:
        rho_minus = min(1.0, h * (1 - math.sqrt(a / (1 + a))))
        theta_minus, theta_plus = (rho_minus - 1) / a, 1 / rho_minus
        theta = max(theta_minus, min(theta_plus, (1 - b) / b))
    sigma = 1 + a * theta
    sigma_root = abs(sigma) ** (1 / (1 - n)) if n > 1 else 1.0
    rho = min(1.0, 1.0 / b)
    if theta <= 0:
        return theta, min(rho * sigma_root, sigma)
    return theta, rho * min(sigma_root, 1 / theta)


def update_inverse_hessian(
    inverse: torch.Tensor,
    s: torch.Tensor,
    y: torch.Tensor,
    grad: torch.Tensor,
    t: float,
    update: str,
) -> None:
    """Update the (P, P) inverse Hessian `inverse` in place after the step `s` = t * direction
    from a point of gradient `grad`, the gradient having changed by `y` (all (P,), float64,
    yᵀs > 0).

    The update is one pass over the matrix: H' = H / τ + W D Wᵀ, W the (P, 3) columns H y, v, s
    scaled by the roots of their coefficients, D their signs (`addmm_`; the three outer
    products and the division one at a time read and wrote the 32 MB of P = 2000 seven times:
    12 ms against 3.6). H' is symmetric to rounding (a few ulps), not to the last bit."""
    ys = y.dot(s).item()
    hy = inverse @ y
    yhy = y.dot(hy).item()
    h, b = yhy / ys, -t * s.dot(grad).item() / ys
    a = max(b * h - 1, 0.0)  # >= 0 by Cauchy-Schwarz; rounding may dip below
    theta, tau = broyden_parameters(update, a, b, h, s.numel())
    phi = (1 - theta) / (1 + a * theta)
    v = s / ys - hy / yhy
    coefficients = torch.tensor(
        [-1 / (yhy * tau), phi * yhy / tau, 1 / ys], dtype=inverse.dtype, device=inverse.device
    )
    columns = torch.stack([hy, v, s], dim=1) * coefficients.abs().sqrt()
    inverse.addmm_(columns, (columns * coefficients.sign()).T, beta=1 / tau)


class BFGS(QuasiNewton):
    """BFGS with a dense float64 inverse Hessian, one `iterate` call per chunk of iterations.

    Args:
        params: the tensors to optimise (their `.grad` is read after each closure call).
        settings: `BFGSSettings` (the block `trainer.bfgs`): `update` (one of `UPDATES`),
            `loss_transform` (minimise the loss, or its sqrt or log), `stall_window`,
            `stall_decrease`.
        max_evaluations: closure calls one line search may spend.
    """

    def __init__(
        self, params: Iterable[torch.Tensor], settings: BFGSSettings, max_evaluations: int = 25
    ):
        super().__init__(
            params,
            "bfgs",
            settings.stall_window,
            settings.stall_decrease,
            settings.loss_transform,
            max_evaluations,
        )
        self.update = settings.update
        size = sum(p.numel() for p in self.params)
        device = self.params[0].device if self.params else None
        self.inverse = torch.eye(size, dtype=torch.float64, device=device)
        self.fresh = True  # H is the identity: no curvature learnt yet
        self.restarts = 0  # times H started afresh (no descent, or a failed line search)

    def state_dict(self) -> dict[str, Any]:
        return {
            **super().state_dict(),
            "inverse_hessian": self.inverse.clone(),
            "fresh": self.fresh,
            "restarts": self.restarts,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        super().load_state_dict(state)
        saved = state["inverse_hessian"]
        self.inverse = saved.to(device=self.inverse.device, dtype=torch.float64, copy=True)
        self.fresh, self.restarts = state["fresh"], state["restarts"]

    def _direction(self, grad: torch.Tensor) -> torch.Tensor:
        """-H grad; -grad (H afresh) when that is no descent."""
        direction = -(self.inverse @ grad.to(torch.float64))
        if direction.dot(grad.to(torch.float64)).item() < 0:
            return direction.to(grad.dtype)
        self._start_afresh(grad.numel(), grad.device)
        return grad.neg()

    def _forget_curvature(self) -> bool:
        """H afresh (the identity) after a line search that found no lower loss along -H grad:
        an H learnt far from here can point where the loss only rises (seen on Helmholtz after
        a short Adam phase). False when H was already afresh."""
        if self.fresh:
            return False
        self._start_afresh(self.inverse.shape[0], self.inverse.device)
        return True

    def _start_afresh(self, size: int, device: torch.device) -> None:
        self.inverse = torch.eye(size, dtype=torch.float64, device=device)
        self.fresh, self.restarts = True, self.restarts + 1

    def _first_step(self, grad: torch.Tensor) -> float:
        """1 once H holds curvature; along the gradient of an afresh H, a step of length 1
        in the 1-norm at most."""
        return min(1.0, 1.0 / grad.abs().sum().item()) if self.fresh else 1.0

    def _remember(self, here: Trial, found: Trial) -> None:
        """Update H with the step, when its curvature is positive beyond rounding."""
        s = (found.params - here.params).to(torch.float64)
        y = (found.grad - here.grad).to(torch.float64)
        if s.dot(y).item() > torch.finfo(found.params.dtype).eps * y.dot(y).item():
            update_inverse_hessian(
                self.inverse, s, y, here.grad.to(torch.float64), found.t, self.update
            )
            self.fresh = False
