"""Run records: one JSON file per run, written atomically, never repeated, resumable.

A run is a RunConfig (a manifest row, a seed, a profile's settings). Its record
lives at <results>/runs/<hash>.json; while it trains, <hash>.ckpt holds the last
finished epoch and <hash>.lock names who trains it (repro.runtime.locks); a run that
failed leaves <hash>.failed.json with its error (the files: repro.execution.files). A record
also states the facts its numbers depend on (provenance.reproducibility: threads, deterministic
mode, library versions; provenance.device). A record or checkpoint that cannot be used
(repro.execution.record_checks: a truncated write, impossible values, a hand edit caught by the
record's digest, another run's file under this name) is moved aside with a warning
and the run redone (from its checkpoint, or from scratch). Which processes train the
runs is an executor's business (repro.execution.local and .slurm, scheduled by
repro.execution.runs.execute_runs); every executor trains a run through `attempt_run`: take
its lock, look for its record again, train. Under torchrun the process of rank 0 does all
that; the other ranks train with it (`follow_runs`, repro.runtime.distributed).
"""

from __future__ import annotations

import dataclasses
import os
import socket
import time
import traceback
from pathlib import Path
from typing import Any

import torch

from repro.execution.files import (
    checkpoint_path,
    failure_path,
    load_record,
    record_path,
    runs_dir,
    set_aside,
)
from repro.execution.protocol import Outcome, RunRequest, RunState
from repro.execution.record_checks import (
    RECORD_SCHEMA,
    LeftAlone,
    checkpoint_problem,
    load_error,
    record_digest,
    record_problem,
    special_file_problem,
)
from repro.core.fsutil import FolderWriter, WriteFailed, jsonable
from repro.core.settings import Launch, Settings
from repro.results.provenance import provenance
from repro.results.timings import load_average
from repro.plan.run_config import RunConfig
from repro.runtime.compile_cache import compile_cache
from repro.runtime.locks import (
    LockLost,
    LockNotRemovable,
    LockSettings,
    RunLock,
    read_holder,
    try_lock,
)


def load_checkpoint_epoch(results_dir: Path, cfg: RunConfig) -> int:
    """The epoch the run's checkpoint resumes from (0: none); an unusable checkpoint is set aside, one that cannot
    be read raises LeftAlone."""
    path = checkpoint_path(results_dir, cfg)
    if not path.exists():
        return 0
    try:
        problem = special_file_problem(path)  # a FIFO would block torch.load forever
        if problem is None:
            state = torch.load(path, map_location="cpu", weights_only=True)
            problem = checkpoint_problem(state, cfg.hash, cfg.epochs)
    except FileNotFoundError:
        return 0
    except OSError as exc:  # no permission, an I/O error: not damage, so not set aside
        raise LeftAlone.unreadable(path, exc) from None
    except Exception as exc:  # torch raises RuntimeError, EOFError, UnpicklingError... for a damaged file
        problem = f"it cannot be loaded: {load_error(exc)}"
    if problem is None:
        return state["epoch"]
    set_aside(path, "checkpoint", problem, "the run restarts from epoch 0")
    return 0


def executor_provenance(executor: str, device: str, launch: Launch) -> dict[str, Any]:
    """Who trained a run: the executor, host, process, device pinning and, under Slurm, the job and array task
    (`launch`: what the launcher of the process that trains it set)."""
    from repro.runtime.distributed import current

    return {
        "name": executor,
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "device": device,
        "cuda_visible_devices": launch.visible_gpus,
        "world_size": current().size,
        **launch.slurm_identity(),
    }


def run_one(
    request: RunRequest,
    results_dir: Path,
    device: str,
    data_dir: Path | None,
    events: Any = None,
    executor: str = "local",
    lock: RunLock | None = None,
    settings: Settings = Settings(),
) -> dict[str, Any]:
    """Train (or resume) one run and write its record atomically; with `lock`, stop if the lock is lost.
    Under torchrun this is rank 0's: the other ranks are told to train the run with it (repro.runtime.distributed).
    `settings`: the command's, as the process that trains the run has them (repro.core.settings)."""
    from repro.train.checkpoints import CheckpointUnusable
    from repro.runtime import distributed
    from repro.train.loop import train_run

    cfg = request.cfg
    checkpoint = checkpoint_path(results_dir, cfg)
    checkpoint.parent.mkdir(parents=True, exist_ok=True)
    resumed_from = load_checkpoint_epoch(results_dir, cfg)

    def on_epoch(epoch: int, epochs: int, entry: dict) -> None:
        if lock is not None:
            lock.ensure_held()
        if events is not None:
            events.put(("epoch", request.label, epoch, epochs))

    started, cpu_started, load_started = time.perf_counter(), time.process_time(), load_average()
    if distributed.current().distributed:
        distributed.announce_run((cfg, request.data))
    with compile_cache(settings.cache):  # compiled graphs reused across runs (repro.runtime.compile_cache)
        try:
            out = train_run(cfg, torch.device(device), data_dir, checkpoint, on_epoch, request.data, settings)
        except CheckpointUnusable as exc:  # loaded, but does not fit the model or optimiser
            set_aside(checkpoint, "checkpoint", exc.reason, "the run restarts from epoch 0")
            resumed_from, started, cpu_started = 0, time.perf_counter(), time.process_time()
            if distributed.current().distributed:
                distributed.announce_run((cfg, request.data))
            out = train_run(cfg, torch.device(device), data_dir, checkpoint, on_epoch, request.data, settings)
    if lock is not None:
        lock.ensure_held()
    facts = out.pop("reproducibility")
    record = {
        "schema": RECORD_SCHEMA,
        "config": cfg.to_dict(),
        "config_hash": cfg.hash,
        "seed": cfg.seed,
        "label": request.label,
        **out,
        "resumed_from_epoch": resumed_from,
        "wall_seconds": time.perf_counter() - started,
        # CPU seconds of this process while it ran (every thread): what the cost model is fitted to, since a
        # run's wall time also holds the machine's other load (repro.cost.fit).
        "cpu_seconds": time.process_time() - cpu_started,
        # where this process's time went (repro.results.timings); this attempt's, when the run was resumed
        "timings": {
            **out.pop("timings", {}),
            "run": {"wall_s": time.perf_counter() - started, "cpu_s": time.process_time() - cpu_started},
        },
        "provenance": {
            **provenance(device, cfg.threads, request.data.allow_unverified, load_started),
            "reproducibility": facts,
            "executor": executor_provenance(executor, device, settings.launch),
        },
    }
    record = jsonable(record)
    record["digest"] = record_digest(record)
    if problem := record_problem(record, jsonable(cfg.to_dict()), cfg.hash, cfg.epochs):
        raise RuntimeError(f"the record of {request.label} fails its own check ({problem}); not written")
    FolderWriter(results_dir).write_json(record_path(results_dir, cfg), record)
    checkpoint.unlink(missing_ok=True)  # only the lock holder gets here, so no one is loading it
    failure_path(results_dir, cfg.hash).unlink(missing_ok=True)
    return record


