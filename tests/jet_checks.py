"""The Taylor pass against torch.func in float64, for the derivative tests: one reference and
one comparison, shared by the tests of every kind of network."""

from __future__ import annotations

import torch
from torch.func import hessian, jacrev, vmap

from pinn.derivatives.taylor import taylor_forward, taylor_laplacian

TOL = {"rtol": 1e-10, "atol": 1e-10}


def torch_func_reference(model, x: torch.Tensor):
    """value (N, m), gradient (N, m, d), Hessian (N, m, d, d) of a pointwise model, by
    torch.func."""

    def single(point):
        return model(point[None])[0]

    return model(x), vmap(jacrev(single))(x), vmap(hessian(single))(x)


def assert_jet_matches(model, x: torch.Tensor, value, gradient, full) -> None:
    """The Taylor pass's value, gradient, diagonal Hessian, Laplacian and full Hessian of
    `model` at x (every input) equal the given reference's to 1e-10."""
    inputs = list(range(x.shape[1]))
    diagonal = full.diagonal(dim1=-2, dim2=-1)
    jet = taylor_forward(model, x, inputs, "diagonal")
    torch.testing.assert_close(jet.value, value, **TOL, msg="value")
    torch.testing.assert_close(jet.first, gradient, **TOL, msg="gradient")
    torch.testing.assert_close(jet.second, diagonal, **TOL, msg="diagonal Hessian")
    laplacian = taylor_laplacian(model, x).laplacian
    torch.testing.assert_close(laplacian, diagonal.sum(-1), **TOL, msg="Laplacian")
    full_jet = taylor_forward(model, x, inputs, "full")
    torch.testing.assert_close(full_jet.second, full, **TOL, msg="Hessian")
