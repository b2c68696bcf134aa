"""Training points: one seeded generator draws every batch, and a checkpoint can redraw the last.

points = PointSampler(problem.domain, 2000, 400, "sobol", torch.Generator().manual_seed(1))
batch = points.draw()          # Batch: (2000, d) interior, 400 boundary points
state = points.state_dict()    # plain tensors: enough to get `batch` back, and what follows
"""

from __future__ import annotations

from typing import Any

import torch

from pinn.checkpoint import CheckpointError
from pinn.domain import Box
from pinn.errors import require_int
from pinn.loss import Batch


class PointSampler:
    """Draws the interior and boundary points of a training step from one seeded generator.

    Shapes: `draw().interior` is (n_interior, d); `draw().boundary.points` is (n_boundary, d).
    """

    def __init__(
        self,
        domain: Box,
        n_interior: int,
        n_boundary: int,
        method: str,
        generator: torch.Generator,
        dtype: torch.dtype = torch.float32,
        device: str | torch.device = "cpu",
    ):
        require_int("problem.n_interior", n_interior, minimum=1)
        require_int("problem.n_boundary", n_boundary, minimum=1)
        self.domain, self.method, self.generator = domain, method, generator
        self.n_interior, self.n_boundary = n_interior, n_boundary
        self.dtype, self.device = dtype, device
        self._last: Batch | None = None
        self._state_before_last: torch.Tensor | None = None

    def draw(self) -> Batch:
        # Where this draw started: `state_dict` saves it so that a resumed run draws this very
        # batch again and leaves the generator exactly where this draw leaves it.
        self._state_before_last = self.generator.get_state()
        options = dict(method=self.method, dtype=self.dtype, device=self.device)
        interior = self.domain.sample_interior(self.n_interior, self.generator, **options)
        boundary = self.domain.sample_boundary(self.n_boundary, self.generator, **options)
        self._last = Batch(interior, boundary)
        return self._last

    def state_dict(self) -> dict[str, torch.Tensor]:
        """The sampler's state after its last draw, as tensors only.

        generator: the generator's state (uint8) just before the last draw;
        interior, boundary: the (N, d) points that draw gave, to check the redraw against.
        """
        if self._last is None:
            raise RuntimeError("PointSampler.state_dict() before any draw(): nothing to save")
        return {
            "generator": self._state_before_last,
            "interior": self._last.interior.detach().cpu(),
            "boundary": self._last.boundary.points.detach().cpu(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> Batch:
        """Redraw the batch `state` was saved after; returns it, the generator just past it.

        Raises:
            CheckpointError: the redrawn points are not the saved ones (another domain, sampler
                or point count than the run that wrote the state).
        """
        self.generator.set_state(state["generator"])
        batch = self.draw()
        same = _same(batch.interior, state["interior"]) and _same(
            batch.boundary.points, state["boundary"]
        )
        if not same:
            raise CheckpointError(
                "the checkpoint's training points cannot be drawn again with this sampler: "
                "resume with the domain, sampler method, point counts and dtype of the saved run"
            )
        return batch


def _same(drawn: torch.Tensor, saved: torch.Tensor) -> bool:
    same_kind = drawn.shape == saved.shape and drawn.dtype == saved.dtype
    return same_kind and torch.equal(drawn.detach().cpu(), saved)
