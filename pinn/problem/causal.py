"""Causal weighting of the PDE residual in time (Wang, Sankaran & Perdikaris 2022, "Respecting
causality is all you need for training physics-informed neural networks"; as in jaxpi).

    causal = CausalWeighting(CausalSettings(chunks=32, tolerance=1.0, time="t"))
    vectors = residuals(problem, model, batch, engine, causal)   # the PDE terms scaled
    causal.weights, causal.occupied                              # (M,) of that evaluation

The interior points are split into M chunks of time, equal intervals of the time coordinate over
the domain's time range [lo, hi]: point p (time t_p) lies in chunk

    c_p = min(floor(M (t_p - lo) / (hi - lo)), M - 1)     (clamped to 0 .. M-1)

With n_i the points of chunk i and r^e the residual of equation e (one per PDE term: "pde", or
"pde_<key>" of a system), the chunk's loss is L_i^e = (1/n_i) sum_{p in i} (r_p^e)^2, and

    L_i = sum_e L_i^e                          every equation together (jaxpi's choice: one
                                               front for the whole system, so no equation runs
                                               ahead of the others in time)
    w_i = exp(-eps sum_{k<i} L_k)              detached: no gradient flows through the weights
    L^e_causal = (1/M') sum_{i occupied} w_i L_i^e

M' is the number of occupied chunks (n_i > 0). An empty chunk has no loss of its own: it adds 0
to the cumulative sum and is left out of the average, so a chunk count that leaves some empty
(few points, or a domain whose time range the points do not fill) changes nothing else, and
M = 1 gives the plain mean square. The first occupied chunk has weight 1; the weights never grow
in time, so the smallest is the front: where the loss of the earlier times still holds it back.

The weighting acts on the residual vectors themselves, so every phase sees it (Adam and L-BFGS
minimise their mean squares, Gauss-Newton takes them as rows): point p's residual is scaled by

    s_p = sqrt(N w_{c_p} / (M' n_{c_p})),      then mean_p (s_p r_p^e)^2 = L^e_causal

(N the interior points). The weights are recomputed from the current residual at every
evaluation (Adam), or held while an optimiser compares trial points (`freeze`): Gauss-Newton over
each line search, L-BFGS over each chunk of `trainer.log_every` iterations. Either way they are
a function of the parameters and points where they are recomputed, so they hold no state: a
checkpoint needs nothing of them. Everything here is a tensor operation of fixed shapes (no
value is read), so a compiled step includes it. Under data-parallel training each process
weights its own points.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import torch

from pinn.errors import ConfigError, is_finite_number, require_int
from pinn.problem.columns import CAUSAL_PREFIX
from pinn.settings import setting

# The history columns: the smallest and the mean weight of the occupied chunks.
MIN_WEIGHT, MEAN_WEIGHT = CAUSAL_PREFIX + "min_weight", CAUSAL_PREFIX + "mean_weight"


@dataclass
class CausalSettings:
    """The block `trainer.causal`.

    Attributes:
        chunks: M, the chunks of time the PDE residual is split into (>= 0; 0 = off).
        tolerance: eps > 0 in w_i = exp(-eps * the loss of the earlier chunks); larger is
            stricter (later times wait longer for the earlier ones).
        time: the name of the time coordinate, one of the problem's inputs when chunks > 0.
    """

    chunks: int = setting(
        0,
        "chunks of time the PDE residual is split into (0 = off); chunk i weighted "
        "exp(-tolerance * loss of chunks before i)",
    )
    tolerance: float = setting(
        1.0, "the causality tolerance eps (> 0): larger waits longer for the earlier times"
    )
    time: str = setting("t", "the name of the time coordinate (one of the problem's inputs)")

    def __post_init__(self) -> None:
        require_int("trainer.causal.chunks", self.chunks, minimum=0)
        tolerance = self.tolerance
        if not (is_finite_number(tolerance) and tolerance > 0):
            raise ConfigError(
                f"trainer.causal.tolerance must be a number > 0, got {tolerance!r}; jaxpi's "
                "default is 1.0 (larger waits longer for the earlier times)"
            )
        if not isinstance(self.time, str) or not self.time:
            raise ConfigError(
                f"trainer.causal.time must be the name of the time coordinate, e.g. t; "
                f"got {self.time!r}"
            )

    @property
    def on(self) -> bool:
        return self.chunks > 0


class CausalWeighting:
    """Scales the PDE residual vectors by their chunks' causal factors (module docstring).

    `weights` and `occupied` are the (M,) weights and the chunks that held points at the last
    evaluation (None before the first): what a history row reports (`row`). `replica()` makes
    one that weights alike but keeps its own (for passes inside torch.func transforms, whose
    tensors must not escape).
    """

    def __init__(self, settings: CausalSettings):
        if not settings.on:
            raise ValueError("CausalWeighting needs chunks > 0; for none, pass causal=None")
        self.settings = settings
        self.weights: torch.Tensor | None = None
        self.occupied: torch.Tensor | None = None
        self._factor: torch.Tensor | None = None  # (M,) of the last evaluation
        self._frozen: tuple[torch.Tensor, ...] | None = None  # (factor, weights, occupied)

    def check(self, inputs: Sequence[str]) -> int:
        """The column of the time coordinate among the problem's `inputs`.

        Raises:
            ConfigError: the time name is not one of them.
        """
        time = self.settings.time
        if time not in inputs:
            raise ConfigError(
                f"trainer.causal.time={time!r} is not one of the problem's inputs "
                f"{list(inputs)}; name its time coordinate (trainer.causal.time=<name>) or set "
                "trainer.causal.chunks=0 for a problem without time"
            )
        return list(inputs).index(time)

    def replica(self) -> CausalWeighting:
        return CausalWeighting(self.settings)

    def __call__(
        self,
        terms: Mapping[str, torch.Tensor],
        points: torch.Tensor,
        inputs: Sequence[str],
        lower: Sequence[float],
        upper: Sequence[float],
    ) -> dict[str, torch.Tensor]:
        """`terms` with every PDE term's (N,) residual scaled by s_p, the others as they are.

        points: (N, d) the interior points, columns `inputs`; lower, upper: (d,) the domain's
        bounds (the time range is the time column's).
        """
        column = self.check(inputs)
        pde = [name for name in terms if is_pde(name)]
        if not pde:
            return dict(terms)
        chunk = chunk_index(points[:, column], lower[column], upper[column], self.settings.chunks)
        if self._frozen is not None:
            factor, weights, occupied = self._frozen
        else:
            stacked = torch.stack([terms[name] for name in pde])  # (E, N)
            factor, weights, occupied = causal_factors(stacked, chunk, self.settings)
        self.weights, self.occupied, self._factor = weights, occupied, factor
        scale = factor.sqrt()[chunk]  # (N,)
        return {name: value * scale if is_pde(name) else value for name, value in terms.items()}

    def freeze(self) -> None:
        """Weight every later evaluation as the last one was, until `thaw`: a line search's
        trial points must be measured by one fixed loss, or a step that fits the early times
        would count as a worse one (the later chunks' weights rise with it). The points must
        stay those of the last evaluation."""
        if self._factor is not None:
            self._frozen = (self._factor, self.weights, self.occupied)

    def thaw(self) -> None:
        """Compute the weights from each evaluation's residual again (the default)."""
        self._frozen = None

    def seen(self) -> tuple[torch.Tensor | None, torch.Tensor | None]:
        """(weights, occupied) of the last evaluation: what an optimiser that evaluates several
        points (a line search) keeps with each, to `show` the one it takes."""
        return self.weights, self.occupied

    def show(self, seen: tuple[torch.Tensor | None, torch.Tensor | None]) -> None:
        """Report `seen` (from `seen()`) in the next history row."""
        self.weights, self.occupied = seen

    def row(self) -> dict[str, float]:
        """{causal_min_weight, causal_mean_weight} over the occupied chunks, for a history row
        ({} before the first evaluation)."""
        if self.weights is None or self.occupied is None:
            return {}
        occupied = self.weights[self.occupied]
        return {MIN_WEIGHT: occupied.min().item(), MEAN_WEIGHT: occupied.mean().item()}


def is_pde(name: str) -> bool:
    """Whether the loss term `name` is a PDE residual ("pde" or "pde_<key>")."""
    return name == "pde" or name.startswith("pde_")


def chunk_index(time: torch.Tensor, lower: float, upper: float, chunks: int) -> torch.Tensor:
    """(N,) int64 chunk of each of the (N,) times: M equal intervals of [lower, upper], the
    upper end in the last one (times outside clamped to the first or last)."""
    width = (upper - lower) / chunks
    index = torch.floor((time.detach() - lower) / width).to(torch.int64)
    return index.clamp(0, chunks - 1)


def causal_weights(chunk_losses: torch.Tensor, tolerance: float) -> torch.Tensor:
    """(M,) w_i = exp(-tolerance * sum_{k<i} L_k) of the (M,) chunk losses L (in time order)."""
    earlier = torch.cumsum(chunk_losses, 0) - chunk_losses  # exclusive: sum over k < i
    return torch.exp(-tolerance * earlier)


def causal_factors(
    residuals: torch.Tensor, chunk: torch.Tensor, settings: CausalSettings
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(factor, weights, occupied), each (M,), all detached, for the (E, N) residuals of E
    equations and the (N,) chunk of each point: factor_i = N w_i / (M' n_i) (0 for an empty
    chunk) is what a point of chunk i multiplies its squared residual by."""
    squares = residuals.detach().square().sum(0)  # (N,) sum over the equations
    chunks, n_points = settings.chunks, squares.shape[0]
    ones = torch.ones_like(squares)
    counts = squares.new_zeros(chunks).index_add(0, chunk, ones)  # (M,) n_i
    sums = squares.new_zeros(chunks).index_add(0, chunk, squares)  # (M,) n_i L_i
    occupied = counts > 0
    safe_counts = counts.clamp(min=1)  # an empty chunk: sum 0, so L_i = 0
    weights = causal_weights(sums / safe_counts, settings.tolerance)
    used = occupied.sum().clamp(min=1).to(squares.dtype)  # M'
    factor = torch.where(occupied, n_points * weights / (used * safe_counts), 0.0)
    return factor, weights, occupied
