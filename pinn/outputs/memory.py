"""metrics.json's peak memory: the process's resident high-water mark and, on cuda, the device's.

peak_memory(device)   # {"peak_memory_mb": 812.4} (+ "peak_device_memory_mb" on cuda)
"""

from __future__ import annotations

import sys

import torch

try:
    import resource  # POSIX only
except ImportError:  # Windows: no resident high-water mark to read
    resource = None

MB = 2**20


def peak_memory(device: torch.device | str) -> dict[str, float | None]:
    """{"peak_memory_mb": the largest resident memory this process has held so far (its
    `ru_maxrss`; None where the platform has no such count)}, with, on a cuda `device`,
    "peak_device_memory_mb": the most its tensors have held there
    (`torch.cuda.max_memory_allocated`, without the allocator's cache). MB are 2^20 bytes.

    The process's, over its life: under torchrun, rank 0's (the one that writes); in a notebook
    or a test session, the largest of everything it ran before too."""
    record: dict[str, float | None] = {"peak_memory_mb": None}
    if resource is not None:
        largest = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        bytes_per_unit = 1 if sys.platform == "darwin" else 1024  # macOS: bytes; Linux: KB
        record["peak_memory_mb"] = largest * bytes_per_unit / MB
    if torch.device(device).type == "cuda":
        record["peak_device_memory_mb"] = torch.cuda.max_memory_allocated(device) / MB
    return record
