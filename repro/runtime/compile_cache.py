"""Compiled graphs kept in the user's cache folder, so that a run reuses what an earlier run of its shape compiled.

torch.compile's inductor keeps its caches (FX graphs, AOT autograd, Triton kernels) under
TORCHINDUCTOR_CACHE_DIR, by default a per-user folder under /tmp: lost with the machine, and not shared by the
nodes of a cluster. While `compile_cache(cache_dir)` is open, the process that trains (a local worker, a Slurm
task, every torchrun rank) and the processes it starts (inductor's compile workers) cache in
<cache>/compiled/, the cache folder of repro.core.settings (REPRO_CACHE). Not in the results folder: a results
folder may come from someone else, and inductor loads its cached entries back as code and runs them. A value the
user set is left as it is. Inductor keys its entries by the graph, its inputs' shapes, the compiler's version and
settings: a cached graph computes what a fresh compilation would. Imports nothing from repro.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Iterator

VARIABLE = "TORCHINDUCTOR_CACHE_DIR"
FOLDER = "compiled"


@contextlib.contextmanager
def compile_cache(cache_dir: str | Path) -> Iterator[Path]:
    """Inductor caches in <cache_dir>/compiled (or the user's TORCHINDUCTOR_CACHE_DIR) inside the block."""
    if os.environ.get(VARIABLE):
        yield Path(os.environ[VARIABLE])
        return
    path = Path(cache_dir).absolute() / FOLDER
    os.environ[VARIABLE] = str(path)
    try:
        yield path
    finally:
        os.environ.pop(VARIABLE, None)
