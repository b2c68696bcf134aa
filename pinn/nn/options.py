"""`InputOptions`: what every pinn network does to its input before its first dense layer, and
how its dense layers are made, in one object that each network takes.

    MLP(2, 1, width=32, inputs=InputOptions(lower=[0, 0], upper=[1, 1], periodic={0: 1.0}))
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pinn.errors import require_int


@dataclass(frozen=True)
class InputOptions:
    """The options every pinn network shares (`model.*` in the config, but for name, width,
    depth and activation). The input passes them in this order: rescaling, the periodic
    embedding, Fourier features; then every dense layer is factorised when asked.

    Attributes:
        lower: a box's lower corner (d,): with `upper`, the inputs are rescaled from the box to
            [-1, 1]^d (`pinn.nn.embeddings.Rescale`); None: the coordinates as they are.
        upper: the box's upper corner (d,).
        periodic: {coordinate index: period}: those coordinates enter through an exactly
            periodic embedding (`PeriodicEmbedding`), the periods in the coordinates' own units.
        harmonics: multiples k of each periodic coordinate's frequency (>= 1).
        fourier_features: when > 0, a `FourierFeatures` embedding of that many random
            frequencies (and its input itself) comes before the first dense layer.
        fourier_scale: the standard deviation of those frequencies.
        factorize: (mean, std): every dense layer a `FactorizedLinear` (random weight
            factorisation) with log-scales ~ N(mean, std²); None: plain layers.
    """

    lower: Sequence[float] | None = None
    upper: Sequence[float] | None = None
    periodic: dict[int, float] | None = None
    harmonics: int = 1
    fourier_features: int = 0
    fourier_scale: float = 1.0
    factorize: tuple[float, float] | None = None

    def __post_init__(self) -> None:
        require_int("model.fourier_features", self.fourier_features, minimum=0)
        require_int("model.periodic_harmonics", self.harmonics, minimum=1)

    @property
    def rescaled(self) -> bool:
        return self.lower is not None and self.upper is not None
