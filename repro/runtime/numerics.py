"""How a process computes one run's numbers: its intra-op threads and PyTorch's deterministic mode.

A float sum split over N threads rounds otherwise than one split over M, and over a few epochs
the difference grows into a different model (the same digits run ended at 50.6% on one thread and
41.9% on two). So a run's thread count is part of its identity (repro.plan.run_config.RunConfig.threads),
and `run_numerics` sets it around the training of that run in whatever process trains it: the
command's own process, a local worker, a Slurm task, every torchrun rank. Which executor trains a
run then changes nothing in its record.

Deterministic mode adds torch.use_deterministic_algorithms, cuBLAS's fixed workspace
(CUBLAS_WORKSPACE_CONFIG, read when CUDA first creates a cuBLAS handle) and cuDNN without
autotuning. An operation with no deterministic implementation (on CUDA, e.g. adaptive average
pooling's backward) warns instead of stopping the run, and the run's facts name it.
Imports nothing from repro.
"""

from __future__ import annotations

import contextlib
import os
import warnings
from typing import Any, Iterator

CUBLAS_WORKSPACE = ":4096:8"  # NVIDIA's setting for reproducible cuBLAS results (CUDA >= 10.2)
NONDETERMINISTIC = "does not have a deterministic implementation"  # in PyTorch's warning


def deterministic_environment() -> None:
    """Before CUDA starts in this process and the ones it spawns: cuBLAS's fixed workspace."""
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", CUBLAS_WORKSPACE)


@contextlib.contextmanager
def run_numerics(threads: int, deterministic: bool, device: Any) -> Iterator[dict[str, Any]]:
    """Train the block on `threads` intra-op threads, in deterministic mode if asked; yields the run's
    numerical facts (filled in when the block ends), restores this process's settings after it."""
    import torch

    cudnn = torch.backends.cudnn
    before = (
        torch.get_num_threads(),
        torch.are_deterministic_algorithms_enabled(),
        torch.is_deterministic_algorithms_warn_only_enabled(),
        cudnn.benchmark,
        cudnn.deterministic,
    )
    cuda = str(device).startswith("cuda")
    torch.set_num_threads(threads)
    facts: dict[str, Any] = {
        "threads": torch.get_num_threads(),
        "deterministic": deterministic,
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda if cuda else None,
        "cudnn": cudnn.version() if cuda else None,
    }
    if deterministic:
        deterministic_environment()
        torch.use_deterministic_algorithms(True, warn_only=True)
        cudnn.benchmark, cudnn.deterministic = False, True
        facts["cublas_workspace_config"] = os.environ.get("CUBLAS_WORKSPACE_CONFIG")
    try:
        with warnings.catch_warnings(record=True) as caught:
            yield facts
        for w in caught:  # shown as they would have been; the deterministic mode's own are kept too
            if deterministic and NONDETERMINISTIC in str(w.message):
                op = str(w.message).split(NONDETERMINISTIC)[0].strip()
                if op not in facts.setdefault("nondeterministic_ops", []):
                    facts["nondeterministic_ops"].append(op)
            warnings.showwarning(w.message, w.category, w.filename, w.lineno, w.file, w.line)
        if deterministic:
            facts.setdefault("nondeterministic_ops", [])
    finally:
        torch.set_num_threads(before[0])
        torch.use_deterministic_algorithms(before[1], warn_only=before[2])
        cudnn.benchmark, cudnn.deterministic = before[3], before[4]
