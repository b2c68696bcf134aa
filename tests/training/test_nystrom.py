"""The randomised Nyström preconditioner of the Gauss-Newton conjugate gradients: the dense
formula it stands for; fewer products than Jacobi where J^T J is ill-conditioned along directions
mixing the parameters (and more where only the columns' scales differ: Jacobi's case); the
Cholesky step it solves for; refused settings; a resumed optimiser drawing the same sketches."""

import pytest
import torch
from gauss_newton_helpers import small_pinn

from pinn import ConfigError
from pinn.training.optim.damped_solves import cholesky_solve, conjugate_gradient
from pinn.training.optim.levenberg_marquardt import LevenbergMarquardt
from pinn.training.optim.nystrom import NystromSketch, _times_inverse_root
from pinn.training.phases import GaussNewtonSettings

NYSTROM = {"solver": "cg", "preconditioner": "nystrom"}


def lm(params, scaling="identity", **settings):
    """LevenbergMarquardt of plain steps (no line search, no plateau) with `settings` changed."""
    rule = {"damping": 1e-3, "line_search": 0, "stall_window": 0, "stall_decrease": 0.0}
    return LevenbergMarquardt(params, GaussNewtonSettings(**(rule | settings)), scaling=scaling)


def linear(matrix, target, x):
    """evaluate() of the rows matrix @ x - target."""

    def evaluate(jacobian):
        return matrix @ x - target, matrix if jacobian else None, {}

    return evaluate


def spectrum_jacobian(rows, columns, singular_values, generator):
    """(rows, columns) U diag(singular_values) V^T, U and V random orthonormal."""
    left, _ = torch.linalg.qr(torch.randn(rows, columns, dtype=torch.float64, generator=generator))
    right, _ = torch.linalg.qr(
        torch.randn(columns, columns, dtype=torch.float64, generator=generator)
    )
    return left * singular_values @ right.T


def sketch_of(matrix, size, seed=1):
    """The Nyström sketch of (P, P) `matrix` from `size` draws of a generator seeded `seed`."""
    draws = torch.Generator().manual_seed(seed)
    return NystromSketch.of(lambda block: matrix @ block, size, matrix.shape[0], draws)


