"""KFAC's curvature: the moving averages of each layer's Kronecker factors and of the other
parameters' diagonal, and the damped block-diagonal solve they make (`pinn.training.optim.kfac`).

    curvature = KroneckerCurvature(shapes, {layer: (weight index, bias index)})
    curvature.average(factors, diagonal, ema)        # an evaluation's, into the averages
    t = curvature.tikhonov(damping)                  # {layer: t, None: the others' t}
    direction = -curvature.precondition(g, t)        # (P,) -K^-1 g

K is block diagonal over the parameters laid out flat (in the order of `shapes`): a layer's
block, for its [W | b] row by row, is B1 ⊗ A1 + B2 ⊗ A2 (one pair per group of terms that
reaches it) plus t I split between the factors of each pair (`kronecker.damp`), solved exactly
(`kronecker.kronecker_solve`); every other parameter's, its diagonal estimate plus t. The
damping t is relative: `damping` times the mean diagonal entry of the block, so that it does
not depend on the loss's scale or the layer's width.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from pinn.training.optim.kronecker import damp, kronecker_solve

Factors = dict[str, dict[str, tuple[torch.Tensor, torch.Tensor]]]


class KroneckerCurvature:
    """The averaged factors and diagonal of KFAC over parameters of the given shapes.

    Args:
        shapes: the parameters' shapes, in the order of the flat vectors.
        layers: {layer: (its weight's index, its bias's or None)} for the factored layers.
        dtype: of the factors and solves.
    """

    def __init__(
        self,
        shapes: Sequence[torch.Size],
        layers: dict[str, tuple[int, int | None]],
        dtype: torch.dtype = torch.float64,
    ):
        self.shapes, self.layers, self.dtype = list(shapes), dict(layers), dtype
        self.offsets = [0]
        for shape in self.shapes:
            self.offsets.append(self.offsets[-1] + shape.numel())
        covered = {i for pair in self.layers.values() for i in pair if i is not None}
        self.others = [i for i in range(len(self.shapes)) if i not in covered]
        self.factors: Factors = {}
        self.diagonal: torch.Tensor | None = None

    def state_dict(self) -> dict[str, Any]:
        return {
            "factors": {g: {k: list(v) for k, v in f.items()} for g, f in self.factors.items()},
            "diagonal": self.diagonal,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.factors = {g: {k: tuple(v) for k, v in f.items()} for g, f in state["factors"].items()}
        self.diagonal = state["diagonal"]

    def average(self, factors: Factors, diagonal: torch.Tensor, ema: float) -> None:
        """Take an evaluation's factors ({group: {layer: (A, B)}}) and (P,) diagonal estimate
        into the moving averages, F <- ema F + (1 - ema) F_new (the first taken as it is)."""
        for group, layers in factors.items():
            held = self.factors.setdefault(group, {})
            for name, pair in layers.items():
                pair = tuple(f.detach().to(self.dtype) for f in pair)
                old = held.get(name)
                held[name] = pair if old is None else _blend(old, pair, ema)
        others = diagonal.to(self.dtype)[self._other_columns()]
        old = self.diagonal
        self.diagonal = others if old is None else ema * old + (1 - ema) * others

    def _other_columns(self) -> torch.Tensor:
        """The flat indices of the parameters without factors."""
        parts = [torch.arange(self.offsets[i], self.offsets[i + 1]) for i in self.others]
        return torch.cat(parts) if parts else torch.zeros(0, dtype=torch.long)

    def tikhonov(self, damping: float) -> dict[str | None, float]:
        """{layer: t} and, under None, the others': `damping` times the mean diagonal entry of
        the block."""
        out = {}
        for name in self.layers:
            pairs = [layers[name] for layers in self.factors.values() if name in layers]
            scale = sum(A.diagonal().mean() * B.diagonal().mean() for A, B in pairs)
            out[name] = damping * float(scale) + torch.finfo(self.dtype).tiny
        if self.diagonal is not None and self.diagonal.numel():
            out[None] = damping * self.diagonal.mean().item() + torch.finfo(self.dtype).tiny
        return out

    def precondition(self, g: torch.Tensor, tikhonov: dict) -> torch.Tensor:
        """(P,) the damped K^-1 g; zero for a layer without factors yet, which no row has
        reached (its gradient is zero too: PirateNet's blocks while their α are 0)."""
        out = torch.zeros_like(g)
        for name, (weight, bias) in self.layers.items():
            block = self._block(g, weight, bias)
            pairs = [layers[name] for layers in self.factors.values() if name in layers]
            if not pairs:
                continue
            share = tikhonov[name] / len(pairs)
            solved = kronecker_solve([damp(A, B, share) for A, B in pairs], block)
            self._unblock(out, solved, weight, bias)
        columns = self._other_columns()
        if columns.numel():
            out[columns] = g[columns] / (self.diagonal + tikhonov[None])
        return out

    def _block(self, flat: torch.Tensor, weight: int, bias: int | None) -> torch.Tensor:
        """(out, in [+ 1]) a layer's entries of the flat vector: [W | b]."""
        shape = self.shapes[weight]
        block = flat[self.offsets[weight] : self.offsets[weight + 1]].view(shape)
        if bias is None:
            return block
        return torch.cat([block, flat[self.offsets[bias] : self.offsets[bias + 1]][:, None]], 1)

    def _unblock(self, flat: torch.Tensor, block: torch.Tensor, weight: int, bias: int | None):
        columns = self.shapes[weight][1]
        flat[self.offsets[weight] : self.offsets[weight + 1]] = block[:, :columns].reshape(-1)
        if bias is not None:
            flat[self.offsets[bias] : self.offsets[bias + 1]] = block[:, columns]

    def damping_vector(self, tikhonov: dict) -> torch.Tensor:
        """(P,) each parameter's Tikhonov term."""
        out = torch.zeros(self.offsets[-1], dtype=self.dtype)
        for name, pair in self.layers.items():
            for i in pair:
                if i is not None:
                    out[self.offsets[i] : self.offsets[i + 1]] = tikhonov[name]
        out[self._other_columns()] = tikhonov.get(None, 0.0)
        return out


def _blend(old: tuple, new: tuple, ema: float) -> tuple:
    return tuple(ema * o + (1 - ema) * n for o, n in zip(old, new))
