"""Host synchronisations: what counts as one, and a context that counts them on any device.

    with count_syncs() as syncs:          # eager code only (not inside torch.compile)
        ... training steps ...
    syncs.total, syncs.counts             # Counter({"item": 3, "boolean index": 1, ...})

On a GPU the host queues work and runs ahead; a synchronisation makes it wait until the device
has finished everything queued, and a small network's step, launch-bound, loses most of its
speed to it. `torch.cuda.set_sync_debug_mode` only sees them on cuda; this counts, on any
device (the CPU included, where nothing waits), what would make the host wait on a GPU:

- a value read: `.item()`, `bool(t)`, `int(t)`, `float(t)` (`aten._local_scalar_dense`, what an
  `if` on a tensor calls), `torch.equal`, `.tolist()`, `.numpy()`, `.cpu()`;
- a result whose size depends on values: `nonzero`, `masked_select`, `unique`, indexing by a
  boolean mask (`x[mask]`, and its backward), `repeat_interleave` of a tensor of counts;
- data from the host: Python numbers made into a tensor (`torch.tensor([...])`,
  `torch.as_tensor(list)`: on a GPU a copy that waits), and a copy between devices that is not
  `non_blocking` (`.to(device)`).

Not counted: work marked `on_host()`, done on host tensors by design (the sampler draws points
in float64 on the CPU from its seeded generator, whatever the training device; `onto` moves
them without waiting). Each event's name is its key in `counts`.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Iterator, Sequence
from contextvars import ContextVar
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

aten = torch.ops.aten

_ON_HOST: ContextVar[bool] = ContextVar("pinn_on_host", default=False)

# aten operations that make the host wait whatever their arguments, by the name counted.
_ALWAYS = {
    aten._local_scalar_dense.default: "item",  # .item(), bool(), int(), float(), an `if`
    aten.equal.default: "torch.equal",
    aten.nonzero.default: "nonzero",
    aten.masked_select.default: "masked_select",
    aten._unique2.default: "unique",
    aten.unique_dim.default: "unique",
    aten.unique_consecutive.default: "unique",
    aten.lift_fresh.default: "tensor from Python data",
}
# Tensor methods that read values on the host without an aten operation on a CPU tensor.
_METHODS = {"tolist": ".tolist()", "numpy": ".numpy()", "cpu": ".cpu()"}


@contextlib.contextmanager
def on_host() -> Iterator[None]:
    """Mark work on host tensors by design (drawing points on the CPU): not counted."""
    token = _ON_HOST.set(True)
    try:
        yield
    finally:
        _ON_HOST.reset(token)


def device_constant(
    values: Sequence[float], dtype: torch.dtype, device: torch.device | str
) -> torch.Tensor:
    """(k,) `values` in `dtype` made on `device` by k fills, not copied from the host
    (`torch.tensor(values, device=...)` is a copy that waits on a GPU): for the few small
    constants a step keeps, made once."""
    if not values:
        return torch.zeros(0, dtype=dtype, device=device)
    return torch.cat([torch.full((1,), value, dtype=dtype, device=device) for value in values])


class SyncCounter(TorchDispatchMode):
    """Counts the host synchronisations of the eager code run inside it (see the module).

    Attributes:
        counts: {what: how many}, e.g. {"item": 2, "boolean index": 1}.
    """

    def __init__(self) -> None:
        super().__init__()
        self.counts: Counter[str] = Counter()

    @property
    def total(self) -> int:
        """All the synchronisations counted so far."""
        return sum(self.counts.values())

    def add(self, what: str) -> None:
        """Count one `what`, unless it happens in work marked `on_host`."""
        if not _ON_HOST.get():
            self.counts[what] += 1

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        what = _ALWAYS.get(func) or _waiting(func, args, kwargs)
        if what is not None:
            self.add(what)
        return func(*args, **kwargs)


def _waiting(func: Any, args: tuple, kwargs: dict) -> str | None:
    """The name of the wait `func(*args, **kwargs)` makes, or None (for the ops not in
    `_ALWAYS`: boolean indices, counts of repeat_interleave, copies between devices)."""
    if func in (aten.index.Tensor, aten.index_put.default, aten.index_put_.default):
        indices = args[1] if len(args) > 1 else kwargs.get("indices", ())
        if any(i is not None and i.dtype in (torch.bool, torch.uint8) for i in indices):
            return "boolean index"
    elif func is aten.repeat_interleave.Tensor:
        if kwargs.get("output_size") is None:
            return "repeat_interleave"
    elif func is aten._to_copy.default:
        device = kwargs.get("device")
        if device is not None and torch.device(device) != args[0].device:
            return None if kwargs.get("non_blocking") else "copy between devices"
    elif func is aten.copy_.default:
        destination, source = args[0], args[1]
        if destination.device != source.device and not (len(args) > 2 and args[2]):
            return "copy between devices"
    return None


@contextlib.contextmanager
def count_syncs() -> Iterator[SyncCounter]:
    """A `SyncCounter` over the code inside (eager only: a compiled graph is opaque to it)."""
    counter = SyncCounter()
    originals = {name: getattr(torch.Tensor, name) for name in _METHODS}

    def counting(name: str):
        original = originals[name]

        def method(self: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
            counter.add(_METHODS[name])
            return original(self, *args, **kwargs)

        return method

    for name in _METHODS:
        setattr(torch.Tensor, name, counting(name))
    try:
        with counter:
            yield counter
    finally:
        for name, original in originals.items():
            setattr(torch.Tensor, name, original)
