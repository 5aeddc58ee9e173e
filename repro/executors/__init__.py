"""Executors: who trains the runs that have no record yet. The unit is the run (its config hash).

An executor is `fn(todo, batch, results_dir, device, data_dir, jobs, progress, options)`:
it trains the RunRequests in `todo`, each through repro.records.attempt_run (lock, train,
record), and books every outcome in `batch` (a repro.records.RunBatch). Every executor
writes the same records to the same results directory; tables are rendered from them.

    local  this machine: a process pool on a CPU; on GPUs, `runs_per_gpu` processes per visible GPU
    slurm  a Slurm job array submitted through submitit; the runs' records are awaited here
"""

from __future__ import annotations

from typing import Callable

from repro.executors.options import EXECUTORS, ExecutorOptions, SlurmOptions  # noqa: F401  (re-exported)

Executor = Callable[..., None]


def get_executor(name: str) -> Executor:
    # Imported on use: the slurm executor needs submitit, the local one does not.
    if name == "local":
        from repro.executors.local import run_local
        return run_local
    if name == "slurm":
        from repro.executors.slurm import run_slurm
        return run_slurm
    raise KeyError(f"executor '{name}' is not one of {', '.join(EXECUTORS)}")
