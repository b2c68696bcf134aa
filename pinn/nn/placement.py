"""Where a model computes: the dtype and device of its parameters, for points made to meet it."""

from __future__ import annotations

import torch


def placement(
    model, default_dtype: torch.dtype = torch.float64
) -> tuple[torch.dtype, torch.device]:
    """(dtype, device) of `model`'s first parameter; (default_dtype, cpu) for a callable
    without parameters (a plain function, or a module with none)."""
    parameters = model.parameters() if hasattr(model, "parameters") else iter(())
    parameter = next(iter(parameters), None)
    if parameter is None:
        return default_dtype, torch.device("cpu")
    return parameter.dtype, parameter.device