def follow_runs(results_dir: Path, device: str, data_dir: Path | None, settings: Settings = Settings()) -> int:
    """Rank r > 0: train each run rank 0 announces until it says stop; returns the number of runs trained."""
    from repro.runtime.distributed import broadcast, current, rank_device
    from repro.train.loop import NonFiniteLoss, train_run

    world = current()
    trained = 0
    while True:
        kind, run = broadcast()
        if kind == "stop":
            return trained
        cfg, data = run
        try:
            with compile_cache(settings.cache):
                train_run(
                    cfg,
                    torch.device(rank_device(device, world)),
                    data_dir,
                    checkpoint_path(results_dir, cfg),
                    data=data,
                    settings=settings,
                )
        except NonFiniteLoss:
            pass  # every rank sees the same reduced loss: rank 0 records the failure and goes on
        trained += 1


def interrupted_by(exc: BaseException) -> KeyboardInterrupt | None:
    """The Ctrl-C or SIGTERM an exception was raised while handling, if any: a stop that lands inside a lazy
    import (torch's of triton, say) can leave a half-imported module whose next use raises another error,
    which is then no failure of the run."""
    seen: set[int] = set()
    cause = exc.__cause__ or exc.__context__
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, KeyboardInterrupt):
            return cause
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    return None


def attempt_run(
    request: RunRequest,
    results_dir: Path,
    device: str,
    data_dir: Path | None,
    events: Any = None,
    executor: str = "local",
    lock_settings: LockSettings = LockSettings(),
    settings: Settings = Settings(),
) -> Outcome:
    """Take the run's lock, then train it unless its record appeared meanwhile: TRAINED, RECORDED, HELD (another
    process has it) or FAILED. Never raises for a failed run; raises WriteFailed when the disk refuses a file
    (its fault, not the run's: the command stops on it, and no record is touched). The lock names this process's
    Slurm job (settings.launch), whatever `lock_settings` say."""
    lock_settings = dataclasses.replace(lock_settings, job=settings.launch.slurm)
    h = request.cfg.hash
    try:
        lock = try_lock(runs_dir(results_dir), h, lock_settings, request.label, executor)
    except LockNotRemovable as exc:  # another user's stale lock: this run is skipped, the others train
        return Outcome(h, RunState.FAILED, error=str(exc))
    if not isinstance(lock, RunLock):
        return Outcome(h, RunState.HELD, holder=lock)
    try:
        record = load_record(results_dir, request.cfg)  # written by the previous holder?
        if record is not None:
            return Outcome(h, RunState.RECORDED, record=record)
        record = run_one(request, results_dir, device, data_dir, events, executor, lock, settings)
        return Outcome(h, RunState.TRAINED, record=record)
    except LockLost:  # judged stale and taken over: the new holder trains it
        return Outcome(h, RunState.HELD, holder=read_holder(lock.path) or {"heartbeat": time.time()})
    except LeftAlone as exc:  # its record or checkpoint cannot be read, or a newer version wrote it: not a failure
        return Outcome(h, RunState.FAILED, error=str(exc))
    except WriteFailed:
        raise
    except Exception as exc:  # reported by the caller; the other runs go on
        if (stop := interrupted_by(exc)) is not None:  # a failure on the way out of a stop is the stop
            raise stop from None
        error = f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=3)}"
        failure = {
            "label": request.label,
            "error": error,
            "time": time.time(),
            "executor": executor_provenance(executor, device, settings.launch),
        }
        try:
            FolderWriter(results_dir).write_json(failure_path(results_dir, h), failure)
        except WriteFailed:
            pass  # the caller still gets the error; only `repro status` will not show it
        return Outcome(h, RunState.FAILED, error=error)
    finally:
        lock.release()
