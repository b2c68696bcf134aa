"""The residual engine's public functions, for any pointwise callable f: (N, d) -> (N, m).

    gradient(f, x)      -> (N, m, d)
    hessian_diag(f, x)  -> (N, m, d)     only the d diagonal second derivatives
    laplacian(f, x)     -> (N, m)
    hessian(f, x)       -> (N, m, d, d)  full, for mixed terms
    derivative(f, x, i, order) -> (N, m) d^order u / dx_i^order, any order >= 1

Results stay differentiable in f's parameters. `hessian_diag` and `laplacian` never build the
full Hessian: one backward pass gives the gradient, then one more per input dimension gives one
row of the Hessian, of which only the diagonal entry is kept.

Each takes `engine` ("auto", "taylor", "autograd" or "functorch", see
`pinn.derivatives.engines`): "auto" runs one forward Taylor-mode pass when the Taylor pass can
carry f, else autograd.
"""

from __future__ import annotations

import torch
from torch import nn

from pinn.derivatives.engines import make_field
from pinn.derivatives.field import Field, Model, Requests
from pinn.derivatives.univariate import check_order
from pinn.errors import NotPointwiseError

# Layers that mix the rows of a batch while they train (or always, without running statistics).
_BATCH_COUPLED = (nn.modules.batchnorm._BatchNorm, nn.modules.instancenorm._InstanceNorm)


def gradient(f: Model, x: torch.Tensor, engine: str = "auto") -> torch.Tensor:
    """(N, m, d) first derivatives du_k/dx_j of f at the (N, d) points x."""
    u = _field(f, x, engine, Requests(first=set(range(x.shape[1]))))
    return torch.stack([u.grad(k) for k in range(u.values.shape[1])], dim=1)


def hessian_diag(f: Model, x: torch.Tensor, engine: str = "auto") -> torch.Tensor:
    """(N, m, d) diagonal second derivatives d²u_k/dx_j² of f at the (N, d) points x."""
    u = _field(f, x, engine, Requests(diagonal=set(range(x.shape[1]))))
    return torch.stack([u.hessian_diag(k) for k in range(u.values.shape[1])], dim=1)


def laplacian(f: Model, x: torch.Tensor, engine: str = "auto") -> torch.Tensor:
    """(N, m) Laplacians of f's outputs at the (N, d) points x."""
    u = _field(f, x, engine, Requests(laplacian=True))
    return torch.stack([u.laplacian(k) for k in range(u.values.shape[1])], dim=1)


def hessian(f: Model, x: torch.Tensor, engine: str = "auto") -> torch.Tensor:
    """(N, m, d, d) full Hessians of f's outputs at the (N, d) points x."""
    dim = x.shape[1]
    pairs = {(i, j) for i in range(dim) for j in range(i + 1, dim)}
    u = _field(f, x, engine, Requests(diagonal=set(range(dim)), mixed=pairs))
    return torch.stack([u.hessian(k) for k in range(u.values.shape[1])], dim=1)


def derivative(
    f: Model, x: torch.Tensor, input: int, order: int = 1, engine: str = "auto"
) -> torch.Tensor:
    """(N, m) derivatives d^order u_k / dx_input^order of f at the (N, d) points x; the Taylor
    engine carries orders >= 3 in one univariate pass along the input."""
    order = check_order(order)
    if not 0 <= input < x.shape[1]:
        raise IndexError(f"input {input} out of range for points with {x.shape[1]} inputs")
    if order == 1:
        plan = Requests(first={input})
    elif order == 2:
        plan = Requests(diagonal={input})
    else:
        plan = Requests(higher={(input, order)})
    u = _field(f, x, engine, plan)
    return torch.stack([u.d(input, k, order=order) for k in range(u.values.shape[1])], dim=1)


def check_pointwise(f: Model, x: torch.Tensor | None = None) -> None:
    """Refuse a model whose output rows depend on other rows of its input.

    Scans an `nn.Module` for batch-coupled layers (BatchNorm, InstanceNorm in training mode) and,
    given sample points x, also checks numerically that evaluating a sub-batch gives the same
    rows as the whole batch (which also catches dropout and hand-written coupling).

    Raises:
        NotPointwiseError: naming the layer, or describing the mismatch, and the fix.
    """
    module = f if isinstance(f, nn.Module) else getattr(f, "__self__", None)
    if isinstance(module, nn.Module):
        for name, layer in module.named_modules():
            couples = isinstance(layer, _BATCH_COUPLED) and (
                layer.training or not layer.track_running_stats
            )
            if couples:
                raise NotPointwiseError(
                    f"layer {name or type(module).__name__!r} ({type(layer).__name__}) mixes the "
                    "points of a batch, so per-point derivatives computed by the batch sum trick "
                    "would be wrong. Use a pointwise normalisation (LayerNorm) or none."
                )
    if x is not None and x.shape[0] >= 2:
        _probe_rows(f, x[:8])


def _probe_rows(f: Model, x: torch.Tensor) -> None:
    half = x.shape[0] // 2
    with torch.no_grad():
        whole = f(x)
        if not isinstance(whole, torch.Tensor) or whole.ndim not in (1, 2) or len(whole) != len(x):
            got = tuple(whole.shape) if isinstance(whole, torch.Tensor) else type(whole).__name__
            raise ValueError(
                f"the model must map (N, d) points to (N, m) outputs; got {got} from input "
                f"{tuple(x.shape)}"
            )
        whole, part = whole[:half], f(x[:half])
    tolerance = 1e-4 if x.dtype == torch.float32 else 1e-10
    if not torch.allclose(whole, part, rtol=tolerance, atol=tolerance):
        raise NotPointwiseError(
            "the model's output for a point changes with the other points in the batch (or "
            "between calls): it is not pointwise and deterministic, so per-point derivatives "
            "would be wrong. Remove batch-coupled layers (BatchNorm) and dropout."
        )


def _field(f: Model, x: torch.Tensor, engine: str, plan: Requests) -> Field:
    check_pointwise(f, x)
    return make_field(f, x, engine, plan)
