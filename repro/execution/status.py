"""Per table, its runs done, running (who, for how long, last heartbeat), failed, pending (`repro status`).

Read from the results directory alone (records, locks, failure and Slurm markers:
repro.execution.records, repro.runtime.locks), so it answers for runs of any executor on any host, and
changes nothing there.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path

from repro.runtime.locks import DEFAULT_STALE_AFTER_S, LockSettings, describe_holder, read_holder, stale_reason

STATES = ("done", "running", "failed", "pending")


@dataclass
class RunState:
    label: str
    run_hash: str
    state: str  # one of STATES
    detail: str = ""


@dataclass
class TableStatus:
    manifest_id: str
    runs: list[RunState] = field(default_factory=list)

    def count(self, state: str) -> int:
        return sum(r.state == state for r in self.runs)


def _json(path: Path) -> dict | None:
    try:
        value = json.loads(path.read_text())
    except (FileNotFoundError, json.JSONDecodeError, UnicodeDecodeError):
        return None
    return value if isinstance(value, dict) else None


def run_state(runs_dir: Path, run_hash: str, label: str, settings: LockSettings, now: float | None = None) -> RunState:
    """One run's state from its files: a whole record, then a live lock, then a failure, else pending."""
    now = time.time() if now is None else now
    record = _json(runs_dir / f"{run_hash}.json")
    if record is not None and record.get("config_hash") == run_hash:
        ex = record.get("provenance", {}).get("executor", {})
        where = f" on {ex['host']} ({ex.get('name', '?')})" if ex.get("host") else ""
        return RunState(label, run_hash, "done", f"{record.get('wall_seconds', 0):.0f} s{where}")
    holder = read_holder(runs_dir / f"{run_hash}.lock")
    stale = stale_reason(holder, settings, now) if holder is not None else None
    if holder is not None and stale is None:
        return RunState(label, run_hash, "running", describe_holder(holder, now))
    failed = _json(runs_dir / f"{run_hash}.failed.json")
    if failed is not None:
        host = failed.get("executor", {}).get("host", "?")
        return RunState(label, run_hash, "failed", f"on {host}: {str(failed.get('error', '')).splitlines()[0]}")
    notes = []
    if holder is not None:
        notes.append(f"interrupted ({describe_holder(holder, now)}: {stale})")
    queued = _json(runs_dir / f"{run_hash}.slurm.json")
    if queued is not None:
        notes.append(f"submitted as Slurm job {queued.get('job_id')}")
    if (runs_dir / f"{run_hash}.ckpt").exists():
        notes.append("a checkpoint is kept: it resumes")
    return RunState(label, run_hash, "pending", "; ".join(notes))


def table_status(manifest, profile_name: str, results_dir: Path, settings: LockSettings) -> TableStatus:
    from repro.recipes import planned_runs
    from repro.execution.records import runs_dir

    out = TableStatus(manifest.id)
    seen: set[str] = set()
    now = time.time()
    for planned in planned_runs(manifest, manifest.profiles[profile_name]):
        if planned.cfg.hash not in seen:
            seen.add(planned.cfg.hash)
            out.runs.append(run_state(runs_dir(results_dir), planned.cfg.hash, planned.label, settings, now))
    return out
