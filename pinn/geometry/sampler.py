"""Training points: one seeded generator draws every batch, and a checkpoint can redraw the last.

points = PointSampler(problem.domain, 2000, 400, "sobol", torch.Generator().manual_seed(1))
batch = points.draw()          # Batch: (2000, d) interior, 400 boundary points
PointSampler(domain, 2000, {"hole": 600, "outer": 0}, ...)   # boundary points counted per part
state = points.state_dict()    # plain tensors: enough to get `batch` back, and what follows

With a `Refinement` (pinn.geometry.refinement), `points.refine(residual)` moves or adds
interior points where |residual| is large (RAR, RAD), drawing its candidates from the same
generator; the training phases call it at their `refine_every`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import torch

from pinn.errors import CheckpointError, ConfigError, require_int
from pinn.geometry.domain import BoundaryPoints, Domain
from pinn.geometry.refinement import Refinement, evaluate
from pinn.geometry.sampling import check_method, onto
from pinn.syncs import on_host

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Batch:
    """The points one training step sees: (N_i, d) interior and the boundary points."""

    interior: torch.Tensor
    boundary: BoundaryPoints


class PointSampler:
    """Draws the interior and boundary points of a training step from one seeded generator.

    Shapes: `draw().interior` is (n_interior, d), plus RAR's added points; `draw().boundary.points`
    is (n_boundary, d), n_boundary a count shared by measure over every boundary part, or
    {part: count} (`pinn.boundary_counts` gives those a problem's conditions use): the sum of
    the counts. `refinement` (default: none) says how `refine` follows the residual.
    """

    def __init__(
        self,
        domain: Domain,
        n_interior: int,
        n_boundary: int | Mapping[str, int],
        method: str,
        generator: torch.Generator,
        dtype: torch.dtype = torch.float32,
        device: str | torch.device = "cpu",
        refinement: Refinement | None = None,
    ):
        require_int("problem.n_interior", n_interior, minimum=1)
        if not isinstance(n_boundary, Mapping):
            require_int("problem.n_boundary", n_boundary, minimum=0)
        check_method(method, "problem.sampler")
        self.domain, self.method, self.generator = domain, method, generator
        self.n_interior = n_interior
        self.n_boundary = dict(n_boundary) if isinstance(n_boundary, Mapping) else n_boundary
        self.dtype, self.device = dtype, device
        self.refinement = refinement or Refinement()
        self._drawn: Batch | None = None  # the last draw
        self._last: Batch | None = None  # the current batch: the last draw, maybe refined since
        self._state_before_last: torch.Tensor | None = None
        self._state_after_refine: torch.Tensor | None = None  # None: not refined since the draw
        self._added = torch.empty(0, domain.dim, dtype=dtype, device=device)  # RAR's, for good

    def draw(self) -> Batch:
        """Fresh interior and boundary points; the interior also holds every point RAR added."""
        # Where this draw started: `state_dict` saves it so that a resumed run draws this very
        # batch again and leaves the generator exactly where this draw leaves it.
        self._state_before_last = self.generator.get_state()
        self._state_after_refine = None
        options = dict(method=self.method, dtype=self.dtype, device=self.device)
        interior = self.domain.sample_interior(self.n_interior, self.generator, **options)
        boundary = self.domain.sample_boundary(self.n_boundary, self.generator, **options)
        self._drawn = Batch(interior, boundary)
        if len(self._added):
            return self._keep(torch.cat([interior, self._added]))
        self._last = self._drawn
        return self._last

    def refine(self, residual: Callable[[torch.Tensor], torch.Tensor]) -> Batch:
        """Follow the residual at `refinement.candidates` fresh points; returns the new batch.

        residual: maps (m, d) points to their (m,) residuals (the sign is ignored). It is
            called with autograd on (it needs derivatives in x) on at most n_interior points at
            a time, so refining takes no more memory than a training step; its result is
            detached. `pinn.geometry.refinement.residual_magnitude` reduces a system's residual.

        "rar": the `add` candidates of largest |residual| join the points kept for good: the
        interior is the last draw's n_interior points and all added so far. "rad": the interior
        is n_interior candidates drawn with p ∝ |r|^k / mean(|r|^k) + c, until the next draw.
        The boundary points stay the last draw's. The candidates (drawn with the sampler's
        method) and RAD's choice come from the sampler's generator.
        """
        if self._drawn is None:
            raise RuntimeError("PointSampler.refine() before any draw(): draw a batch first")
        if self.refinement.method == "none":
            raise RuntimeError(
                "PointSampler.refine() with refinement.method 'none': there is no method to "
                "refine by"
            )
        options = dict(method=self.method, dtype=self.dtype, device=self.device)
        candidates = self.domain.sample_interior(
            self.refinement.candidates, self.generator, **options
        )
        magnitude = evaluate(residual, candidates, chunk=self.n_interior)  # on the host
        with on_host():
            chosen = self.refinement.select(magnitude, self.n_interior, self.generator)
        interior = candidates[onto(chosen, torch.int64, self.device)]
        if self.refinement.method == "rar":
            self._added = torch.cat([self._added, interior])
            interior = torch.cat([self._drawn.interior, self._added])
        self._state_after_refine = self.generator.get_state()
        return self._keep(interior)

    def state_dict(self) -> dict[str, Any]:
        """The sampler's state after its last draw and refinement, as tensors only.

        generator: the generator's state (uint8) just before the last draw;
        interior, boundary: the (N, d) points that draw gave, to check the redraw against;
        boundary_counts: {part: count} where the boundary points were counted per part (absent
        where a count was shared by measure over every part, as every older pinn did).
        With a refinement method, also refinement: its settings (a dict); added: the (A, d)
        points RAR added (0 rows for RAD); and, after a refinement since the last draw,
        refined: {"generator": the state after it, "interior": the current interior points}.
        """
        if self._drawn is None:
            raise RuntimeError("PointSampler.state_dict() before any draw(): nothing to save")
        state = {
            "generator": self._state_before_last,
            "interior": self._drawn.interior.detach().cpu(),
            "boundary": self._drawn.boundary.points.detach().cpu(),
        }
        if isinstance(self.n_boundary, dict):
            state["boundary_counts"] = dict(self.n_boundary)
        if self.refinement.method != "none":
            state["refinement"] = self.refinement.settings()
            state["added"] = self._added.detach().cpu()
        if self._state_after_refine is not None:
            interior = self._last.interior.detach().cpu()
            state["refined"] = {"generator": self._state_after_refine, "interior": interior}
        return state

    def load_state_dict(self, state: dict[str, Any]) -> Batch:
        """Take up the batch `state` was saved at; returns it, the generator just past it.

        The last draw is drawn again and checked against the saved points. A state that holds
        no boundary counts (one written before they could be counted per part) had its
        boundary points shared by measure over every part: this sampler goes on drawing them so,
        and the run continues as it began. Refined points are
        restored as saved: they were chosen by the residual of the network at that time, which
        the generator alone cannot reproduce.

        Raises:
            ConfigError: the state was refined with other refinement settings than these.
            CheckpointError: the redrawn points are not the saved ones (another domain, sampler
                or point count than the run that wrote the state).
        """
        mine = None if self.refinement.method == "none" else self.refinement.settings()
        saved = _without_interval(state.get("refinement"))
        if saved != mine:
            raise ConfigError(
                f"the checkpoint's points were refined with {saved}, this "
                f"sampler refines with {mine}: resume with the saved run's refinement settings"
            )
        if mine is not None:
            self._added = state["added"].to(dtype=self.dtype, device=self.device)
        self._take_boundary_split(state)
        self.generator.set_state(state["generator"])
        batch = self.draw()
        same = _same(self._drawn.interior, state["interior"]) and _same(
            self._drawn.boundary.points, state["boundary"]
        )
        if not same:
            raise CheckpointError(
                "the checkpoint's training points cannot be drawn again with this sampler: "
                "resume with the domain, sampler method, point counts and dtype of the saved run"
            )
        refined = state.get("refined")
        if refined is not None:
            self.generator.set_state(refined["generator"])
            self._state_after_refine = refined["generator"]
            batch = self._keep(refined["interior"].to(dtype=self.dtype, device=self.device))
        return batch

    def _take_boundary_split(self, state: dict[str, Any]) -> None:
        """Draw the boundary points as the run that wrote `state` did, where it predates
        counts per part (their split then is not this config's to choose)."""
        if "boundary_counts" in state or not isinstance(self.n_boundary, dict):
            return
        self.n_boundary = len(state["boundary"])
        log.info(
            "the checkpoint's sampler shared its %d boundary points by measure over every part "
            "(written before points were counted per part): the resumed run goes on so",
            self.n_boundary,
        )

    def _keep(self, interior: torch.Tensor) -> Batch:
        """Make the (N, d) `interior` and the last draw's boundary points the current batch."""
        self._last = Batch(interior, self._drawn.boundary)
        return self._last


def _without_interval(saved: dict[str, Any] | None) -> dict[str, Any] | None:
    """Saved refinement settings without `every`, which checkpoints held before the interval
    became each phase's (`trainer.adam.refine_every`, compared with the run's settings)."""
    if saved is None:
        return None
    return {key: value for key, value in saved.items() if key != "every"}


def _same(drawn: torch.Tensor, saved: torch.Tensor) -> bool:
    same_kind = drawn.shape == saved.shape and drawn.dtype == saved.dtype
    return same_kind and torch.equal(drawn.detach().cpu(), saved)
