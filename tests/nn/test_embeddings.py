"""FourierFeatures: the formula, a fixed seeded buffer, and use as the first layer of a network."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from pinn.errors import ConfigError
from pinn.nn.embeddings import FourierFeatures


@pytest.fixture
def generator() -> torch.Generator:
    return torch.Generator().manual_seed(7)


@pytest.mark.parametrize("include_input", [False, True])
def test_features_follow_the_formula(include_input, generator):
    embedding = FourierFeatures(3, 5, scale=2.0, include_input=include_input, generator=generator)
    x = torch.rand(11, 3, generator=generator)
    angles = 2 * math.pi * x @ embedding.frequencies
    expected = [torch.sin(angles), torch.cos(angles)] + ([x] if include_input else [])
    features = embedding(x)
    assert features.shape == (11, embedding.out_dim)
    assert embedding.out_dim == 10 + (3 if include_input else 0)
    torch.testing.assert_close(features, torch.cat(expected, dim=1))


def test_frequencies_are_a_seeded_untrained_buffer_with_the_requested_scale():
    def build(seed: int) -> FourierFeatures:
        return FourierFeatures(4, 2000, scale=3.0, generator=torch.Generator().manual_seed(seed))

    embedding = build(0)
    assert embedding.frequencies.shape == (4, 2000)
    assert list(embedding.parameters()) == []
    assert "frequencies" in embedding.state_dict()
    assert torch.equal(embedding.frequencies, build(0).frequencies)
    assert not torch.equal(embedding.frequencies, build(1).frequencies)
    assert abs(embedding.frequencies.std().item() - 3.0) < 0.1


def test_state_dict_and_dtype_move_with_the_module(generator):
    embedding = FourierFeatures(2, 3, generator=generator).to(torch.float64)
    assert embedding.frequencies.dtype == torch.float64
    restored = FourierFeatures(2, 3, dtype=torch.float64)
    restored.load_state_dict(embedding.state_dict())
    x = torch.rand(5, 2, dtype=torch.float64, generator=generator)
    assert torch.equal(restored(x), embedding(x))


def test_works_as_the_first_layer_of_a_sequential(generator):
    embedding = FourierFeatures(2, 4, include_input=True, generator=generator)
    model = nn.Sequential(embedding, nn.Linear(embedding.out_dim, 8), nn.Tanh(), nn.Linear(8, 1))
    x = torch.rand(6, 2, generator=generator)
    model(x).sum().backward()
    assert model[1].weight.grad is not None
    assert not embedding.frequencies.requires_grad


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"in_dim": 0, "n_features": 3}, "in_dim"),
        ({"in_dim": 2, "n_features": 2.5}, "n_features"),
        ({"in_dim": 2, "n_features": 3, "scale": 0.0}, "scale"),
        ({"in_dim": 2, "n_features": 3, "scale": float("nan")}, "scale"),
        ({"in_dim": 2, "n_features": 3, "scale": True}, "scale must be a positive finite number"),
    ],
)
def test_bad_arguments_are_refused(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        FourierFeatures(**kwargs)


def test_wrong_input_width_says_what_was_expected(generator):
    embedding = FourierFeatures(3, 2, generator=generator)
    with pytest.raises(ValueError, match="built for 3 input coordinates"):
        embedding(torch.rand(4, 2, generator=generator))
