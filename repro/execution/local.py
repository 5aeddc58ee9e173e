"""The local executor: runs on this machine, one process per slot.

A slot is one concurrent run: on a CPU, `jobs` slots share the cores (one slot:
in this process, as before); on GPUs, `runs_per_gpu` slots per visible GPU, each
a process that sees only its GPU (CUDA_VISIBLE_DEVICES), so small models share a
device. A run another process holds (repro.execution.locks) is skipped and its record awaited;
if its holder goes away without one, the run is tried here. On Ctrl-C or SIGTERM the
running workers are stopped within seconds and RunsInterrupted says what was kept
(repro.execution.interrupt).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections import deque
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from repro.execution.waiting import check_waiting, poll_interval
from repro.execution.options import ExecutorOptions
from repro.execution.interrupt import (
    RunsInterrupted, checkpoint_epoch, clean_after_kill, stop_workers, training,
)
from repro.execution.locks import LockSettings, describe_holder
from repro.execution.workers import release_workers, start_workers


@dataclass(frozen=True)
class Slot:
    name: str  # e.g. "gpu1/0": the first run slot on GPU 1
    env: dict[str, str] = field(default_factory=dict)  # set in the slot's process before torch starts
    threads: int = 0  # torch threads in the slot's process; 0: leave torch's default
    in_process: bool = False  # the run trains in this process (one slot in all)


def visible_gpus() -> list[str]:
    """The GPUs this process may use, as CUDA_VISIBLE_DEVICES entries."""
    env = os.environ.get("CUDA_VISIBLE_DEVICES")
    if env is not None:
        return [g.strip() for g in env.split(",") if g.strip()]
    import torch

    return [str(i) for i in range(torch.cuda.device_count())]


def local_slots(device: str, jobs: int, gpus: list[str], runs_per_gpu: int, cpus: int) -> list[Slot]:
    """The run slots of this machine. On CUDA, slot k of every GPU comes before slot k+1 of any,
    so the first runs spread over the GPUs before any GPU takes a second."""
    if device.startswith("cuda"):
        if not gpus:
            raise RuntimeError("device cuda was asked for, but no GPU is visible (CUDA_VISIBLE_DEVICES is empty)")
        if len(gpus) == 1 and runs_per_gpu == 1:
            return [Slot(f"gpu{gpus[0]}/0", in_process=True)]
        threads = max(1, cpus // (len(gpus) * runs_per_gpu))
        return [Slot(f"gpu{g}/{k}", {"CUDA_VISIBLE_DEVICES": g}, threads) for k in range(runs_per_gpu) for g in gpus]
    if jobs <= 1:
        return [Slot("cpu", in_process=True)]
    return [Slot(f"cpu/{k}", {}, max(1, cpus // jobs)) for k in range(jobs)]


def _attempt_in_worker(request: Any, results_dir: Path, device: str, data_dir: Path | None, events: Any,
                       settings: LockSettings) -> Any:
    from repro.execution.records import attempt_run

    with training():
        return attempt_run(request, results_dir, device, data_dir, events, "local", settings)


def run_local(todo: list, batch: Any, results_dir: Path, device: str, data_dir: Path | None, jobs: int,
              progress: Any, options: ExecutorOptions, slots: list[Slot] | None = None) -> None:
    """Train `todo` on this machine's slots (default: local_slots), booking each outcome in `batch`."""
    from repro.execution.records import Attempt, attempt_run, checkpoint_path

    if slots is None and os.environ.get("WORLD_SIZE", "1") != "1":
        # Under torchrun this is rank 0: each run trains in this process, on this rank's device, with
        # the other ranks (repro.execution.distributed); one run at a time.
        from repro.execution.distributed import current, rank_device

        world = current()
        slots, device = [Slot(f"ddp/{world.size}", in_process=True)], rank_device(device, world)
    if slots is None:
        gpus = visible_gpus() if device.startswith("cuda") else []
        slots = local_slots(device, jobs, gpus, options.runs_per_gpu, os.cpu_count() or 1)
    settings = options.lock
    device = "cuda" if device.startswith("cuda") and not slots[0].in_process else device
    overall = progress.add_task(f"runs ({batch.counts.reused} already recorded)", total=len(todo)) if progress else None
    queue = deque(todo)
    waiting: dict[str, tuple[Any, float]] = {}  # hash -> (request, waiting since)
    pools: dict[str, ProcessPoolExecutor] = {}
    events = workers = None
    failed = True  # until the loop ends normally: then kept workers may serve the next table
    tasks: dict[str, Any] = {}  # label -> progress task
    running: dict[Future, tuple[Slot, Any]] = {}
    in_process: list = []  # the request training in this process, while it trains
    free = list(slots)

    def finish(attempt: Attempt, request: Any) -> None:
        if progress is not None and request.label in tasks:
            progress.remove_task(tasks.pop(request.label))
        if attempt.status == "busy":
            waiting[attempt.run_hash] = (request, time.time())
            if progress is not None:
                progress.log(f"{request.label}: held by {describe_holder(attempt.holder)}; waiting for its record")
            return
        batch.add(attempt)
        if progress is not None:
            progress.advance(overall)

    try:
        if not slots[0].in_process:
            workers = start_workers(slots)
            pools, events = workers.pools, workers.events
        while queue or waiting or running:
            while queue and free:
                slot, request = free.pop(0), queue.popleft()
                if progress is not None:
                    tasks[request.label] = progress.add_task(f"  {request.label}", total=request.cfg.epochs,
                                                             start=slot.in_process)
                if slot.in_process:
                    sink = _ProgressEvents(progress, tasks)
                    in_process.append(request)
                    finish(attempt_run(request, results_dir, device, data_dir, sink, "local", settings), request)
                    in_process.clear()
                    free.append(slot)
                else:
                    future = pools[slot.name].submit(_attempt_in_worker, request, results_dir, device, data_dir,
                                                     events, settings)
                    running[future] = (slot, request)
            if running:
                done, _ = wait(list(running), timeout=0.5, return_when=FIRST_COMPLETED)
                _drain(events, progress, tasks)
                for future in done:
                    slot, request = running.pop(future)
                    free.append(slot)
                    free.sort(key=slots.index)
                    finish(future.result(), request)
            elif waiting:
                if not _poll_waiting(waiting, queue, batch, results_dir, settings, progress, overall):
                    time.sleep(poll_interval(settings))
        failed = False
    except KeyboardInterrupt:  # Ctrl-C, or SIGTERM (repro.execution.interrupt.sigterm_as_interrupt)
        stopped = in_process + _stop_workers(running, pools, batch, results_dir)
        raise RunsInterrupted(len(batch.records), [checkpoint_epoch(checkpoint_path(results_dir, r.cfg))
                                                   for r in stopped if r.cfg.hash not in batch.records],
                              len(queue) + len(waiting)) from None
    finally:
        if workers is not None:
            release_workers(workers, failed)


