"""Unbiased stochastic estimates of the Laplacian, at the cost of s directions instead of d.

tr H = E[v^T H v] whenever E[v v^T] = I, so the mean of s second directional derivatives
v^T H v estimates the Laplacian without bias, for any s:

    "rademacher"  v with independent ±1 entries (Hutchinson)
    "gaussian"    v ~ N(0, I) (Hutchinson)
    "sparse"      s distinct coordinates e_j drawn without replacement, scaled by d/s: the
                  stochastic Taylor derivative estimator (Shi et al. 2024); exact at s = d

Every point draws its own directions, so the errors at different points are independent and
average out in a mean squared residual. The v^T H v come from one collapsed forward Taylor
pass when the model allows it (`pinn.derivatives.taylor`), else from Hessian-vector products with
torch.autograd, one backward pass per output and direction.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

from pinn.derivatives.field import Field, quadratic_forms_sum
from pinn.derivatives.functions import check_pointwise
from pinn.derivatives.taylor import taylor_forward, taylor_supported
from pinn.errors import ConfigError, require_int

Tensor = torch.Tensor
Model = Callable[[Tensor], Tensor]
METHODS = ("rademacher", "gaussian", "sparse")


def stochastic_laplacian(
    f: Model,
    x: Tensor,
    samples: int,
    generator: torch.Generator,
    method: str = "rademacher",
    inputs: Sequence[int] | None = None,
) -> Tensor:
    """(N, m) unbiased estimate of the Laplacian of f's outputs at the (N, d) points x, over
    every input or over the `inputs` given (a space-time's space: Σ_{j in inputs} ∂²f/∂x_j²).

    Args:
        f: a pointwise callable (N, d) -> (N, m); one the Taylor pass carries
            (`taylor_supported`) runs in one forward pass, anything else through autograd.
        x: (N, d) points.
        samples: s, the number of random directions per point; the variance falls like 1/s
            (faster for "sparse", which is exact at s = d).
        generator: draws the directions, so a seed reproduces the estimate.
        method: one of METHODS (see the module docstring).
        inputs: the input indices the Laplacian sums over (None: all d); the directions then
            have zeros elsewhere, and "sparse" draws its coordinates among these.

    The estimate stays differentiable in f's parameters, so it can go straight into a loss.
    """
    directions, scale = random_directions(method, x, samples, generator, inputs)
    return scale * second_directional_sum(f, x, directions)


class LaplacianEstimator:
    """How a residual's `u.laplacian()` is estimated: `samples` random directions per point by
    `method` (see the module docstring), drawn from `generator`.

    Give it to `pinn.fit(..., estimator=...)` (or set `laplacian.method=stochastic` in the
    config): every field then estimates its Laplacian, exact first derivatives and other
    second derivatives alongside. The generator's state is part of a run's checkpoint, so a
    resumed run draws the same directions.
    """

    def __init__(
        self, samples: int, method: str = "sparse", generator: torch.Generator | None = None
    ):
        if method not in METHODS:
            raise ConfigError(
                f"laplacian.estimator={method!r} is unknown; choose one of {', '.join(METHODS)}"
            )
        require_int("laplacian.samples", samples, minimum=1)
        self.samples, self.method = samples, method
        self.generator = generator if generator is not None else torch.Generator()

    def __repr__(self) -> str:
        return f"LaplacianEstimator(samples={self.samples}, method={self.method!r})"

    def check_dimension(self, dim: int, what: str = "inputs") -> None:
        """Refuse a sparse estimator with more samples than the `dim` coordinates the Laplacian
        sums over (`what` names them in the message: "inputs", "space coordinates")."""
        if self.method == "sparse" and self.samples > dim:
            raise ConfigError(
                f"laplacian.samples={self.samples} is more than the problem's {dim} {what}; the "
                f"sparse estimator draws distinct coordinates, so use at most {dim} (at {dim} it "
                "is the exact Laplacian: laplacian.method=exact is the same, and cheaper)"
            )

    def draw(self, x: Tensor, inputs: Sequence[int] | None = None) -> tuple[Tensor, float]:
        """Directions for the (N, d) points x over the `inputs` given (None: all) and their
        scale (see `random_directions`)."""
        return random_directions(self.method, x, self.samples, self.generator, inputs)

    def state_dict(self) -> dict:
        return {
            "samples": self.samples,
            "method": self.method,
            "generator": self.generator.get_state(),
        }

    def load_state_dict(self, state: dict) -> None:
        if (state["samples"], state["method"]) != (self.samples, self.method):
            raise ConfigError(
                f"the checkpoint estimated the Laplacian with {state['samples']} {state['method']} "
                f"samples, this run with {self.samples} {self.method}: a resumed run keeps them"
            )
        self.generator.set_state(state["generator"])


def random_directions(
    method: str,
    x: Tensor,
    samples: int,
    generator: torch.Generator,
    inputs: Sequence[int] | None = None,
) -> tuple[Tensor, float]:
    """Per-point random directions for the (N, d) points x, and the factor that unbiases them.

    `inputs` (sorted distinct indices; None: all d) are the coordinates the Laplacian sums
    over: the directions span only those, so that the estimate's mean is Σ_{j in inputs} H_jj.

    Returns:
        directions: (N, s, d) floats for "rademacher" and "gaussian" (zero outside `inputs`),
            (N, s) sorted distinct input indices (standing for unit vectors) for "sparse".
        scale: 1/s, or k/s for "sparse" over k coordinates, so that scale * Σ_i v_i^T H v_i
            has that mean.
    """
    _check_arguments(method, x, samples, generator, inputs)
    n_points, dim = x.shape
    spanned = range(dim) if inputs is None else inputs
    device = generator.device
    if method == "sparse":
        # The s largest of k uniform scores are a uniform random s-subset of the coordinates;
        # sorted, so that s = k gives exactly the deterministic Laplacian's order of summation.
        scores = torch.rand(n_points, len(spanned), generator=generator, device=device)
        chosen = scores.topk(samples, dim=1).indices.sort(dim=1).values
        if inputs is not None:  # positions among the inputs -> input indices (order kept)
            chosen = torch.tensor(inputs, device=device)[chosen]
        return chosen.to(x.device), len(spanned) / samples
    shape = (n_points, samples, len(spanned))
    if method == "gaussian":
        directions = torch.randn(shape, generator=generator, dtype=x.dtype, device=device)
    else:
        signs = torch.randint(0, 2, shape, generator=generator, device=device)
        directions = (2 * signs - 1).to(x.dtype)
    if inputs is not None:
        spread = directions.new_zeros(n_points, samples, dim)
        spread[:, :, list(inputs)] = directions
        directions = spread
    return directions.to(x.device), 1 / samples


def second_directional_sum(f: Model, x: Tensor, directions: Tensor) -> Tensor:
    """(N, m) Σ_i v_i^T H(x_n) v_i over each point's directions.

    x: (N, d) points; directions: (N, s, d) floats, or (N, s) input indices for unit vectors.
    One collapsed Taylor pass when f supports it, else Hessian-vector products by autograd.
    """
    if taylor_supported(f, x)[0]:
        return taylor_forward(f, x, directions, "collapsed").second
    return _autograd_sum(f, x, directions)


def _autograd_sum(f: Model, x: Tensor, directions: Tensor) -> Tensor:
    """The fallback for any pointwise callable: Hessian-vector products by autograd."""
    check_pointwise(f, x)
    field = Field(f, x)
    sums = []
    for out in range(field.values.shape[1]):
        gradient = torch.stack([field.d(i, out) for i in range(field.dim)], dim=1)
        sums.append(quadratic_forms_sum(gradient, field.x, directions))
    return torch.stack(sums, dim=1)


def _check_arguments(
    method: str,
    x: Tensor,
    samples: int,
    generator: torch.Generator,
    inputs: Sequence[int] | None,
) -> None:
    if method not in METHODS:
        raise ValueError(f"method={method!r} is unknown; choose one of {', '.join(METHODS)}")
    if x.ndim != 2 or not x.is_floating_point():
        raise ValueError(f"points must be floats of shape (N, d), got {x.dtype} {tuple(x.shape)}")
    if not isinstance(samples, int) or isinstance(samples, bool) or samples < 1:
        raise ValueError(f"samples must be a whole number >= 1, got {samples!r}")
    if inputs is not None and (
        len(inputs) == 0
        or list(inputs) != sorted(set(inputs))
        or not all(isinstance(i, int) and 0 <= i < x.shape[1] for i in inputs)
    ):
        raise ValueError(
            f"inputs must be sorted distinct input indices in 0..{x.shape[1] - 1}, got "
            f"{list(inputs)}"
        )
    spanned = x.shape[1] if inputs is None else len(inputs)
    if method == "sparse" and samples > spanned:
        raise ValueError(
            f"the sparse estimator draws distinct coordinates, so samples must be at most "
            f"{spanned}, the coordinates the Laplacian sums over, got {samples}; use "
            f"samples={spanned} for the exact Laplacian"
        )
    if not isinstance(generator, torch.Generator):
        raise TypeError(
            f"generator must be a torch.Generator (e.g. torch.Generator().manual_seed(0)), "
            f"got {type(generator).__name__}"
        )
