"""Keep freed memory in the process: glibc malloc's thresholds for large blocks, here and in child processes.

glibc serves a block of 32 MiB or more (and, until its dynamic threshold has grown, one of 128 KiB or
more) with a fresh mmap and unmaps it on free. A training step that frees its gradients and optimizer
temporaries and allocates them again then page-faults every page back in: a sparse head's step spent as
much time in the kernel as in its compute (docs/performance.md, "Allocator").
Raising both thresholds keeps the blocks in the heap for reuse. It changes where memory comes from,
never a number a run computes; the price is a higher resident size (the heap does not shrink).

`keep_freed_memory` sets them for this process (mallopt, which glibc accepts at any time) and, through the
environment glibc reads at start-up, for every process this one starts (training workers, Slurm tasks
submitted from it). A threshold the user set in the environment is left as it is. Imports nothing from repro.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os

THRESHOLD = 1 << 30  # bytes: larger than any block a run of this artifact frees and allocates again
# mallopt's parameter numbers (glibc's malloc.h) and the environment variables glibc reads for the same
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
ENVIRONMENT = {"MALLOC_MMAP_THRESHOLD_": M_MMAP_THRESHOLD, "MALLOC_TRIM_THRESHOLD_": M_TRIM_THRESHOLD}


def _mallopt():
    """glibc's mallopt, or None where the C library is another (musl, macOS, Windows)."""
    name = ctypes.util.find_library("c")
    try:
        return ctypes.CDLL(name).mallopt if name else None
    except (OSError, AttributeError):
        return None


def keep_freed_memory() -> dict[str, bool]:
    """Large freed blocks stay in this process's heap and in its children's. Returns, per environment
    variable, whether this process now runs with it (False: no glibc, or the user's own value was kept)."""
    mallopt = _mallopt()
    applied = {}
    for name, param in ENVIRONMENT.items():
        if name in os.environ:  # the user's (read by glibc at start-up), or set by an earlier call
            applied[name] = os.environ[name] == str(THRESHOLD)
            continue
        os.environ[name] = str(THRESHOLD)  # for the processes this one starts
        applied[name] = bool(mallopt and mallopt(param, THRESHOLD))
    return applied
