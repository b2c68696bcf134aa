"""The `bfgs` phase: its inverse Hessian updates against dense references, the strong Wolfe
conditions of its accepted steps, termination on a quadratic, and the phase in a run (a row per
iteration, loss transforms, refusals, resume from any checkpoint)."""

import io
import math
import re

import pytest
import torch
from test_trainer import resume_from_each, small_run

import pinn.training.optim.quasi_newton as quasi_newton
from pinn import ConfigError, TrainSettings
from pinn.problems.kovasznay import Kovasznay
from pinn.problems.poisson import Poisson
from pinn.training.optim.bfgs import BFGS, UPDATES, broyden_parameters, update_inverse_hessian
from pinn.training.optim.line_search import CURVATURE, SUFFICIENT_DECREASE
from pinn.training.phases import BFGSSettings

# ---- the update formulas -----------------------------------------------------------------------


def spd(n, seed, condition=100.0):
    """A random symmetric positive definite (n, n) float64 matrix of the given condition."""
    generator = torch.Generator().manual_seed(seed)
    q, _ = torch.linalg.qr(torch.randn(n, n, generator=generator, dtype=torch.float64))
    eigenvalues = torch.logspace(0, math.log10(condition), n, dtype=torch.float64)
    matrix = q @ torch.diag(eigenvalues) @ q.T
    return (matrix + matrix.T) / 2


def step_pair(n, seed):
    """(H, g, t, s, y): an inverse Hessian, a gradient, the step t along -H g, and a pair with
    y = A s for a positive definite A (so yᵀs > 0)."""
    generator = torch.Generator().manual_seed(seed + 100)
    inverse, curvature = spd(n, seed), spd(n, seed + 1, condition=50.0)
    grad = torch.randn(n, generator=generator, dtype=torch.float64)
    t = 0.7
    s = -t * inverse @ grad
    return inverse, grad, t, s, curvature @ s


def textbook_bfgs(inverse, s, y):
    """Nocedal & Wright eq. 6.17: (I - ρ s yᵀ) H (I - ρ y sᵀ) + ρ s sᵀ."""
    rho, eye = 1 / y.dot(s), torch.eye(len(s), dtype=torch.float64)
    return (eye - rho * torch.outer(s, y)) @ inverse @ (eye - rho * torch.outer(y, s)) + rho * (
        torch.outer(s, s)
    )


def scaled_broyden(inverse, s, y, phi, tau):
    """The self-scaled Broyden family in inverse form, written out with matrices."""
    hy = inverse @ y
    yhy, ys = y.dot(hy), y.dot(s)
    v = s / ys - hy / yhy
    inside = inverse - torch.outer(hy, hy) / yhy + phi * yhy * torch.outer(v, v)
    return inside / tau + torch.outer(s, s) / ys


def updated(update, inverse, grad, t, s, y):
    new = inverse.clone()
    update_inverse_hessian(new, s, y, grad, t, update)
    return new


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_plain_and_self_scaled_bfgs_match_the_textbook_formula(seed):
    inverse, grad, t, s, y = step_pair(12, seed)
    torch.testing.assert_close(
        updated("bfgs", inverse, grad, t, s, y), textbook_bfgs(inverse, s, y), rtol=1e-12, atol=0
    )
    # Self-scaled BFGS: the textbook update of H / τ, τ = min(1, 1/b), b = sᵀ H⁻¹ s / yᵀs.
    b = (s @ torch.linalg.solve(inverse, s) / y.dot(s)).item()
    assert b != pytest.approx(1.0)  # a scaling that changes something
    expected = textbook_bfgs(inverse / min(1.0, 1.0 / b), s, y)
    torch.testing.assert_close(
        updated("ssbfgs", inverse, grad, t, s, y), expected, rtol=1e-12, atol=0
    )


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_self_scaled_broyden_matches_the_papers_parameters(seed):
    inverse, grad, t, s, y = step_pair(12, seed)
    n = len(s)
    ys = y.dot(s).item()
    h = (y @ inverse @ y).item() / ys
    b = (s @ torch.linalg.solve(inverse, s)).item() / ys  # from H⁻¹, not from the gradient
    a = b * h - 1
    # Urbán, Stefanou & Pons (2025), eqs. 13-23, worked by hand:
    rho_minus = min(1, h * (1 - math.sqrt(a / (1 + a))))
    theta = max((rho_minus - 1) / a, min(1 / rho_minus, (1 - b) / b))
    sigma = 1 + a * theta
    root = abs(sigma) ** (1 / (1 - n))
    tau = min(min(1, 1 / b) * root, sigma) if theta <= 0 else min(1, 1 / b) * min(root, 1 / theta)
    assert (theta, tau) == pytest.approx(broyden_parameters("ssbroyden", a, b, h, n), rel=1e-10)
    phi = (1 - theta) / (1 + a * theta)
    expected = scaled_broyden(inverse, s, y, phi, tau)
    torch.testing.assert_close(
        updated("ssbroyden", inverse, grad, t, s, y), expected, rtol=1e-10, atol=1e-12
    )