def test_the_preconditioner_is_the_dense_formula(generator):
    """P^-1 = (lambda_s + mu) U (Lambda + mu I)^-1 U^T + (I - U U^T), with U Lambda U^T the
    eigendecomposition of A Omega (Omega^T A Omega)^-1 (A Omega)^T for the same orthonormalised
    draw, to 1e-10 in float64; with s = P the preconditioned matrix is (lambda_P + mu) I."""
    J = torch.randn(60, 30, dtype=torch.float64, generator=generator)
    A, size, mu = J.T @ J, 10, 0.3
    omega, _ = torch.linalg.qr(
        torch.randn(30, size, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    )
    Y = A @ omega
    approximation = Y @ torch.linalg.solve(omega.T @ Y, Y.T)
    values, vectors = torch.linalg.eigh(approximation)
    U, Lambda = vectors[:, -size:], values[-size:]  # the s nonzero eigenpairs
    expected = (Lambda[0] + mu) * U @ torch.diag(1 / (Lambda + mu)) @ U.T
    expected += torch.eye(30, dtype=torch.float64) - U @ U.T

    sketch = sketch_of(A, size)
    assert sketch.basis.shape == (30, size)
    assert torch.allclose(sketch.eigenvalues, Lambda.flip(0), rtol=1e-10, atol=0)
    inverse = sketch.inverse(mu)
    applied = torch.stack([inverse(e) for e in torch.eye(30, dtype=torch.float64)], dim=1)
    assert (applied - expected).abs().max() <= 1e-10 * expected.abs().max()

    whole = sketch_of(A, 50)  # cut to P = 30: exact, every direction moved to lambda_P + mu
    damped = A + mu * torch.eye(30, dtype=torch.float64)
    preconditioned = torch.stack([whole.inverse(mu)(column) for column in damped.T], dim=1)
    lowest = torch.linalg.eigvalsh(A)[0]
    identity = (lowest + mu) * torch.eye(30, dtype=torch.float64)
    assert (preconditioned - identity).abs().max() <= 1e-9 * (lowest + mu)


def test_a_jacobian_of_zeros_or_nan_leaves_the_residual_as_it_is():
    """Nothing to sketch: the preconditioner is the identity (CG unpreconditioned)."""
    residual = torch.arange(5.0, dtype=torch.float64)
    for matrix in (torch.zeros(5, 5, dtype=torch.float64), torch.full((5, 5), torch.nan)):
        sketch = sketch_of(matrix.double(), 3)
        assert sketch.eigenvalues.numel() == 0 and sketch.basis.shape == (5, 0)
        assert torch.equal(sketch.inverse(0.5)(residual), residual)


def test_a_core_left_indefinite_by_rounding_is_floored_not_refused(generator):
    """B = Y core^-1/2 by eigendecomposition where Cholesky fails: eigenvalues below the floor
    raised to it, so B B^T = Y (core floored)^-1 Y^T."""
    vectors, _ = torch.linalg.qr(torch.randn(3, 3, dtype=torch.float64, generator=generator))
    core = vectors @ torch.diag(torch.tensor([2.0, 1.0, -1e-20], dtype=torch.float64)) @ vectors.T
    block = torch.randn(8, 3, dtype=torch.float64, generator=generator)
    root = _times_inverse_root(block, core, 1e-6)
    floored = vectors @ torch.diag(torch.tensor([0.5, 1.0, 1e6], dtype=torch.float64)) @ vectors.T
    expected = block @ floored @ block.T
    assert (root @ root.T - expected).abs().max() <= 1e-9 * expected.abs().max()


def products_to_solve(J, mu, preconditioner, tolerance=1e-10, iterations=1000):
    """(products of J^T J + mu I that preconditioned CG took, its relative residual)."""
    count = [0]
    damped = J.T @ J + mu * torch.eye(J.shape[1], dtype=torch.float64)

    def apply(v):
        count[0] += 1
        return damped @ v

    rhs = torch.randn(J.shape[1], dtype=torch.float64, generator=torch.Generator().manual_seed(5))
    x = conjugate_gradient(apply, rhs, preconditioner, iterations, tolerance)
    return count[0], ((damped @ x - rhs).norm() / rhs.norm()).item()


def test_each_preconditioner_takes_fewer_products_where_it_belongs(generator):
    """A Jacobian whose singular values fall geometrically from 1e3 (by e every 4) over random
    singular vectors, as a PINN's do, and mu = 1e-8 of diag(J^T J)'s largest: Jacobi has not
    solved after 1000 products, Nyström's 40-column sketch and its conjugate gradients together
    take under 100. Columns of one random matrix scaled by 1e-3..1e3 (ill-conditioned along the
    axes only) are Jacobi's case: it solves in 60 products, Nyström's rank 40 leaves most of
    the spread."""
    singular = 1e3 * torch.exp(-torch.arange(150, dtype=torch.float64) / 4)
    J = spectrum_jacobian(300, 150, singular, generator)
    diagonal = J.square().sum(dim=0)
    mu = 1e-8 * diagonal.max().item()
    jacobi, jacobi_residual = products_to_solve(J, mu, diagonal + mu)
    sketched, residual = products_to_solve(J, mu, sketch_of(J.T @ J, 40).inverse(mu))
    assert jacobi == 1000 and jacobi_residual > 1e-6
    assert 40 + sketched <= 100 and residual <= 1e-6, sketched

    scaled = torch.randn(300, 150, dtype=torch.float64, generator=generator)
    scaled = scaled * torch.logspace(-3, 3, 150, dtype=torch.float64)
    diagonal = scaled.square().sum(dim=0)
    mu = 1e-8 * diagonal.max().item()
    jacobi, jacobi_residual = products_to_solve(scaled, mu, diagonal + mu)
    sketched, _ = products_to_solve(scaled, mu, sketch_of(scaled.T @ scaled, 40).inverse(mu))
    assert jacobi <= 60 and jacobi_residual <= 1e-8
    assert sketched > 3 * jacobi


@pytest.mark.parametrize("rows, columns", [(30, 60), (80, 25)])
def test_the_nystrom_step_is_the_cholesky_step(rows, columns, generator):
    matrix = torch.randn(rows, columns, dtype=torch.float64, generator=generator)
    target = torch.randn(rows, dtype=torch.float64, generator=generator)
    x = torch.zeros(columns, dtype=torch.float64)
    optimizer = lm([x], damping=1e-2, sketch_size=10, **NYSTROM)
    optimizer.step(linear(matrix, target, x))
    assert optimizer.last_solver == "cg"
    mu = optimizer.last_damping
    normal = matrix.T @ matrix + mu * torch.eye(columns, dtype=torch.float64)
    expected = cholesky_solve(normal, matrix.T @ target)  # rows at x = 0: -target
    assert (x - expected).abs().max() <= 1e-8 * expected.abs().max()


def flat(params):
    return torch.cat([p.detach().flatten() for p in params])


def test_the_matrix_free_nystrom_step_is_the_cholesky_step(generator):
    """A PINN's J by autograd products, mu 1e-8 of diag(J^T J)'s largest (where Jacobi's 500
    products fall short: `test_each_preconditioner_...`): a 30-column sketch's step is the
    Cholesky step of the dense normal equations, to 1e-6."""
    _, model, _, _, evaluate = small_pinn(generator, 400, width=10, depth=2)
    params = list(model.parameters())
    start = flat(params)
    rows, J, _ = evaluate(True)
    mu = 1e-8 * J.square().sum(dim=0).max().item()
    optimizer = lm(params, sketch_size=30, **NYSTROM)
    optimizer.mu = optimizer.initial_mu = mu
    assert optimizer.step(evaluate) is not None
    normal = J.T @ J + mu * torch.eye(J.shape[1], dtype=torch.float64)
    expected = cholesky_solve(normal, -J.T @ rows)
    error = (flat(params) - start - expected).abs().max() / expected.abs().max()
    assert error <= 1e-6, error.item()


def test_a_resumed_nystrom_optimizer_continues_bit_identically():
    """The sketch's draws are seeded by the evaluation count, which the state holds: 2 + 2
    iterations through a saved state are the 4 straight, bit for bit."""
    settings = {"sketch_size": 20, "line_search": 4, **NYSTROM}

    def fresh():  # the model and points of one run (as a resumed run rebuilds them)
        _, model, _, _, evaluate = small_pinn(torch.Generator().manual_seed(0), 200, 10, 2)
        return list(model.parameters()), evaluate

    params, evaluate = fresh()
    start = flat(params)
    whole = lm(params, **settings)
    whole.iterate(evaluate, 4, lambda loss, info: None)
    straight = flat(params)

    params, evaluate = fresh()
    first = lm(params, **settings)
    first.iterate(evaluate, 2, lambda loss, info: None)
    resumed = lm(params, **settings)  # knows only the state (the run's resume: test_phases)
    resumed.load_state_dict(first.state_dict())
    resumed.iterate(evaluate, 2, lambda loss, info: None)
    assert torch.equal(flat(params), straight)
    assert resumed.state_dict() == whole.state_dict()
    assert not torch.equal(straight, start)


@pytest.mark.parametrize(
    "settings, message",
    [
        ({"preconditioner": "ilu"}, "preconditioner must be one of jacobi, nystrom, got 'ilu'"),
        ({"sketch_size": 0}, "trainer.gauss_newton.sketch_size must be a whole number >= 1"),
        ({"sketch_size": 2.5}, "trainer.gauss_newton.sketch_size must be a whole number >= 1"),
        (
            {"preconditioner": "nystrom", "solver": "parameters"},
            "preconditioner=nystrom preconditions the conjugate gradients, which "
            "solver=parameters does not take: use solver=cg",
        ),
        (
            {"preconditioner": "nystrom", "solver": "rows"},
            "which solver=rows does not take",
        ),
    ],
)
def test_bad_settings_are_refused(settings, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(")):
        GaussNewtonSettings(**settings)


def test_a_diagonal_scaling_is_refused_with_nystrom():
    with pytest.raises(ConfigError, match="nystrom preconditions J\\^T J \\+ mu I: use scaling"):
        lm([torch.zeros(2)], scaling="diagonal", **NYSTROM)
