"""Shared fixtures: seeded generators (never global seeds) and a backward-pass counter."""

from __future__ import annotations

import pytest
import torch

SEED = 20240607


@pytest.fixture
def generator() -> torch.Generator:
    """A CPU `torch.Generator` with a fixed seed, fresh for every test."""
    return torch.Generator().manual_seed(SEED)


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
