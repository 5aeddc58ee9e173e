"""Run records: one JSON file per run, written atomically, never repeated, resumable.

A run is a RunConfig (a manifest row, a seed, a profile's settings). Its record
lives at <results>/runs/<hash>.json; while it trains, <hash>.ckpt holds the last
finished epoch. A record that cannot be read back whole (a truncated write, a
hand edit, another config under the same name) is moved aside and the run redone.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import time
import traceback
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from repro.fsutil import atomic_write_json
from repro.provenance import provenance
from repro.recipes import RunConfig

RECORD_SCHEMA = 1
REQUIRED_KEYS = {"schema", "config", "config_hash", "metrics", "history", "provenance"}


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


def load_record(results_dir: Path, cfg: RunConfig) -> dict[str, Any] | None:
    """The finished record of `cfg`, or None; a damaged record is set aside, never read as a result."""
    path = record_path(results_dir, cfg)
    if not path.exists():
        return None
    try:
        record = json.loads(path.read_text())
        problem = None
        if not isinstance(record, dict) or not REQUIRED_KEYS <= set(record):
            problem = f"missing keys {sorted(REQUIRED_KEYS - set(record or {}))}"
        elif record["config_hash"] != cfg.hash or record["config"] != json.loads(json.dumps(cfg.to_dict())):
            problem = "its config differs from the run's"
        elif record["schema"] != RECORD_SCHEMA:
            problem = f"schema {record['schema']} is not {RECORD_SCHEMA}"
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        problem = f"not valid JSON ({exc})"
    if problem is None:
        return record
    aside = path.with_name(f"{path.name}.invalid-{int(time.time())}")
    os.replace(path, aside)
    print(f"warning: run record {path} is unusable ({problem}); moved to {aside.name} and the run will be redone")
    return None


def run_one(request: RunRequest, results_dir: Path, device: str, data_dir: Path | None,
            events: Any = None) -> dict[str, Any]:
    """Train (or resume) one run and write its record atomically."""
    from repro.train import train_run

    cfg = request.cfg
    checkpoint = checkpoint_path(results_dir, cfg)
    checkpoint.parent.mkdir(parents=True, exist_ok=True)
    resumed_from = 0
    if checkpoint.exists():
        resumed_from = torch.load(checkpoint, map_location="cpu", weights_only=True)["epoch"]

    def on_epoch(epoch: int, epochs: int, entry: dict) -> None:
        if events is not None:
            events.put(("epoch", request.label, epoch, epochs))

    started = time.perf_counter()
    out = train_run(cfg, torch.device(device), data_dir, checkpoint, on_epoch)
    record = {
        "schema": RECORD_SCHEMA,
        "config": cfg.to_dict(),
        "config_hash": cfg.hash,
        "seed": cfg.seed,
        "label": request.label,
        **out,
        "resumed_from_epoch": resumed_from,
        "wall_seconds": time.perf_counter() - started,
        "provenance": provenance(device),
    }
    atomic_write_json(record_path(results_dir, cfg), record)
    checkpoint.unlink(missing_ok=True)
    return record


def _worker_init(threads: int) -> None:
    torch.set_num_threads(threads)


def _run_in_worker(request: RunRequest, results_dir: Path, device: str, data_dir: Path | None, events: Any):
    try:
        return request.cfg.hash, run_one(request, results_dir, device, data_dir, events), None
    except Exception as exc:  # reported by the parent; the other runs go on
        return request.cfg.hash, None, f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=3)}"


def execute_runs(requests: list[RunRequest], results_dir: Path, device: str, data_dir: Path | None = None,
                 jobs: int = 1, progress: Any = None) -> tuple[dict[str, dict], dict[str, str]]:
    """Run what has no record yet; return (records by hash, errors by hash)."""
    unique: dict[str, RunRequest] = {}
    for r in requests:
        unique.setdefault(r.cfg.hash, r)
    records: dict[str, dict] = {}
    todo: list[RunRequest] = []
    for h, r in unique.items():
        record = load_record(results_dir, r.cfg)
        if record is None:
            todo.append(r)
        else:
            records[h] = record
    errors: dict[str, str] = {}
    if not todo:
        return records, errors
    overall = progress.add_task(f"runs ({len(records)} already recorded)", total=len(todo)) if progress else None
    if jobs <= 1 or device.startswith("cuda"):
        for r in todo:
            task = progress.add_task(f"  {r.label}", total=r.cfg.epochs) if progress else None
            events = _ProgressEvents(progress, {r.label: task})
            h, record, error = _run_in_worker(r, results_dir, device, data_dir, events)
            _collect(h, record, error, records, errors, progress, overall, task)
        return records, errors
    threads = max(1, (os.cpu_count() or 1) // jobs)
    # glibc returns large blocks to the OS on every free, so each training step page-faults its
    # gradients and optimizer temporaries back in; on a CPU that doubled a run's wall time.
    # Workers inherit these thresholds (they are read when a process starts).
    for name in ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_"):
        os.environ.setdefault(name, str(1 << 30))
    manager = mp.get_context("spawn").Manager()
    events = manager.Queue()
    with ProcessPoolExecutor(jobs, mp_context=mp.get_context("spawn"), initializer=_worker_init,
                             initargs=(threads,)) as pool:
        futures = {pool.submit(_run_in_worker, r, results_dir, device, data_dir, events): r for r in todo}
        tasks = {r.label: progress.add_task(f"  {r.label}", total=r.cfg.epochs, start=False) for r in todo} if progress else {}
        pending = set(futures)
        while pending:
            done, pending = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)
            _drain(events, progress, tasks)
            for f in done:
                h, record, error = f.result()
                _collect(h, record, error, records, errors, progress, overall, tasks.get(futures[f].label))
    manager.shutdown()
    return records, errors


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
    while True:
        try:
            event = events.get_nowait()
        except Exception:  # queue.Empty from a manager proxy
            return
        _apply(event, progress, tasks)


def _collect(h, record, error, records, errors, progress, overall, task) -> None:
    if record is not None:
        records[h] = record
    else:
        errors[h] = error
    if progress is not None:
        progress.advance(overall)
        if task is not None:
            progress.remove_task(task)
