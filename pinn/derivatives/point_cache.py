"""What a traced model computes from its points alone, kept from one Taylor pass to the next.

    cache = PointCache()
    key = cache.key(x, reuse, constants)     # None: not cacheable (see below)
    kept = cache.get(key)                    # {value slot: value} or None
    cache.put(key, holders, {slot: value})

A hard constraint u = g(x) + B(x) N(x) computes g and B, with their Taylor terms, at every pass,
though they change only when the points do: `beltrami`'s g reads the exact solution at 26 face
points per point, and carrying it cost as much as the 13,060-parameter network's pass. The Taylor
pass marks the calls of a traced model that depend on the points and constants alone (not on the
weights or buffers, no random draws: `pinn.derivatives.taylor_pass`), runs them on the first
pass at a point set and takes the results the weights' calls read (the frontier) from here on
later passes at the same points with the same seed and order.

A key is made of the points' memory (data pointer, offset, shape, strides, dtype, device) and
version counter, likewise of every tensor in `reuse` (what, besides the points, determines the
seed and the order: the directions, weights, pairs), and the versions of the graph's constants
the marked calls read. An entry holds those tensors, so no other tensor takes their memory
while it lives, and an in-place write (a redraw into the same tensor) bumps the version and
misses. Not seen: a write through `.data`, which has a version counter of its own.

No key (everything computed, nothing kept) while torch.compile traces (the graph fuses the work
anyway), under inference mode (its tensors cannot enter a later backward), for points that
require grad (their derivatives would run through kept values) or have no storage (inside vmap
and the other torch.func transforms), and for frontiers above `MAX_BYTES`.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable, Iterable

import torch

Tensor = torch.Tensor

ENTRIES = 4  # point sets kept per traced graph: training, validation, fresh-loss points...
MAX_BYTES = 256 * 2**20  # a larger frontier is recomputed rather than held


class PointCache:
    """The frontier values of the last `ENTRIES` point sets of one traced graph."""

    def __init__(self) -> None:
        # key -> ({value slot: value}, the tensors the key names, held alive)
        self._entries: OrderedDict[Hashable, tuple[dict[int, object], tuple]] = OrderedDict()

    @staticmethod
    def key(x: Tensor, reuse: object, constants: Iterable[Tensor]) -> Hashable | None:
        """The key of a pass at the (N, d) points x with seed and order described by `reuse`,
        or None where it cannot be cached (module docstring)."""
        if (
            reuse is None
            or torch.compiler.is_compiling()
            or torch.is_inference_mode_enabled()
            or x.requires_grad
        ):
            return None
        try:
            return (_memory(x), _hashable(reuse), tuple(c._version for c in constants))
        except (RuntimeError, TypeError):  # no storage (a functorch wrapper), or unhashable
            return None

    def get(self, key: Hashable | None) -> dict[int, object] | None:
        """{value slot: value} kept under `key`, or None."""
        if key is None or key not in self._entries:
            return None
        self._entries.move_to_end(key)
        return self._entries[key][0]

    def put(self, key: Hashable, holders: tuple, values: dict[int, object]) -> None:
        """Keep `values` under `key`, and `holders` (the tensors the key names) alive with them;
        the oldest entry goes when there are more than `ENTRIES`."""
        if sum(t.nbytes for t in tensors_in(list(values.values()))) > MAX_BYTES:
            return
        self._entries[key] = values, holders
        while len(self._entries) > ENTRIES:
            self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)


def _memory(t: Tensor) -> tuple:
    """Where and what a tensor is, and its version: equal only for the same unchanged data
    while the tensor lives. Raises RuntimeError for a tensor without storage."""
    return (
        t.data_ptr(),
        t.storage_offset(),
        tuple(t.shape),
        t.stride(),
        t.dtype,
        t.device,
        t._version,
    )


def _hashable(item: object) -> Hashable:
    """`item` with its tensors replaced by their `_memory` (through tuples and lists)."""
    if isinstance(item, Tensor):
        return _memory(item)
    if isinstance(item, (tuple, list)):
        return tuple(_hashable(part) for part in item)
    hash(item)  # TypeError where it cannot be a key
    return item


def tensors_in(item: object) -> tuple[Tensor, ...]:
    """The tensors in `item`, through tuples and lists (Terms, unbind's lists): what an entry
    holds alive, and what its size is counted from."""
    if isinstance(item, Tensor):
        return (item,)
    if isinstance(item, (tuple, list)):
        return tuple(t for part in item for t in tensors_in(part))
    return ()