@pytest.mark.parametrize("update", UPDATES)
def test_every_update_meets_the_secant_condition_and_stays_positive_definite(update):
    for seed in range(5):
        inverse, grad, t, s, y = step_pair(10, seed)
        new = updated(update, inverse, grad, t, s, y)
        torch.testing.assert_close(new @ y, s, rtol=1e-10, atol=1e-12)
        torch.testing.assert_close(new, new.T, rtol=0, atol=1e-15 * new.abs().max().item())
        assert torch.linalg.eigvalsh(new).min() > 0


def test_many_updates_of_a_large_matrix_match_the_written_out_family_and_stay_symmetric():
    """P = 300 (the one-pass update's matrix product takes its blocked path): 40 updates agree
    with the family written out with matrices, and H stays symmetric to rounding."""
    inverse = torch.eye(300, dtype=torch.float64)
    reference = inverse.clone()
    for seed in range(40):
        _, grad, t, _, _ = step_pair(300, seed)
        s = -t * inverse @ grad
        y = spd(300, seed + 7, condition=20.0) @ s
        hy = inverse @ y
        ys, yhy = y.dot(s).item(), y.dot(hy).item()
        h, b = yhy / ys, -t * s.dot(grad).item() / ys
        theta, tau = broyden_parameters("ssbroyden", max(b * h - 1, 0.0), b, h, 300)
        phi = (1 - theta) / (1 + max(b * h - 1, 0.0) * theta)
        reference = scaled_broyden(reference, s, y, phi, tau)
        update_inverse_hessian(inverse, s, y, grad, t, "ssbroyden")
    scale = inverse.abs().max().item()
    torch.testing.assert_close(inverse, reference, rtol=0, atol=1e-10 * scale)
    assert (inverse - inverse.T).abs().max().item() <= 1e-14 * scale


@pytest.mark.parametrize("update", UPDATES)
def test_exact_line_searches_minimise_a_quadratic_in_at_most_p_steps(update):
    """On f = ½ xᵀAx - bᵀx with exact line searches, the Broyden family (self-scaled too) makes
    conjugate directions: the minimum within n steps."""
    n = 8
    curvature = spd(n, 7, condition=1e3)
    target = torch.linspace(-1, 1, n, dtype=torch.float64)
    x = torch.zeros(n, dtype=torch.float64)
    inverse = torch.eye(n, dtype=torch.float64)
    grad = curvature @ x - target
    start = grad.norm().item()
    steps = 0
    while steps < n and grad.norm().item() >= 1e-10 * start:
        steps += 1
        direction = -inverse @ grad
        t = -(grad.dot(direction) / (direction @ curvature @ direction)).item()  # exact
        s = t * direction
        x = x + s
        new_grad = curvature @ x - target
        update_inverse_hessian(inverse, s, new_grad - grad, grad, t, update)
        grad = new_grad
    assert grad.norm().item() < 1e-10 * start
    torch.testing.assert_close(x, torch.linalg.solve(curvature, target), rtol=1e-9, atol=1e-12)


# ---- the optimiser -----------------------------------------------------------------------------


