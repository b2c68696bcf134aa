"""Long accuracy runs (marked slow): every problem's default command reaches the accuracy the
README states, against its exact solution or its reference data."""

import pytest

from pinn import compose_config, train

# problem: (rel_l2 at most, max_abs_error at most), the README's problem table.
TARGETS = {
    "poisson": (1e-4, 1e-5),  # the exact solution peaks at 1/(2 pi^2) = 0.0507: 0.02 % of it
    "heat": (1e-4, 1e-3),
    "helmholtz": (1e-3, 1e-2),
    "wave": (1e-2, 5e-2),
    "burgers": (1e-3, 5e-2),  # the shock at x = 0 is where the largest error sits
    "kovasznay": (1e-3, 5e-2),
    "lshape": (1e-2, 2e-1),  # the gradient is infinite at the re-entrant corner: 0.09 there
    "annulus": (1e-4, 1e-3),
    # d = 100, stochastic Laplacian: 6.5e-2 measured; the 1e-2 is not reached (README).
    "poisson_highd": (1e-1, 1e-1),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", TARGETS)
def test_the_default_run_reaches_its_stated_accuracy(name, tmp_path):
    metrics = train(compose_config([f"problem={name}", "trainer.progress=false"]), tmp_path)
    rel_l2, max_abs_error = TARGETS[name]
    assert metrics["rel_l2"] <= rel_l2
    assert metrics["max_abs_error"] <= max_abs_error
