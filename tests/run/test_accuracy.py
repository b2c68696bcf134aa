"""Long accuracy runs (marked slow): every problem's default command reaches the accuracy the
README states, against its exact solution or its reference data. The problems whose default
ends with Gauss-Newton run it for fewer iterations here (BUDGETS, to keep CI short) and must
still reach issue 18's bounds; the README gives the whole default run's figure."""

import pytest

from pinn import compose_config, train

# problem: (rel_l2 at most, max_abs_error at most), the README's problem table.
TARGETS = {
    "poisson": (3e-6, 1e-5),  # the exact solution peaks at 1/(2 pi^2) = 0.0507
    "heat": (3e-6, 1e-3),
    "helmholtz": (5e-5, 1e-2),
    "wave": (3e-4, 1e-3),
    "burgers": (4e-5, 1e-3),  # the shock at x = 0 is where the largest error sits
    "kovasznay": (5e-5, 5e-2),
    "lshape": (2e-3, 5e-2),  # the gradient is infinite at the re-entrant corner: 0.014 there
    "annulus": (8e-6, 1e-4),
    # issue 19's bound; measured 3.17e-4 and 6.4e-3 (the fronts are ~0.01 wide).
    "allen_cahn": (1e-3, 3e-2),
    # issue 19's bound: u on x = 0.5 and v on y = 0.5 within 1e-2 (max abs) of Ghia et al.
    # 1982's table, itself about that close to a converged solution (problems/cavity.py);
    # measured rel_l2 6.7e-3 and max abs 4.1e-3 (seed 0), after 80 of 120 iterations (BUDGETS)
    # rel_l2 6.9e-3.
    "cavity": (2e-2, 1e-2),
    # issue 19's bound, after 100 of the default's 150 Gauss-Newton iterations: 2.8e-3 measured
    # there (the whole run: 2.5e-4, max abs 1.7e-3; the solitons peak at u = 2.4).
    "kdv": (1e-2, 5e-2),
    # five time windows (windows.count); measured 1.63e-4 and 3.6e-4 (one network: 0.95).
    "convection": (1e-3, 3e-3),
    # d = 100, stochastic Laplacian, STDE's points and schedule: 1.79e-2 and 0.161 measured for
    # the default coefficients (seed 0, a draw of small norm: 2.3e-3 to 2.0e-2 over seeds 0-4).
    "poisson_highd": (2.5e-2, 2.5e-1),
}

# Gauss-Newton iterations run here, and what the full default run's history showed there
# (rel_l2, this CPU, 2 threads): poisson 1.9e-6 (of 600), heat 8.4e-7 (of 400), helmholtz
# 1.0e-5 (of 200), kovasznay 3.3e-5 (of 70), kdv 2.8e-3 (of 150; 0.275 after 70), cavity
# 6.9e-3 (of 120; 7.0e-3 after 70, 5.0e-2 after 60).
BUDGETS = {"poisson": 200, "heat": 80, "helmholtz": 80, "kovasznay": 40, "kdv": 100, "cavity": 80}


@pytest.mark.slow
@pytest.mark.parametrize("name", TARGETS)
def test_the_default_run_reaches_its_stated_accuracy(name, tmp_path):
    overrides = [f"problem={name}", "trainer.progress=false"]
    if name in BUDGETS:
        overrides.append(f"trainer.gauss_newton.steps={BUDGETS[name]}")
    metrics = train(compose_config(overrides), tmp_path)
    rel_l2, max_abs_error = TARGETS[name]
    assert metrics["rel_l2"] <= rel_l2
    assert metrics["max_abs_error"] <= max_abs_error


@pytest.mark.slow
def test_the_cylinder_reaches_the_benchmark_drag_and_pressure_drop(tmp_path):
    # Schäfer & Turek 2D-1: C_D 5.5795 and Δp 0.1175 within 1 % (issue 19's bounds; measured
    # 1.2e-3 and 6.8e-3 on this CPU). The lift (10 %) is not reached yet: C_L 0.034 for 0.0106.
    metrics = train(compose_config(["problem=cylinder", "trainer.progress=false"]), tmp_path)
    errors = metrics["quantity_errors"]
    assert errors["drag"] <= 1e-2
    assert errors["pressure_drop"] <= 1e-2
