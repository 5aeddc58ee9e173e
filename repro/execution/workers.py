"""The local executor's worker processes: one single-process pool per slot, and a queue for progress events.

A spawned worker imports torch and the models before its first run (seconds of CPU each); a command that
runs many tables (verify-all) would pay that again for every table. Inside `kept_workers()` the workers of
one table stay for the next that has the same slots, and are stopped when the block ends. A worker keeps
nothing between runs that a run reads: each run seeds itself and builds its own model and data
(repro.train.loop). After a failure or an interrupt the workers are stopped as before, never reused.
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import os
import queue
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import resource_tracker
from multiprocessing.managers import SyncManager
from dataclasses import dataclass
from typing import Any, Iterator, Protocol, Sequence

from repro.runtime.interrupt import terminal_signals_ignored, worker_signals
from repro.runtime.memory import keep_freed_memory


class SlotLike(Protocol):  # read-only, as the local executor's frozen Slot
    @property
    def name(self) -> str: ...

    @property
    def env(self) -> dict[str, str]: ...


def _pin(env: dict[str, str]) -> None:
    worker_signals()  # Ctrl-C is the main process's to handle; it stops this one with SIGTERM
    os.environ.update(env)  # before this process first touches CUDA; each run sets its own threads


@dataclass
class Workers:
    pools: dict[str, ProcessPoolExecutor]  # slot name -> its one-process pool
    manager: SyncManager  # serves `events`
    events: queue.Queue  # a proxy of one: (kind, label, epoch, epochs) from the workers

    def close(self) -> None:
        for pool in self.pools.values():
            pool.shutdown(cancel_futures=True)
        with contextlib.suppress(Exception):  # gone already when a SIGTERM reached the whole group
            self.manager.shutdown()

    @property
    def broken(self) -> bool:
        return any(getattr(pool, "_broken", False) for pool in self.pools.values())


_kept: list[dict[tuple, Workers]] = []  # one dict per open kept_workers() block, innermost last


def _key(slots: Sequence[SlotLike]) -> tuple:
    return tuple((s.name, tuple(sorted(s.env.items()))) for s in slots)


def start_workers(slots: Sequence[SlotLike]) -> Workers:
    """The slots' workers: those kept from the previous table when a kept_workers() block is open, else new."""
    key = _key(slots)
    if _kept and key in _kept[-1]:
        workers = _kept[-1].pop(key)
        if not workers.broken:
            _kept[-1][key] = workers
            return workers
        workers.close()
    keep_freed_memory()  # workers inherit the thresholds through the environment (repro.runtime.memory)
    ctx = mp.get_context("spawn")
    manager = start_manager(ctx)
    workers = Workers(
        {s.name: ProcessPoolExecutor(1, mp_context=ctx, initializer=_pin, initargs=(s.env,)) for s in slots},
        manager,
        manager.Queue(),
    )
    if _kept:
        _kept[-1][key] = workers
    return workers


def start_manager(ctx: Any) -> SyncManager:
    """ctx.Manager(), but its server, like the workers, ignores the terminal's signals and ends with this process
    (worker_signals); the resource tracker starts with it, deaf to them too, and lives as long as the last of them."""
    manager = SyncManager(ctx=ctx)
    with terminal_signals_ignored():
        resource_tracker.ensure_running()
        manager.start(initializer=worker_signals)
    return manager


def release_workers(workers: Workers, failed: bool) -> None:
    """After a table: keep the workers for the next one inside a kept_workers() block, unless it failed."""
    kept = _kept[-1] if _kept else {}
    if not failed and any(w is workers for w in kept.values()):
        return
    for key, w in list(kept.items()):
        if w is workers:
            del kept[key]
    workers.close()


@contextlib.contextmanager
def kept_workers() -> Iterator[None]:
    """Keep the local executor's workers from one table to the next until the block ends."""
    _kept.append({})
    try:
        yield
    finally:
        for workers in _kept.pop().values():
            workers.close()