def rosenbrock():
    x = torch.tensor([-1.2, 1.0], dtype=torch.float64, requires_grad=True)

    def closure():
        x.grad = None
        loss = 100 * (x[1] - x[0] ** 2) ** 2 + (1 - x[0]) ** 2
        loss.backward()
        return loss, None

    return x, closure


@pytest.mark.parametrize("update", UPDATES)
@pytest.mark.parametrize("transform", ["none", "sqrt", "log"])
def test_every_accepted_step_meets_the_strong_wolfe_conditions(monkeypatch, update, transform):
    searches = []
    search = quasi_newton.strong_wolfe

    def spy(evaluate, start, direction, step, max_evaluations):
        found = search(evaluate, start, direction, step, max_evaluations)
        searches.append((start, direction, found))
        return found

    monkeypatch.setattr(quasi_newton, "strong_wolfe", spy)
    x, closure = rosenbrock()
    settings = BFGSSettings(update=update, loss_transform=transform)
    optimizer = BFGS([x], settings)
    losses = []
    done, _ = optimizer.iterate(closure, 60, lambda loss, info: losses.append(loss.item()))
    assert done == len(losses) and len(searches) >= done >= 20
    # Down to round-off: near a zero loss a logarithm's gradient grows without bound and the
    # search may spend its evaluations, keeping the lowest point that decreased enough.
    for start, direction, found in [search for search in searches if search[0].loss > 1e-16]:
        slope = start.grad.dot(direction).item()
        assert slope < 0
        assert found.value <= start.value + SUFFICIENT_DECREASE * found.t * slope
        assert abs(found.grad.dot(direction).item()) <= CURVATURE * abs(slope)
    assert all(b < a for a, b in zip(losses, losses[1:]))  # the loss, whatever is minimised
    assert losses[-1] < 1e-10
    torch.testing.assert_close(x.detach(), torch.ones(2, dtype=torch.float64), atol=1e-5, rtol=0)


def test_the_transformed_objective_has_the_transformed_gradient():
    grad = torch.tensor([3.0, -4.0], dtype=torch.float64)
    assert quasi_newton.objective(4.0, grad, "none") == (4.0, grad)
    value, root_grad = quasi_newton.objective(4.0, grad, "sqrt")
    assert value == 2.0 and torch.equal(root_grad, grad / 4)
    value, log_grad = quasi_newton.objective(4.0, grad, "log")
    assert value == math.log(4.0) and torch.equal(log_grad, grad / 4.0)


def test_a_direction_that_is_no_descent_starts_the_inverse_hessian_afresh():
    x, closure = rosenbrock()
    optimizer = BFGS([x], BFGSSettings())
    optimizer.inverse = -torch.eye(2, dtype=torch.float64)  # broken: -H g climbs
    optimizer.fresh = False
    grad = torch.tensor([1.0, 2.0], dtype=torch.float64)
    assert torch.equal(optimizer._direction(grad), -grad)
    assert torch.equal(optimizer.inverse, torch.eye(2, dtype=torch.float64))
    assert optimizer.fresh and optimizer.restarts == 1


def test_a_failed_line_search_starts_the_inverse_hessian_afresh_and_searches_again(monkeypatch):
    """An H scaled 1e30 overshoots so far that the search spends its evaluations: the
    iteration is retried along the gradient, not ended; a failure with H afresh ends it."""
    x, closure = rosenbrock()
    optimizer = BFGS([x], BFGSSettings())
    optimizer.inverse = 1e30 * torch.eye(2, dtype=torch.float64)
    optimizer.fresh = False
    start = closure()[0].item()
    losses = []
    done, why = optimizer.iterate(closure, 1, lambda loss, info: losses.append(loss.item()))
    assert (done, why) == (1, None) and optimizer.restarts == 1
    assert losses[0] < start

    monkeypatch.setattr(quasi_newton, "strong_wolfe", lambda *args: None)  # nothing lower
    optimizer.fresh = False
    before = x.detach().clone()
    done, why = optimizer.iterate(closure, 5, lambda loss, info: None)
    assert (done, why) == (0, quasi_newton.stalled_reason()) and optimizer.restarts == 2
    assert torch.equal(x.detach(), before)  # left where it was


