"""Executors: who trains the runs that have no record yet. The unit is the run (its config hash).

An executor is `fn(todo, batch, results_dir, device, data_dir, jobs, progress, options)`:
it trains the RunRequests in `todo`, each through repro.runs.attempt_run (lock, train,
record), and books every outcome in `batch` (a repro.runs.RunBatch). Every executor
writes the same records to the same results directory; tables are rendered from them.

    local  this machine: a process pool on a CPU; on GPUs, `runs_per_gpu` processes per visible GPU
    slurm  a Slurm job array submitted through submitit; the runs' records are awaited here
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

from repro.executors.options import EXECUTORS, ExecutorOptions, SlurmOptions  # noqa: F401  (re-exported)
from repro.locks import LockSettings, lock_path, read_holder, stale_reason

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


def check_waiting(request: Any, since: float, results_dir: Path, settings: LockSettings) -> tuple[str, Any]:
    """A run another process holds: ("recorded", record), ("failed", error), ("free", None) to try it
    here (its holder is gone without a record), or ("held", holder)."""
    from repro.runs import failure_path, load_record, runs_dir

    record = load_record(results_dir, request.cfg)
    if record is not None:
        return "recorded", record
    holder = read_holder(lock_path(runs_dir(results_dir), request.cfg.hash))
    if holder is not None and stale_reason(holder, settings) is None:
        return "held", holder
    failure = failure_path(results_dir, request.cfg.hash)
    try:
        failed = json.loads(failure.read_text())
        if failed.get("time", 0) >= since:
            host = failed.get("executor", {}).get("host", "?")
            return "failed", f"failed in another process (on {host}): {failed['error']}"
    except (FileNotFoundError, json.JSONDecodeError, KeyError):
        pass
    record = load_record(results_dir, request.cfg)  # the holder may have finished between the two reads
    return ("recorded", record) if record is not None else ("free", None)


def poll_interval(settings: LockSettings) -> float:
    return min(2.0, settings.heartbeat_s)
