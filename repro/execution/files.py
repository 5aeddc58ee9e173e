"""The files of one run in <results>/runs/, and the one probe of what they say about it.

    <hash>.json          its record (repro.execution.records writes it; record_checks says if it is usable)
    <hash>.ckpt          the last finished epoch, while it trains (only the lock holder touches it)
    <hash>.lock          who trains it (repro.runtime.locks)
    <hash>.failed.json   why it failed, with who ran it
    <hash>.slurm.json    the Slurm job it was submitted as (repro.execution.slurm)

`probe` reads a run's record, lock and failure in one fixed order and says what they come to as an
Outcome (repro.execution.protocol): the executors, while they wait on another process, and
`repro status` all ask it. `remove_stale_temporaries` removes, when runs start, the temporary files
of writes that a killed process left (repro.core.fsutil). Torch-free.
"""

from __future__ import annotations

import os
import socket
import time
import uuid
from pathlib import Path
from typing import Any

from repro.execution.protocol import Outcome, RunRequest, RunState
from repro.execution.record_checks import LeftAlone, read_record
from repro.core import jsonfile
from repro.core.fsutil import WriteFailed, temporary_writer
from repro.core.progress import warn
from repro.plan.run_config import RunConfig
from repro.results.measurements import RUNS_FOLDER
from repro.runtime.locks import LockSettings, lock_path, pid_alive, read_holder, stale_reason


def runs_dir(results_dir: Path) -> Path:
    return results_dir / RUNS_FOLDER


def record_path(results_dir: Path, cfg: RunConfig) -> Path:
    return runs_dir(results_dir) / f"{cfg.hash}.json"


def checkpoint_path(results_dir: Path, cfg: RunConfig) -> Path:
    return runs_dir(results_dir) / f"{cfg.hash}.ckpt"


def failure_path(results_dir: Path, run_hash: str) -> Path:
    return runs_dir(results_dir) / f"{run_hash}.failed.json"


def submitted_path(results_dir: Path, run_hash: str) -> Path:
    return runs_dir(results_dir) / f"{run_hash}.slurm.json"


def set_aside(path: Path, what: str, problem: str, then: str) -> Path | None:
    """Move an unusable file to <name>.invalid-<time>-<id> (kept for inspection, never read) with a warning."""
    aside = path.with_name(f"{path.name}.invalid-{int(time.time())}-{uuid.uuid4().hex[:6]}")
    try:
        os.replace(path, aside)
    except FileNotFoundError:  # another process set it aside first
        return None
    except OSError as exc:
        raise WriteFailed.of(aside, exc) from None
    warn(f"{what} {path} is unusable ({problem}); moved to {aside.name} and {then}")
    return aside


def load_record(results_dir: Path, cfg: RunConfig) -> dict[str, Any] | None:
    """The finished record of `cfg`, or None; an unusable record is set aside, never read as a result. Raises
    LeftAlone (repro.execution.record_checks) for one that cannot be read or that a newer version wrote."""
    path = record_path(results_dir, cfg)
    record, problem = read_record(path, cfg)
    if problem is not None:
        set_aside(path, "run record", problem, "the run will be redone")
    return record


def remove_stale_temporaries(results_dir: Path, settings: LockSettings, now: float | None = None) -> list[Path]:
    """Remove the temporary files in runs/ that no writer will finish: older than the lock timeout, and written by
    a process not alive (on this host, its pid has exited; on another, or unnamed, the age decides). A write
    takes seconds; a SIGKILL mid-write leaves one for good (a checkpoint's: 65 MB)."""
    now = time.time() if now is None else now
    removed, freed = [], 0
    for tmp in sorted(runs_dir(results_dir).glob(".*.tmp")):
        try:
            stat = tmp.stat()
        except OSError:
            continue
        writer = temporary_writer(tmp.name)
        if now - stat.st_mtime <= settings.stale_after_s:
            continue
        if writer is not None and writer[1] == socket.gethostname() and pid_alive(writer[0]):
            continue
        try:
            tmp.unlink()
        except OSError:  # gone already, or not ours to remove: left as it is
            continue
        removed.append(tmp)
        freed += stat.st_size
    if removed:
        print(
            f"removed {len(removed)} temporary file(s) ({freed / 2**20:.1f} MiB) that stopped writes left in "
            f"{runs_dir(results_dir)}",
            flush=True,
        )
    return removed


