"""The run scheduler: what has no record yet is trained by an executor; records are reused, never repeated.

One run is one record (repro.records: paths, load, train under a lock); who trains
the pending runs, on this machine or on a Slurm cluster, is an executor
(repro.executors). The names below are the public ones other code imports from here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from repro.executors import ExecutorOptions, get_executor
from repro.records import (  # noqa: F401  (re-exported)
    RECORD_SCHEMA, Attempt, RunBatch, RunCounts, RunRequest, attempt_run, checkpoint_path, executor_provenance,
    failure_path, load_record, pending_runs, record_path, run_one, runs_dir,
)


def execute_runs(requests: list[RunRequest], results_dir: Path, device: str, data_dir: Path | None = None,
                 jobs: int = 1, progress: Any = None, options: ExecutorOptions | None = None) -> RunBatch:
    """Run what has no record yet with the executor `options` names (repro.executors.ExecutorOptions;
    default: local); return the records and errors by hash, and the counts trained here, reused and
    trained by another process."""
    options = options or ExecutorOptions()
    batch, todo = pending_runs(requests, results_dir)
    if todo:
        get_executor(options.executor)(todo, batch, results_dir, device, data_dir, jobs, progress, options)
    return batch
