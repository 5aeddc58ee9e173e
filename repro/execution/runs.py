"""The run scheduler: what has no record yet is trained by an executor; records are reused, never repeated.

One run is one record (repro.execution.records: paths, load, train under a lock); who trains
the pending runs, on this machine or on a Slurm cluster, is an executor
(repro.execution.local, repro.execution.slurm). The names below are the public ones other code
imports from here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from repro.execution.options import EXECUTORS, ExecutorOptions
from repro.execution.records import (  # noqa: F401  (re-exported)
    RECORD_SCHEMA, Attempt, RunBatch, RunCounts, RunRequest, attempt_run, checkpoint_path, executor_provenance,
    failure_path, load_record, pending_runs, record_path, run_one, runs_dir,
)

Executor = Callable[..., None]


def get_executor(name: str) -> Executor:
    # Imported on use: the slurm executor needs submitit, the local one does not.
    if name == "local":
        from repro.execution.local import run_local
        return run_local
    if name == "slurm":
        from repro.execution.slurm import run_slurm
        return run_slurm
    raise KeyError(f"executor '{name}' is not one of {', '.join(EXECUTORS)}")


def execute_runs(requests: list[RunRequest], results_dir: Path, device: str, data_dir: Path | None = None,
                 jobs: int = 1, progress: Any = None, options: ExecutorOptions | None = None) -> RunBatch:
    """Run what has no record yet with the executor `options` names (repro.execution.options.ExecutorOptions;
    default: local); return the records and errors by hash, and the counts trained here, reused and
    trained by another process."""
    options = options or ExecutorOptions()
    batch, todo = pending_runs(requests, results_dir)
    if todo:
        get_executor(options.executor)(todo, batch, results_dir, device, data_dir, jobs, progress, options)
    return batch
