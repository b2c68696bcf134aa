"""Shared fixtures: seeded generators only, never global seeds."""

from __future__ import annotations

import pytest
import torch

SEED = 20240607


@pytest.fixture
def generator() -> torch.Generator:
    """A CPU `torch.Generator` with a fixed seed, fresh for every test."""
    return torch.Generator().manual_seed(SEED)
