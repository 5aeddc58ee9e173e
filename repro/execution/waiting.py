"""Waiting for a run another process holds: its record, its failure, or its holder gone."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from repro.runtime.locks import LockSettings, lock_path, read_holder, stale_reason
from repro.execution.records import failure_path, load_record, runs_dir


def check_waiting(request: Any, since: float, results_dir: Path, settings: LockSettings) -> tuple[str, Any]:
    """A run another process holds: ("recorded", record), ("failed", error), ("free", None) to try it
    here (its holder is gone without a record), or ("held", holder)."""
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