# ---- the phase in a run ------------------------------------------------------------------------

RUN = dict(phases=["adam", "bfgs"], adam={"steps": 10}, log_every=5)


def test_a_row_per_iteration_with_the_loss_of_its_parameters_and_lower_than_lbfgs():
    model, result = small_run(**RUN, bfgs={"steps": 40})
    rows = [row for row in result.history if row["phase"] == "bfgs"]
    assert [row["step"] for row in rows] == list(range(11, 51))
    losses = [row["loss"] for row in rows]
    assert all(b <= a for a, b in zip(losses, losses[1:])), "strong Wolfe never goes up"
    assert result.history[-1]["loss"] == losses[-1] == result.final_loss
    _, lbfgs = small_run(adam={"steps": 10}, lbfgs={"steps": 40}, log_every=5)
    assert result.final_loss < lbfgs.final_loss  # the dense matrix learns more per iteration


@pytest.mark.parametrize("transform", ["sqrt", "log"])
def test_a_transformed_objective_reports_the_loss_itself(transform):
    _, plain = small_run(**RUN, bfgs={"steps": 30})
    _, result = small_run(**RUN, bfgs={"steps": 30, "loss_transform": transform})
    first_bfgs = next(row for row in result.history if row["phase"] == "bfgs")
    adam_end = [row for row in result.history if row["phase"] == "adam"][-1]
    assert first_bfgs["loss"] < adam_end["loss"]  # the loss, positive, falling
    assert result.final_loss < 0.05 * adam_end["loss"]
    assert result.final_loss != plain.final_loss  # another path


def test_hard_constraints_and_several_outputs_train():
    for problem, fall in ((Poisson(hard_boundary=True), 1e-2), (Kovasznay(), 0.4)):
        _, result = small_run(problem, **RUN, bfgs={"steps": 30})
        adam_end = [row for row in result.history if row["phase"] == "adam"][-1]["loss"]
        # measured: Poisson 100x lower, Kovasznay (u, v, p) 3.69 to 1.01 in 30 iterations
        assert result.final_loss < fall * adam_end, type(problem).__name__


def test_bad_settings_and_too_large_a_network_are_refused_before_training():
    for key, value, message in [
        ("update", "dfp", "trainer.bfgs.update must be one of ssbroyden, ssbfgs, bfgs"),
        ("loss_transform", "exp", "trainer.bfgs.loss_transform must be one of none, sqrt, log"),
        ("tolerance", 1.5, "trainer.bfgs.tolerance must be in [0, 1)"),
        ("max_parameters", 0, "trainer.bfgs.max_parameters"),
    ]:
        with pytest.raises(ConfigError, match=re.escape(message)):
            TrainSettings(bfgs={key: value})
    with pytest.raises(ConfigError) as refused:
        small_run(**RUN, bfgs={"steps": 5, "max_parameters": 50})
    said = str(refused.value)
    assert "bfgs" in said and "105 parameters" in said and "use lbfgs" in said
    assert "\n" not in said


def test_resuming_from_any_checkpoint_ends_exactly_like_the_uninterrupted_run(
    written_checkpoints,
):
    settings = dict(**RUN, bfgs={"steps": 20, "resample_every": 7}, checkpoint_every=4)
    model, result = small_run(**settings, fit_options={"checkpoint_path": "unused.pt"})
    written = list(written_checkpoints)
    states = resume_from_each(written, settings, model, result)
    phases = [state["training"]["phase"] for state in states]
    assert phases.count("bfgs") >= 3 and phases[-1] == "done"
    in_bfgs = [data for data, phase in zip(written, phases) if phase == "bfgs"]
    saved = torch.load(io.BytesIO(in_bfgs[-1]), weights_only=True)["training"]["phase_state"]
    inverse = saved["optimizer"]["inverse_hessian"]
    assert inverse.dtype == torch.float64 and inverse.shape == (105, 105)
    assert not torch.equal(inverse, torch.eye(105, dtype=torch.float64))
