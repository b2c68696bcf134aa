"""Networks that write in place (`out[:, 0] = a`, `h.mul_(2)`, `index_fill_`, `masked_fill_`)
are carried by the Taylor pass without falling back: tracing turns each write into its
out-of-place form (select_scatter, slice_scatter, index_fill, ...), which has a rule.

torch.func cannot differentiate the in-place writes under vmap, so each network is also written
without them (`in_place=False`, the same arithmetic), and the Taylor pass on the in-place form is
checked against torch.func on that twin in float64.
"""

from __future__ import annotations

import pytest
import torch
from jet_checks import assert_jet_matches
from jet_checks import torch_func_reference as reference
from torch import nn
from torch.func import functional_call, grad

from pinn.derivatives.taylor import taylor_forward, taylor_supported

DTYPE = torch.float64
TOL = {"rtol": 1e-10, "atol": 1e-10}


class Writes(nn.Module):
    """Three outputs assembled by in-place writes into a fresh tensor and into copies of x."""

    def __init__(self, d: int, generator: torch.Generator):
        super().__init__()
        self.first = nn.Linear(d, 8, dtype=DTYPE)
        self.second = nn.Linear(8, 3, dtype=DTYPE)
        with torch.no_grad():
            for parameter in self.parameters():
                parameter.copy_(torch.randn(parameter.shape, generator=generator, dtype=DTYPE))

    def forward(self, x: torch.Tensor, in_place: bool = True) -> torch.Tensor:
        h = self.first(x)
        if in_place:
            h.mul_(1.5).add_(0.1)
        else:
            h = h * 1.5 + 0.1
        y = self.second(torch.tanh(h))
        return self._written(x, y) if in_place else self._out_of_place(x, y)

    @staticmethod
    def _written(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        out = torch.zeros(x.shape[0], 3, dtype=x.dtype)
        out[:, 0] = y[:, 0] * x[:, 1]  # select_scatter
        out[:, 1:] = y[:, 1:]  # slice_scatter
        shifted = x.clone().index_fill_(1, torch.tensor([0]), 0.5)  # x_0 replaced by 0.5
        out += torch.sin(shifted.sum(dim=1, keepdim=True))
        out.masked_fill_(x[:, :1] > 0.6, 0.25)  # a constant where x_0 > 0.6
        out.index_copy_(1, torch.tensor([2]), out[:, 2:] * x[:, :1])
        out[:, torch.tensor([0, 2])] *= 2.0  # index_put
        return out

    @staticmethod
    def _out_of_place(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        out = torch.stack([y[:, 0] * x[:, 1], y[:, 1], y[:, 2]], dim=1)
        shifted = torch.cat([torch.full_like(x[:, :1], 0.5), x[:, 1:]], dim=1)
        out = out + torch.sin(shifted.sum(dim=1, keepdim=True))
        out = torch.where(x[:, :1] > 0.6, torch.full_like(out, 0.25), out)
        out = torch.cat([out[:, :2], out[:, 2:] * x[:, :1]], dim=1)
        return out * torch.tensor([2.0, 1.0, 2.0], dtype=x.dtype)


def view_of_a_changed_tensor(x: torch.Tensor, in_place: bool = True) -> torch.Tensor:
    """A view taken before its base is changed in place sees the change."""
    h = torch.sin(x)
    if not in_place:
        return 2 * h[:, :1]
    picked = h[:, :1]
    h.mul_(2)
    return picked


def close(actual, expected):
    torch.testing.assert_close(actual, expected, **TOL)


def cases(d: int):
    writes = Writes(d, torch.Generator().manual_seed(d))
    return {
        "writes": (writes, lambda x: writes(x, in_place=False)),
        "view": (view_of_a_changed_tensor, lambda x: view_of_a_changed_tensor(x, False)),
    }


@pytest.mark.parametrize("case", ["writes", "view"])
@pytest.mark.parametrize("d", [2, 4])
def test_in_place_writes_are_carried_and_match_torch_func(case, d):
    model, twin = cases(d)[case]
    x = torch.rand(16, d, generator=torch.Generator().manual_seed(1), dtype=DTYPE)
    assert taylor_supported(model, x) == (True, "")  # carried whole: no fallback
    value, gradient, full = reference(twin, x)
    close(model(x), value)  # the twin is the same function
    assert_jet_matches(model, x, value, gradient, full)
    if case == "writes":  # the masked constant: somewhere, not everywhere
        masked = x[:, 0] > 0.6
        assert 0 < masked.sum() < len(x)


def test_parameter_gradients_through_in_place_writes_match_torch_func():
    """loss = mean((Δu_0 + u_2 ∂_0 u_1)²) through the writes, against the twin's."""
    d = 3
    model = Writes(d, torch.Generator().manual_seed(5))
    x = torch.rand(12, d, generator=torch.Generator().manual_seed(6), dtype=DTYPE)

    def loss_of(value, gradient, diagonal):
        residual = diagonal[:, 0].sum(-1) + value[:, 2] * gradient[:, 1, 0]
        return (residual**2).mean()

    parameters = dict(model.named_parameters())
    jet = taylor_forward(model, x, list(range(d)), "diagonal")
    actual = torch.autograd.grad(loss_of(*jet), list(parameters.values()))

    def reference_loss(params):
        def twin(points):
            return functional_call(model, params, (points,), {"in_place": False})

        value, gradient, full = reference(twin, x)
        return loss_of(value, gradient, full.diagonal(dim1=-2, dim2=-1))

    expected = grad(reference_loss)(parameters)
    for (name, _), got in zip(parameters.items(), actual):
        torch.testing.assert_close(got, expected[name], **TOL, msg=name)
