"""A quasi-Newton state read from a checkpoint (always loaded on the CPU) lands on the device and
dtype of the parameters it is loaded into: L-BFGS's curvature pairs, BFGS's float64 inverse
Hessian. The `meta` device stands in for a GPU: a tensor left on the CPU shows at once; the
cuda cases are marked `gpu`."""

import pytest
import torch

from pinn.training.optim.bfgs import BFGS
from pinn.training.optim.lbfgs import LBFGS
from pinn.training.phases import BFGSSettings, LBFGSSettings

# meta stands in for a GPU on any machine; cuda itself where there is one.
DEVICES = ["cpu", "meta", pytest.param("cuda", marks=pytest.mark.gpu)]


def quadratic_state(optimizer_type, settings, dtype):
    """The state of `optimizer_type` after a few iterations on a quadratic, on the CPU."""
    x = torch.tensor([1.0, -2.0, 0.5], dtype=dtype, requires_grad=True)
    scales = torch.tensor([1.0, 10.0, 100.0], dtype=dtype)

    def closure():
        x.grad = None
        loss = (scales * x * x).sum()
        loss.backward()
        return loss, None

    optimizer = optimizer_type([x], settings)
    optimizer.iterate(closure, 3, lambda loss, info: None)
    return optimizer.state_dict()


def state_tensors(state):
    """Every tensor in `state` (through lists, tuples and dicts)."""
    if isinstance(state, torch.Tensor):
        return [state]
    if isinstance(state, dict):
        state = list(state.values())
    if isinstance(state, (list, tuple)):
        return [t for item in state for t in state_tensors(item)]
    return []


@pytest.mark.parametrize("saved_dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_lbfgs_memory_lands_on_the_parameters_device_and_dtype(saved_dtype, device, dtype):
    state = quadratic_state(LBFGS, LBFGSSettings(), saved_dtype)
    assert state["memory"], "no curvature pair learnt: nothing to check"
    parameter = torch.zeros(3, dtype=dtype, device=device, requires_grad=True)
    optimizer = LBFGS([parameter], LBFGSSettings())
    optimizer.load_state_dict(state)
    tensors = state_tensors(optimizer.state_dict())
    assert len(tensors) == 2 * len(state["memory"])
    for tensor in tensors:
        assert (tensor.device.type, tensor.dtype) == (device, dtype)


@pytest.mark.parametrize("saved_dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_bfgs_inverse_hessian_lands_on_the_parameters_device_in_float64(saved_dtype, device, dtype):
    state = quadratic_state(BFGS, BFGSSettings(), saved_dtype)
    parameter = torch.zeros(3, dtype=dtype, device=device, requires_grad=True)
    optimizer = BFGS([parameter], BFGSSettings())
    optimizer.load_state_dict(state)
    inverse = optimizer.state_dict()["inverse_hessian"]
    assert (inverse.device.type, inverse.dtype, inverse.shape) == (device, torch.float64, (3, 3))