def read_json(path: Path) -> dict[str, Any] | None:
    """A small JSON object file (failure, Slurm marker), or None when absent or not one."""
    try:
        value = jsonfile.load(path)
    except (FileNotFoundError, jsonfile.JsonUnreadable):
        return None
    return value if isinstance(value, dict) else None


def failure_outcome(results_dir: Path, run_hash: str, since: float = 0.0) -> Outcome | None:
    """The run's failure written at or after `since`, as a FAILED outcome naming where it failed; else None."""
    failed = read_json(failure_path(results_dir, run_hash))
    when = failed.get("time") if failed else None
    if failed is None or isinstance(when, bool) or not isinstance(when, (int, float)) or when < since:
        return None
    executor = failed.get("executor")
    executor = executor if isinstance(executor, dict) else {}
    job = (
        executor.get("slurm_array_job_id")
        and f"{executor['slurm_array_job_id']}_{executor.get('slurm_array_task_id', '')}"
    )
    job = job or executor.get("slurm_job_id")
    where = f"Slurm job {job}" if job else f"another process (on {executor.get('host', '?')})"
    return Outcome(
        run_hash,
        RunState.FAILED,
        error=f"failed in {where}: {failed.get('error', '(no error given)')}",
        holder=executor,
    )


def probe(
    results_dir: Path,
    cfg: RunConfig,
    settings: LockSettings,
    since: float = 0.0,
    set_aside_unusable: bool = True,
    now: float | None = None,
) -> Outcome:
    """What the files of a run say: RECORDED (a usable record), HELD (a live lock), FAILED (a failure written at
    or after `since`), else FREE (with the lock left by a holder that is gone, if any). The record is read again
    last: its holder may finish between the reads. `set_aside_unusable` False reads only (repro status): an
    unusable record then counts as none, and a FREE outcome's `error` says why it is unusable. A record left
    alone (it cannot be read, or a newer version wrote it) is FAILED, its error the line that says so."""

    def record() -> tuple[dict[str, Any] | None, str | None]:
        if set_aside_unusable:
            return load_record(results_dir, cfg), None
        return read_record(record_path(results_dir, cfg), cfg)

    try:
        found, _ = record()
        if found is not None:
            return Outcome(cfg.hash, RunState.RECORDED, record=found)
        holder = read_holder(lock_path(runs_dir(results_dir), cfg.hash))
        if holder is not None and stale_reason(holder, settings, now) is None:
            return Outcome(cfg.hash, RunState.HELD, holder=holder)
        failed = failure_outcome(results_dir, cfg.hash, since)
        if failed is not None:
            return failed
        found, unusable = record()
    except LeftAlone as exc:
        return Outcome(cfg.hash, RunState.FAILED, error=str(exc))
    if found is not None:
        return Outcome(cfg.hash, RunState.RECORDED, record=found)
    return Outcome(cfg.hash, RunState.FREE, holder=holder, error=unusable and f"its record is unusable ({unusable})")


def poll_waiting(
    results_dir: Path, waiting: dict[str, tuple[RunRequest, float]], settings: LockSettings
) -> tuple[list[Outcome], list[RunRequest]]:
    """Probe the runs another process held, `waiting` (hash -> (request, waiting since)): the outcomes of those
    that ended there, and the requests of those whose holder left without a record, to be run again. Both leave
    `waiting`; the runs still held stay in it."""
    ended, free = [], []
    for h, (request, since) in list(waiting.items()):
        outcome = probe(results_dir, request.cfg, settings, since)
        if outcome.state is RunState.HELD:
            continue
        del waiting[h]
        if outcome.state is RunState.FREE:
            free.append(request)
        else:
            ended.append(outcome)
    return ended, free


def poll_interval(settings: LockSettings) -> float:
    """How often a run another process holds is probed again."""
    return min(2.0, settings.heartbeat_s)
