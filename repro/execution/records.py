"""Run records: one JSON file per run, written atomically, never repeated, resumable.

A run is a RunConfig (a manifest row, a seed, a profile's settings). Its record
lives at <results>/runs/<hash>.json; while it trains, <hash>.ckpt holds the last
finished epoch and <hash>.lock names who trains it (repro.execution.locks); a run that
failed leaves <hash>.failed.json with its error. A record or checkpoint that cannot be used
(repro.execution.record_checks: a truncated write, impossible values, a hand edit caught by the
record's digest, another run's file under this name) is moved aside with a warning
and the run redone (from its checkpoint, or from scratch). Which processes train the
runs is an executor's business (repro.execution.local and .slurm, scheduled by
repro.execution.runs.execute_runs); every executor trains a run through `attempt_run`: take
its lock, look for its record again, train. Under torchrun the process of rank 0 does all
that; the other ranks train with it (`follow_runs`, repro.execution.distributed).
"""

from __future__ import annotations

import json
import os
import socket
import time
import traceback
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from repro.fsutil import atomic_write_json, jsonable
from repro.execution.locks import LockLost, LockSettings, RunLock, read_holder, slurm_identity, try_lock
from repro.provenance import provenance
from repro.recipes import RunConfig
from repro.execution.record_checks import RECORD_SCHEMA, checkpoint_problem, record_digest, record_problem


@dataclass(frozen=True)
class RunRequest:
    cfg: RunConfig
    label: str  # e.g. "table1/std_h128_moe seed 0", for progress and errors


def runs_dir(results_dir: Path) -> Path:
    return results_dir / "runs"


def record_path(results_dir: Path, cfg: RunConfig) -> Path:
    return runs_dir(results_dir) / f"{cfg.hash}.json"


def checkpoint_path(results_dir: Path, cfg: RunConfig) -> Path:
    return runs_dir(results_dir) / f"{cfg.hash}.ckpt"


def failure_path(results_dir: Path, run_hash: str) -> Path:
    return runs_dir(results_dir) / f"{run_hash}.failed.json"


def set_aside(path: Path, what: str, problem: str, then: str) -> Path | None:
    """Move an unusable file to <name>.invalid-<time>-<id> (kept for inspection, never read) with a warning."""
    aside = path.with_name(f"{path.name}.invalid-{int(time.time())}-{uuid.uuid4().hex[:6]}")
    try:
        os.replace(path, aside)
    except FileNotFoundError:  # another process set it aside first
        return None
    print(f"warning: {what} {path} is unusable ({problem}); moved to {aside.name} and {then}", flush=True)
    return aside


def load_record(results_dir: Path, cfg: RunConfig) -> dict[str, Any] | None:
    """The finished record of `cfg`, or None; a damaged record is set aside, never read as a result."""
    path = record_path(results_dir, cfg)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    try:
        record = json.loads(data.decode("utf-8"))
        problem = record_problem(record, jsonable(cfg.to_dict()), cfg.hash, cfg.epochs)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        problem = f"not valid JSON ({exc})"
    if problem is None:
        return record
    set_aside(path, "run record", problem, "the run will be redone")
    return None


def load_checkpoint_epoch(results_dir: Path, cfg: RunConfig) -> int:
    """The epoch the run's checkpoint resumes from (0: none); an unusable checkpoint is set aside."""
    path = checkpoint_path(results_dir, cfg)
    if not path.exists():
        return 0
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
        problem = checkpoint_problem(state, cfg.hash, cfg.epochs)
    except FileNotFoundError:
        return 0
    except Exception as exc:  # torch raises RuntimeError, EOFError, UnpicklingError... for a damaged file
        problem = f"it cannot be loaded: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    if problem is None:
        return state["epoch"]
    set_aside(path, "checkpoint", problem, "the run restarts from epoch 0")
    return 0


def executor_provenance(executor: str, device: str) -> dict[str, Any]:
    """Who trained a run: the executor, host, process, device pinning and, under Slurm, the job and array task."""
    from repro.execution.distributed import current

    return {"name": executor, "host": socket.gethostname(), "pid": os.getpid(), "device": device,
            "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"), "world_size": current().size,
            **slurm_identity()}


def run_one(request: RunRequest, results_dir: Path, device: str, data_dir: Path | None,
            events: Any = None, executor: str = "local", lock: RunLock | None = None) -> dict[str, Any]:
    """Train (or resume) one run and write its record atomically; with `lock`, stop if the lock is lost.
    Under torchrun this is rank 0's: the other ranks are told to train the run with it (repro.execution.distributed)."""
    from repro.checkpoints import CheckpointUnusable
    from repro.execution import distributed
    from repro.train import train_run

    cfg = request.cfg
    checkpoint = checkpoint_path(results_dir, cfg)
    checkpoint.parent.mkdir(parents=True, exist_ok=True)
    resumed_from = load_checkpoint_epoch(results_dir, cfg)

    def on_epoch(epoch: int, epochs: int, entry: dict) -> None:
        if lock is not None:
            lock.ensure_held()
        if events is not None:
            events.put(("epoch", request.label, epoch, epochs))

    started, cpu = time.perf_counter(), time.process_time()
    if distributed.current().distributed:
        distributed.announce_run(cfg)
    try:
        out = train_run(cfg, torch.device(device), data_dir, checkpoint, on_epoch)
    except CheckpointUnusable as exc:  # loaded, but does not fit the model or optimiser
        set_aside(checkpoint, "checkpoint", exc.reason, "the run restarts from epoch 0")
        resumed_from, started, cpu = 0, time.perf_counter(), time.process_time()
        if distributed.current().distributed:
            distributed.announce_run(cfg)
        out = train_run(cfg, torch.device(device), data_dir, checkpoint, on_epoch)
    if lock is not None:
        lock.ensure_held()
    record = {
        "schema": RECORD_SCHEMA,
        "config": cfg.to_dict(),
        "config_hash": cfg.hash,
        "seed": cfg.seed,
        "label": request.label,
        **out,
        "resumed_from_epoch": resumed_from,
        "wall_seconds": time.perf_counter() - started,
        # where this process's time went (repro.timings); this attempt's, when the run was resumed
        "timings": {**out.pop("timings", {}), "run": {"wall_s": time.perf_counter() - started,
                                                      "cpu_s": time.process_time() - cpu}},
        "provenance": {**provenance(device), "executor": executor_provenance(executor, device)},
    }
    record = jsonable(record)
    record["digest"] = record_digest(record)
    if problem := record_problem(record, jsonable(cfg.to_dict()), cfg.hash, cfg.epochs):
        raise RuntimeError(f"the record of {request.label} fails its own check ({problem}); not written")
    atomic_write_json(record_path(results_dir, cfg), record)
    checkpoint.unlink(missing_ok=True)  # only the lock holder gets here, so no one is loading it
    failure_path(results_dir, cfg.hash).unlink(missing_ok=True)
    return record


