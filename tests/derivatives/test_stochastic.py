"""Stochastic Laplacians: unbiased, variance falling with the samples, exact where they must be."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn
from torch.func import hessian, vmap

from pinn.derivatives.stochastic import METHODS, random_directions, stochastic_laplacian
from pinn.derivatives.taylor import taylor_laplacian
from pinn.errors import NotPointwiseError
from pinn.nn.mlp import MLP

DTYPE = torch.float64
DIM = 10
REPLICATES = 4000


@pytest.fixture
def generator() -> torch.Generator:
    return torch.Generator().manual_seed(99)


@pytest.fixture
def model() -> MLP:
    """(N, 10) -> (N, 2) with random biases, so that the Hessians have off-diagonal terms."""
    network = MLP(DIM, 2, width=16, depth=2, generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        for layer in network:
            if isinstance(layer, nn.Linear):
                layer.bias.normal_(0.0, 0.5, generator=torch.Generator().manual_seed(4))
    return network.to(DTYPE)


@pytest.fixture
def x(generator) -> torch.Tensor:
    return torch.rand(3, DIM, generator=generator, dtype=DTYPE)


class Wrapped(nn.Module):
    """The same network behind a custom forward, which Taylor mode refuses: autograd runs."""

    def __init__(self, inner: nn.Module):
        super().__init__()
        self.inner = inner

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.inner(x)


def exact_laplacian(model: nn.Module, x: torch.Tensor) -> torch.Tensor:
    hess = vmap(hessian(lambda point: model(point[None])[0]))(x)
    return hess.diagonal(dim1=-2, dim2=-1).sum(-1)


def exact_partial_laplacian(model: nn.Module, x: torch.Tensor, inputs) -> torch.Tensor:
    """(N, m) Σ_{j in inputs} ∂²f/∂x_j², from torch.func's full Hessian."""
    hess = vmap(hessian(lambda point: model(point[None])[0]))(x)
    return hess.diagonal(dim1=-2, dim2=-1)[..., list(inputs)].sum(-1)


def replicated_estimates(model, x, samples, method, generator, inputs=None) -> torch.Tensor:
    """(REPLICATES, N, m) independent estimates: each copy of a point draws its own directions."""
    copies = x.repeat(REPLICATES, 1)
    estimates = stochastic_laplacian(model, copies, samples, generator, method, inputs)
    return estimates.detach().reshape(REPLICATES, *x.shape[:1], -1)


SOME_INPUTS = (0, 2, 3, 7, 8, 9)  # a Laplacian over some inputs only (a space-time's space)


@pytest.mark.parametrize("inputs", [None, SOME_INPUTS])
@pytest.mark.parametrize("samples", [1, 3])
@pytest.mark.parametrize("method", METHODS)
def test_estimates_are_unbiased(method, samples, inputs, model, x, generator):
    estimates = replicated_estimates(model, x, samples, method, generator, inputs)
    standard_error = estimates.std(dim=0) / math.sqrt(REPLICATES)
    assert (standard_error > 0).all()
    exact = exact_partial_laplacian(model, x, SOME_INPUTS if inputs else range(DIM))
    error = estimates.mean(dim=0) - exact
    assert (error.abs() < 4 * standard_error).all(), error / standard_error


@pytest.mark.parametrize("method", METHODS)
def test_directions_over_some_inputs_leave_the_others_out(method, x, generator):
    # sin(x_1) + x_4² e^{x_5} + x_6⁴ curves only in inputs the Laplacian leaves out: every
    # estimate over SOME_INPUTS is exactly 0; over every input it is not.
    def off_the_inputs(points: torch.Tensor) -> torch.Tensor:
        return torch.sin(points[:, 1]) + points[:, 4] ** 2 * points[:, 5].exp() + points[:, 6] ** 4

    estimate = stochastic_laplacian(off_the_inputs, x, 3, generator, method, SOME_INPUTS)
    assert torch.equal(estimate, torch.zeros_like(estimate))
    everywhere = stochastic_laplacian(off_the_inputs, x.repeat(20, 1), 3, generator, method)
    assert everywhere.abs().max() > 0.1
    directions, scale = random_directions(method, x, 3, generator, SOME_INPUTS)
    if method == "sparse":
        assert set(directions.unique().tolist()) <= set(SOME_INPUTS)
        assert scale == len(SOME_INPUTS) / 3
    else:
        assert not directions[:, :, [1, 4, 5, 6]].any() and scale == 1 / 3


