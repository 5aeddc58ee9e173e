"""The local executor: runs on this machine, one process per slot.

A slot is one concurrent run: on a CPU, `jobs` slots share the cores (one slot:
in this process, as before); on GPUs, `runs_per_gpu` slots per visible GPU, each
a process that sees only its GPU (CUDA_VISIBLE_DEVICES), so small models share a
device. A run another process holds (repro.runtime.locks) is skipped and its record awaited;
if its holder goes away without one, the run is tried here. On Ctrl-C or SIGTERM the
running workers are stopped within seconds and Stopped names the runs they trained (the
scheduler says what was kept); on a disk that refuses a file (WriteFailed) they are stopped too.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections import deque
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from repro.execution.files import poll_interval, poll_waiting
from repro.execution.protocol import ExecutionRequest, Outcome, RunRequest, RunState, Stopped
from repro.core.settings import Launch, Settings
from repro.runtime.interrupt import clean_after_kill, stop_workers, sweep_worker_locks, training
from repro.runtime.locks import LockSettings, describe_holder
from repro.execution.workers import release_workers, start_workers


@dataclass(frozen=True)
class Slot:
    name: str  # e.g. "gpu1/0": the first run slot on GPU 1
    env: dict[str, str] = field(default_factory=dict)  # set in the slot's process before torch starts
    in_process: bool = False  # the run trains in this process (one slot in all)


def visible_gpus(launch: Launch) -> list[str]:
    """The GPUs this process may use (its launch's CUDA_VISIBLE_DEVICES, else every GPU torch sees), as entries."""
    if launch.visible_gpus is not None:
        return [g.strip() for g in launch.visible_gpus.split(",") if g.strip()]
    import torch

    return [str(i) for i in range(torch.cuda.device_count())]


def local_slots(device: str, jobs: int, gpus: list[str], runs_per_gpu: int) -> list[Slot]:
    """The run slots of this machine. On CUDA, slot k of every GPU comes before slot k+1 of any,
    so the first runs spread over the GPUs before any GPU takes a second. Each run trains on the
    threads its config names, whichever slot it lands in (repro.runtime.numerics)."""
    if device.startswith("cuda"):
        if not gpus:
            raise RuntimeError("device cuda was asked for, but no GPU is visible (CUDA_VISIBLE_DEVICES is empty)")
        if len(gpus) == 1 and runs_per_gpu == 1:
            return [Slot(f"gpu{gpus[0]}/0", in_process=True)]
        return [Slot(f"gpu{g}/{k}", {"CUDA_VISIBLE_DEVICES": g}) for k in range(runs_per_gpu) for g in gpus]
    if jobs <= 1:
        return [Slot("cpu", in_process=True)]
    return [Slot(f"cpu/{k}") for k in range(jobs)]


def _attempt_in_worker(
    request: RunRequest,
    results_dir: Path,
    device: str,
    data_dir: Path | None,
    events: Any,
    settings: LockSettings,
    run_settings: Settings,
) -> Outcome:
    from repro.execution.records import attempt_run

    with training():
        return attempt_run(request, results_dir, device, data_dir, _Progress(events), "local", settings, run_settings)


def slot_settings(settings: Settings, slot: Slot) -> Settings:
    """The command's settings as the slot's process has them: pinned to its GPU where the slot is."""
    gpu = slot.env.get("CUDA_VISIBLE_DEVICES")
    return settings if gpu is None else dataclasses.replace(settings, launch=settings.launch.pinned_to(gpu))


class _Progress:
    """A worker's end of the events queue. Progress is for display: with the manager gone (the main process was
    killed and the manager stopped first), an epoch is not a failed run; the worker stops itself next."""

    def __init__(self, events: Any) -> None:
        self.events = events

    def put(self, event: tuple) -> None:
        try:
            self.events.put(event)
        except (OSError, EOFError):  # BrokenPipeError, ConnectionRefusedError, ...
            pass


def run_local(work: ExecutionRequest, slots: list[Slot] | None = None) -> list[Outcome]:
    """Train `work.runs` on this machine's slots (default: local_slots); one Outcome per run."""
    from repro.execution.records import attempt_run

    device, progress, results_dir, data_dir = work.device, work.progress, work.results_dir, work.data_dir
    if slots is None and work.settings.launch.world_size != 1:
        # Under torchrun this is rank 0: each run trains in this process, on this rank's device, with
        # the other ranks (repro.runtime.distributed); one run at a time.
        from repro.runtime.distributed import current, rank_device

        world = current()
        slots, device = [Slot(f"ddp/{world.size}", in_process=True)], rank_device(device, world)
    if slots is None:
        gpus = visible_gpus(work.settings.launch) if device.startswith("cuda") else []
        slots = local_slots(device, work.jobs, gpus, work.options.runs_per_gpu)
    settings = dataclasses.replace(work.options.lock, job=work.settings.launch.slurm)
    device = "cuda" if device.startswith("cuda") and not slots[0].in_process else device
    overall = progress.add_task(f"runs ({work.reused} already recorded)", total=len(work.runs)) if progress else None
    queue = deque(work.runs)
    waiting: dict[str, tuple[RunRequest, float]] = {}  # hash -> (request, waiting since)
    pools: dict[str, ProcessPoolExecutor] = {}
    events = workers = None
    failed = True  # until the loop ends normally: then kept workers may serve the next table
    tasks: dict[str, Any] = {}  # label -> progress task
    running: dict[Future, tuple[Slot, RunRequest]] = {}
    in_process: list[RunRequest] = []  # the request training in this process, while it trains
    free = list(slots)
    outcomes: list[Outcome] = []

    said: dict[str, tuple] = {}  # hash -> the holder last logged: a wait is logged when its holder changes

    def finish(outcome: Outcome, request: RunRequest) -> None:
        if progress is not None and request.label in tasks:
            progress.remove_task(tasks.pop(request.label))
        if outcome.state is RunState.HELD:
            waiting[outcome.run_hash] = (request, time.time())
            holder = outcome.holder or {}
            who = tuple(holder.get(k) for k in ("host", "pid", "token", "problem"))
            if progress is not None and said.get(outcome.run_hash) != who:
                said[outcome.run_hash] = who
                progress.log(f"{request.label}: held by {describe_holder(holder)}; waiting for its record")
            return
        outcomes.append(outcome)
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
                    tasks[request.label] = progress.add_task(
                        f"  {request.label}", total=request.cfg.epochs, start=slot.in_process
                    )
                if slot.in_process:
                    sink = _ProgressEvents(progress, tasks)
                    in_process.append(request)
                    finish(
                        attempt_run(
                            request,
                            results_dir,
                            device,
                            data_dir,
                            sink,
                            "local",
                            settings,
                            slot_settings(work.settings, slot),
                        ),
                        request,
                    )
                    in_process.clear()
                    free.append(slot)
                else:
                    future = pools[slot.name].submit(
                        _attempt_in_worker,
                        request,
                        results_dir,
                        device,
                        data_dir,
                        events,
                        settings,
                        slot_settings(work.settings, slot),
                    )
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
                ended, free_again = poll_waiting(results_dir, waiting, settings)
                queue.extend(free_again)
                outcomes.extend(ended)
                if progress is not None and ended:
                    progress.advance(overall, len(ended))
                # A run found free goes back to the queue after this sleep: when its lock still cannot be taken,
                # the next try is one poll interval later, never at once.
                if not ended:
                    time.sleep(poll_interval(settings))
        failed = False
    except BaseException as exc:  # Ctrl-C, SIGTERM (repro.runtime.interrupt.sigterm_as_interrupt), a disk that refuses
        stopped = in_process + _stop_workers(running, pools, results_dir)
        if isinstance(exc, KeyboardInterrupt):
            raise Stopped(stopped) from None
        raise
    finally:
        if workers is not None:
            release_workers(workers, failed)
    return outcomes


def _stop_workers(running: dict, pools: dict, results_dir: Path) -> list[RunRequest]:
    """Stop the workers that train a run, cleaning up after them; return the requests they trained."""
    from repro.execution.files import runs_dir

    # One process per pool; ProcessPoolExecutor keeps no public handle on it.
    procs = {
        f: next(iter(pools[slot.name]._processes.values()))
        for f, (slot, _) in running.items()
        if pools[slot.name]._processes
    }
    every = [proc for pool in pools.values() for proc in list((pool._processes or {}).values())]
    stop_workers(procs)  # SIGTERM, then SIGKILL after the grace period
    for proc in every:  # idle now, or given a run in the instant the signal came (not yet in `running`)
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
    for proc in every:
        proc.join(1.0)
    # Every worker is gone now, killed or ended: a lock still naming one is stale. A worker stopped by a signal
    # between taking its lock and the block that releases it leaves one, however it ended; so does a run submitted
    # as the signal came, before the scheduler could note it in `running`.
    for future, (_, request) in running.items():
        if future in procs:
            clean_after_kill(runs_dir(results_dir), request.cfg.hash, procs[future].pid)
    sweep_worker_locks(runs_dir(results_dir), {proc.pid for proc in every})
    # A result in transit is lost when its pool breaks: the scheduler reads what was kept from disk.
    return [request for _, request in running.values()]


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