def _stop_workers(running: dict, pools: dict, batch: Any, results_dir: Path) -> list:
    """Stop the workers that train a run; book the runs recorded meanwhile; return the requests stopped."""
    from repro.execution.records import checkpoint_path, load_record, runs_dir

    # One process per pool; ProcessPoolExecutor keeps no public handle on it.
    procs = {f: next(iter(pools[slot.name]._processes.values())) for f, (slot, _) in running.items()
             if pools[slot.name]._processes}
    killed = stop_workers(procs)
    for pool in pools.values():  # idle now, holding nothing: a graceful exit took seconds per worker
        for proc in list(pool._processes.values()):
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
    stopped = []
    for future, (slot, request) in running.items():
        if future in procs and procs[future].pid in killed:
            clean_after_kill(runs_dir(results_dir), request.cfg.hash, procs[future].pid)
        # Read back rather than trust the future: a result in transit is lost when its pool breaks.
        record = load_record(results_dir, request.cfg)
        if record is None:
            stopped.append(request)
            continue
        batch.records[request.cfg.hash] = record
        batch.counts.trained += 1
        batch.trained.append(request.cfg.hash)
        checkpoint_path(results_dir, request.cfg).unlink(missing_ok=True)  # stopped between record and unlink
    return stopped


def _poll_waiting(waiting: dict, queue: deque, batch: Any, results_dir: Path, settings: LockSettings,
                  progress: Any, overall: Any) -> bool:
    """Book the awaited runs that finished elsewhere; requeue those whose holder left. True if any changed."""
    changed = False
    for h, (request, since) in list(waiting.items()):
        state, value = check_waiting(request, since, results_dir, settings)
        if state == "held":
            continue
        changed = True
        del waiting[h]
        if state == "free":
            queue.append(request)
            continue
        if state == "recorded":
            batch.records[h] = value
            batch.counts.by_other += 1
        else:
            batch.errors[h] = value
        if progress is not None:
            progress.advance(overall)
    return changed


class _ProgressEvents:
    """Queue-like sink for in-process runs: updates the progress bar directly."""

    def __init__(self, progress: Any, tasks: dict[str, Any]) -> None:
        self.progress, self.tasks = progress, tasks

    def put(self, event: tuple) -> None:
        _apply(event, self.progress, self.tasks)


def _apply(event: tuple, progress: Any, tasks: dict[str, Any]) -> None:
    kind, label, epoch, epochs = event
    if progress is not None and label in tasks:
        progress.start_task(tasks[label])
        progress.update(tasks[label], completed=epoch, total=epochs)


def _drain(events: Any, progress: Any, tasks: dict[str, Any]) -> None:
    while events is not None:
        try:
            event = events.get_nowait()
        except Exception:  # queue.Empty from a manager proxy
            return
        _apply(event, progress, tasks)