def follow_runs(results_dir: Path, device: str, data_dir: Path | None) -> int:
    """Rank r > 0: train each run rank 0 announces until it says stop; returns the number of runs trained."""
    from repro.execution.distributed import broadcast, current, rank_device
    from repro.train import NonFiniteLoss, train_run

    world = current()
    trained = 0
    while True:
        kind, cfg = broadcast()
        if kind == "stop":
            return trained
        try:
            train_run(cfg, torch.device(rank_device(device, world)), data_dir, checkpoint_path(results_dir, cfg))
        except NonFiniteLoss:
            pass  # every rank sees the same reduced loss: rank 0 records the failure and goes on
        trained += 1


@dataclass
class Attempt:
    """What one try at a run came to: trained here, found recorded, busy elsewhere, or failed."""

    run_hash: str
    status: str  # "trained" | "recorded" | "busy" | "failed"
    record: dict[str, Any] | None = None
    error: str | None = None
    holder: dict[str, Any] | None = None  # the lock's holder, when busy


def attempt_run(request: RunRequest, results_dir: Path, device: str, data_dir: Path | None, events: Any = None,
                executor: str = "local", lock_settings: LockSettings = LockSettings()) -> Attempt:
    """Take the run's lock, then train it unless its record appeared meanwhile; never raises for a failed run."""
    h = request.cfg.hash
    lock = try_lock(runs_dir(results_dir), h, lock_settings, request.label, executor)
    if not isinstance(lock, RunLock):
        return Attempt(h, "busy", holder=lock)
    try:
        record = load_record(results_dir, request.cfg)  # written by the previous holder?
        if record is not None:
            return Attempt(h, "recorded", record)
        return Attempt(h, "trained", run_one(request, results_dir, device, data_dir, events, executor, lock))
    except LockLost:  # judged stale and taken over: the new holder trains it
        return Attempt(h, "busy", holder=read_holder(lock.path) or {"heartbeat": time.time()})
    except Exception as exc:  # reported by the caller; the other runs go on
        error = f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=3)}"
        atomic_write_json(failure_path(results_dir, h), {"label": request.label, "error": error, "time": time.time(),
                                                          "executor": executor_provenance(executor, device)})
        return Attempt(h, "failed", error=error)
    finally:
        lock.release()


@dataclass
class RunCounts:
    trained: int = 0  # trained by this command (in its processes, or by the Slurm jobs it submitted)
    reused: int = 0  # recorded before this command started
    by_other: int = 0  # recorded meanwhile by another process

    def line(self) -> str:
        return f"runs: {self.trained} trained here, {self.reused} reused, {self.by_other} trained by another process"


@dataclass
class RunBatch:
    """execute_runs' result. Unpacks as (records, errors), the shape it had before the counts."""

    records: dict[str, dict] = field(default_factory=dict)  # by config hash
    errors: dict[str, str] = field(default_factory=dict)  # by config hash
    counts: RunCounts = field(default_factory=RunCounts)
    trained: list[str] = field(default_factory=list)  # hashes of the runs this command trained, in order
    submitted: dict[str, str] = field(default_factory=dict)  # hash -> Slurm job, not awaited (no_wait; also in errors)

    def __iter__(self):
        return iter((self.records, self.errors))

    def add(self, attempt: Attempt, waited: bool = False) -> None:
        """Book a finished attempt; `waited`: its record came from another process's lock we waited on."""
        if attempt.status == "trained":
            self.records[attempt.run_hash] = attempt.record
            self.counts.trained += 1
            self.trained.append(attempt.run_hash)
        elif attempt.status == "recorded":
            self.records[attempt.run_hash] = attempt.record
            self.counts.by_other += 1
        elif attempt.status == "failed":
            self.errors[attempt.run_hash] = attempt.error


def pending_runs(requests: list[RunRequest], results_dir: Path) -> tuple[RunBatch, list[RunRequest]]:
    """Deduplicate by hash; the runs already recorded are booked as reused, the others returned to do."""
    batch = RunBatch()
    todo: list[RunRequest] = []
    seen: set[str] = set()
    for r in requests:
        if r.cfg.hash in seen:
            continue
        seen.add(r.cfg.hash)
        record = load_record(results_dir, r.cfg)
        if record is None:
            todo.append(r)
        else:
            batch.records[r.cfg.hash] = record
            batch.counts.reused += 1
    return batch, todo
