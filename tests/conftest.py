"""Shared fixtures: seeded generators (never global seeds), a backward-pass counter and the
checkpoints a training run writes."""

from __future__ import annotations

import io
import os

import pytest
import torch

import pinn
import pinn.training.checkpoints

SEED = 20240607

if os.environ.get("PYTEST_XDIST_WORKER"):
    # Workers share the cores: one thread each, and in the runs they start.
    torch.set_num_threads(1)
    os.environ["OMP_NUM_THREADS"] = "1"


def pytest_collection_modifyitems(config, items):
    """Tests marked `gpu` are skipped, saying why, where torch sees no CUDA GPU."""
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU (torch.cuda.is_available() is false)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def generator() -> torch.Generator:
    """A CPU `torch.Generator` with a fixed seed, fresh for every test."""
    return torch.Generator().manual_seed(SEED)


@pytest.fixture
def pinn_messages(caplog):
    """A function listing the messages pinn's loggers have recorded so far, in order: caplog
    also catches other libraries' records (torch >= 2.14 logs empty ones while tracing)."""

    def messages() -> list[str]:
        return [r.getMessage() for r in caplog.records if r.name.split(".")[0] == "pinn"]

    return messages


@pytest.fixture
def grad_calls(monkeypatch) -> list[int]:
    """Counts the calls of torch.autograd.grad (one per backward pass a field makes)."""
    calls = [0]
    original = torch.autograd.grad

    def counting(*args, **kwargs):
        calls[0] += 1
        return original(*args, **kwargs)

    monkeypatch.setattr(torch.autograd, "grad", counting)
    return calls


@pytest.fixture
def written_checkpoints(monkeypatch) -> list[bytes]:
    """Every checkpoint `pinn.fit` writes from now on, serialised at once (the live parameters
    move on), instead of a file: load one with torch.load(io.BytesIO(data), weights_only=True)."""
    written = []

    def keep(path, state):
        buffer = io.BytesIO()
        torch.save(state, buffer)
        written.append(buffer.getvalue())

    monkeypatch.setattr(pinn.training.checkpoints, "save_checkpoint", keep)
    return written


@pytest.fixture
def erfinv_to_order_two():
    """While a test runs, the Taylor pass carries erfinv to order 2 only: σ, σ' and σ''
    registered, no rule of order >= 3 (every built-in function has those). Gives a function
    of a tensor in (-1, 1) that calls it; the registration is removed after."""
    from pinn.derivatives.elementwise import ELEMENTWISE_RULES
    from pinn.derivatives.elementwise_higher import HIGHER_RULES

    op = torch.ops.aten.erfinv.default
    assert op not in ELEMENTWISE_RULES, "erfinv has a built-in rule now: pick another function"

    def erfinv(z):  # erfinv' = sqrt(π) / 2 exp(erfinv²), erfinv'' = 2 erfinv erfinv'²
        value = torch.erfinv(z)
        slope = 0.5 * torch.pi**0.5 * torch.exp(value * value)
        return value, slope, 2 * value * slope * slope

    pinn.register_elementwise(op, erfinv)
    try:
        yield torch.erfinv
    finally:
        ELEMENTWISE_RULES.pop(op)
        HIGHER_RULES.pop(op, None)