def test_sparse_over_all_given_inputs_is_their_exact_laplacian(model, x, generator):
    estimate = stochastic_laplacian(model, x, len(SOME_INPUTS), generator, "sparse", SOME_INPUTS)
    exact = exact_partial_laplacian(model, x, SOME_INPUTS)
    torch.testing.assert_close(estimate, exact, rtol=1e-10, atol=1e-10)
    by_autograd = stochastic_laplacian(
        Wrapped(model), x, len(SOME_INPUTS), generator, "sparse", SOME_INPUTS
    )
    torch.testing.assert_close(by_autograd, exact, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("method", METHODS)
def test_variance_falls_like_one_over_the_samples(method, model, x, generator):
    one = replicated_estimates(model, x, 1, method, generator).var(dim=0)
    eight = replicated_estimates(model, x, 8, method, generator).var(dim=0)
    # Independent directions: variance / s. Distinct coordinates (sampling without
    # replacement): variance / s times the finite population correction (d - s) / (d - 1).
    expected_ratio = 8 * (DIM - 1) / (DIM - 8) if method == "sparse" else 8
    ratio = one / eight
    assert (ratio > expected_ratio / 2).all() and (ratio < expected_ratio * 2).all(), ratio


def test_sparse_with_every_coordinate_is_the_exact_laplacian(model, x, generator):
    estimate = stochastic_laplacian(model, x, DIM, generator, "sparse")
    assert torch.equal(estimate, taylor_laplacian(model, x).laplacian)
    torch.testing.assert_close(estimate, exact_laplacian(model, x), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("method", METHODS)
def test_autograd_fallback_gives_the_same_estimate_and_gradients(method, model, x):
    def estimate(f: nn.Module) -> torch.Tensor:
        return stochastic_laplacian(f, x, 4, torch.Generator().manual_seed(5), method)

    through_taylor, through_autograd = estimate(model), estimate(Wrapped(model))
    torch.testing.assert_close(through_autograd, through_taylor, rtol=1e-10, atol=1e-10)
    taylor_grads = parameter_gradients(model, (through_taylor**2).mean())
    autograd_grads = parameter_gradients(model, (through_autograd**2).mean())
    for from_autograd, from_taylor in zip(autograd_grads, taylor_grads):
        torch.testing.assert_close(from_autograd, from_taylor, rtol=1e-10, atol=1e-10)


def parameter_gradients(model: nn.Module, loss: torch.Tensor) -> list[torch.Tensor]:
    """Zeros for parameters the loss ignores (a Laplacian ignores the output bias)."""
    parameters = list(model.parameters())
    grads = torch.autograd.grad(loss, parameters, allow_unused=True)
    return [torch.zeros_like(p) if g is None else g for p, g in zip(parameters, grads)]


def test_autograd_fallback_is_exact_where_it_must_be(x, generator):
    # Σ x_i³ has the diagonal Hessian diag(6 x): Rademacher v_i² = 1 makes every estimate exact.
    def cubes(points: torch.Tensor) -> torch.Tensor:
        return (points**3).sum(dim=1)

    exact = 6 * x.sum(dim=1, keepdim=True)
    for method, samples in [("rademacher", 2), ("sparse", DIM)]:
        estimate = stochastic_laplacian(cubes, x, samples, generator, method)
        torch.testing.assert_close(estimate, exact, rtol=1e-12, atol=1e-12)


def test_autograd_fallback_refuses_batch_coupled_models(generator):
    coupled = nn.Sequential(nn.Linear(DIM, 4), nn.BatchNorm1d(4), nn.Tanh(), nn.Linear(4, 1))
    with pytest.raises(NotPointwiseError):
        stochastic_laplacian(coupled, torch.rand(8, DIM, generator=generator), 2, generator)


@pytest.mark.parametrize("method", METHODS)
def test_directions_are_reproducible_and_have_identity_second_moment(method, x):
    def draw(seed: int) -> tuple[torch.Tensor, float]:
        return random_directions(method, x, 4, torch.Generator().manual_seed(seed))

    (first, scale), (again, _), (other, _) = draw(0), draw(0), draw(1)
    assert torch.equal(first, again) and not torch.equal(first, other)
    if method == "sparse":
        assert first.shape == (3, 4) and scale == DIM / 4
        assert all(len(row.unique()) == 4 for row in first)
        return
    assert first.shape == (3, 4, DIM) and first.dtype == DTYPE and scale == 1 / 4
    many = random_directions(method, x.repeat(2000, 1), 4, torch.Generator().manual_seed(2))[0]
    second_moment = torch.einsum("nsi,nsj->ij", many, many) / (many.shape[0] * 4)
    torch.testing.assert_close(second_moment, torch.eye(DIM, dtype=DTYPE), atol=0.05, rtol=0)


@pytest.mark.parametrize(
    ("samples", "method", "generator_arg", "error", "message"),
    [
        (0, "rademacher", True, ValueError, "samples"),
        (2, "uniform", True, ValueError, "choose one of"),
        (DIM + 1, "sparse", True, ValueError, "at most"),
        (2, "gaussian", False, TypeError, "torch.Generator"),
        (3, "sparse", True, ValueError, "at most 2, the coordinates the Laplacian sums over"),
        (2, "rademacher", True, ValueError, "sorted distinct input indices in 0..9"),
    ],
)
def test_bad_arguments_say_what_to_do(samples, method, generator_arg, error, message, model, x):
    generator = torch.Generator().manual_seed(0) if generator_arg else 0
    inputs = (3, 5) if "at most 2" in message else (5, 3) if "sorted" in message else None
    with pytest.raises(error, match=message):
        stochastic_laplacian(model, x, samples, generator, method, inputs)
