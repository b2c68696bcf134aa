"""Data-parallel training: N processes, one model, each process its own share of the points.

Started by torchrun (`torchrun --nproc_per_node=N -m pinn problem=...`), every process trains
the same network on the points it draws from its own generator stream (`rank_seed`). After
each backward pass one all-reduce averages the gradients, the loss and its terms over the
processes, so all of them take the same optimiser step (and L-BFGS the same line-search
decisions) and the parameters stay identical everywhere. With equal shares, the average of the
processes' mean losses is the mean loss over all their points: N processes with n points each
train as one process with N n points would.

    world = World.current()       # rank and size of torch.distributed's default group (0, 1
                                  # when it is not initialised: a single process)
    world.average_(tensors)       # each tensor replaced by its mean over the processes
    terms, loss = world.average_loss(terms, loss, parameters)   # after loss.backward()
    world = start(device)         # the CLI: join the group torchrun's environment describes

Collectives run under the group's timeout (`start`'s `timeout_s`): a process that dies takes
the others down with an error instead of a hang.
"""

from __future__ import annotations

import contextlib
import datetime
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist

from pinn.errors import ConfigError, PinnError, first_line, require_positive

DEFAULT_TIMEOUT_S = 300.0


class ProcessLost(PinnError, RuntimeError):
    """A collective failed: another process died, or waited past the group's timeout."""


@dataclass(frozen=True)
class World:
    """This process's place among the processes training one model: rank in [0, size)."""

    rank: int = 0
    size: int = 1

    @classmethod
    def current(cls) -> World:
        """The default process group's rank and size; a world of one when there is none."""
        if dist.is_available() and dist.is_initialized():
            return cls(dist.get_rank(), dist.get_world_size())
        return cls()

    @property
    def is_main(self) -> bool:
        """Whether this process writes the run's files and shows its progress (rank 0)."""
        return self.rank == 0

    def average_(self, tensors: Sequence[torch.Tensor]) -> None:
        """Replace each tensor by its mean over the processes, in one all-reduce.

        The tensors may differ in shape but share a dtype and device. A world of one
        leaves them untouched (no copy, no rounding).
        """
        if self.size == 1 or not tensors:
            return
        flat = torch.cat([tensor.detach().reshape(-1) for tensor in tensors])
        with self._collective():
            dist.all_reduce(flat)
        flat /= self.size
        for tensor, mean in zip(tensors, flat.split([t.numel() for t in tensors])):
            tensor.detach().copy_(mean.view_as(tensor))

    def average_loss(
        self,
        terms: dict[str, torch.Tensor],
        loss: torch.Tensor,
        parameters: Sequence[torch.Tensor] = (),
    ) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
        """The loss terms and loss averaged over the processes (detached), and the
        `parameters`' gradients averaged in place, all in one all-reduce.

        After `loss.backward()` on each process's share of the points, this makes every
        process hold the loss and gradient of all the points together. A world of one returns
        `terms` and `loss` as they are. Parameters without a gradient (None on every process
        alike: the same graph) stay without.
        """
        if self.size == 1:
            return terms, loss
        values = torch.stack([loss.detach(), *(value.detach() for value in terms.values())])
        grads = [p.grad for p in parameters if p.grad is not None]
        self.average_([*grads, values])
        return dict(zip(terms, values[1:])), values[0]

    def broadcast_(self, tensors: Sequence[torch.Tensor]) -> None:
        """Give every process rank 0's values of `tensors` (the starting parameters, say)."""
        if self.size == 1:
            return
        with self._collective():
            for tensor in tensors:
                dist.broadcast(tensor.detach(), src=0)

    def any(self, flag: bool) -> bool:
        """Whether `flag` is true on any process (one small all-reduce; a world of one returns
        `flag`). Every process must call it at the same point of the run."""
        if self.size == 1:
            return flag
        device = (
            torch.device("cuda", torch.cuda.current_device())
            if dist.get_backend() == "nccl"  # NCCL reduces device tensors only
            else torch.device("cpu")
        )
        value = torch.tensor([int(flag)], device=device)
        with self._collective():
            dist.all_reduce(value, op=dist.ReduceOp.MAX)
        return bool(value.item())

    def gather(self, value: Any) -> list[Any]:
        """Every process's `value` (picklable), in rank order, on every process."""
        if self.size == 1:
            return [value]
        values: list[Any] = [None] * self.size
        with self._collective():
            dist.all_gather_object(values, value)
        return values

    @contextlib.contextmanager
    def _collective(self) -> Iterator[None]:
        """Turn a failed collective (gloo and NCCL raise RuntimeError) into `ProcessLost`."""
        try:
            yield
        except RuntimeError as error:
            raise ProcessLost(
                f"process {self.rank} of {self.size} lost the others ({first_line(error)}); the "
                "run stopped. Its last checkpoint stays readable: the same torchrun command "
                "with resume=<run dir> continues it"
            ) from error


def launched() -> tuple[int, int, int] | None:
    """(rank, world size, local rank) from torchrun's environment; None outside torchrun."""
    names = ("RANK", "WORLD_SIZE", "LOCAL_RANK")
    if not all(name in os.environ for name in names):
        return None
    try:
        rank, size, local_rank = (int(os.environ[name]) for name in names)
    except ValueError as error:
        raise ConfigError(
            f"RANK, WORLD_SIZE and LOCAL_RANK must be whole numbers (torchrun sets them), "
            f"got {[os.environ[name] for name in names]}"
        ) from error
    if not 0 <= rank < size or local_rank < 0:
        raise ConfigError(f"RANK={rank} is not in [0, WORLD_SIZE={size})")
    return rank, size, local_rank


def process_device(device: torch.device) -> torch.device:
    """The device this process trains on: under torchrun, `cuda` means cuda:LOCAL_RANK."""
    place = launched()
    if place is None or device.type != "cuda" or device.index is not None:
        return device
    return torch.device("cuda", place[2])


def start(device: torch.device, timeout_s: float = DEFAULT_TIMEOUT_S) -> World:
    """Join the process group torchrun's environment describes (a world of one without it).

    The backend follows the device: NCCL for CUDA, gloo otherwise. A group that is already
    initialised (by the caller) is used as it is. Collectives that wait longer than
    `timeout_s` (a process died or hangs) raise instead of blocking for ever.
    """
    require_positive("distributed.timeout_s", timeout_s)
    place = launched()
    if place is None or place[1] == 1 or dist.is_initialized():
        return World.current()
    if not dist.is_available():
        raise ConfigError("this torch was built without torch.distributed: run one process")
    backend = "nccl" if device.type == "cuda" else "gloo"
    if device.type == "cuda":
        torch.cuda.set_device(device)
    dist.init_process_group(backend, timeout=datetime.timedelta(seconds=timeout_s))
    return World.current()


def stop(wait: bool = True) -> None:
    """Leave the process group `start` joined (nothing without one).

    `wait`: first wait until every process is done with the group (a process tearing its
    connections down while a peer still uses them can abort the peer); False after a
    failure, when the others may be gone.
    """
    if not (dist.is_available() and dist.is_initialized()):
        return
    if wait and dist.get_world_size() > 1:
        dist.barrier()
    dist.destroy_process_group()


def rank_seed(seed: int, rank: int) -> int:
    """The seed of rank `rank`'s generator stream: `seed` itself on rank 0 (a world of one
    draws what a single process draws), well apart from every other rank's."""
    return (seed + rank * 0x9E3779B97F4A7C15) % 2**63
