"""`repro status`: per table, its runs done, running (who, for how long, last heartbeat), failed, pending.

Read from the results directory alone (records, locks, failure and Slurm markers:
repro.execution.records, repro.runtime.locks), so it answers for runs of any executor on any host, and
changes nothing there.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import typer

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


def status_command(ids: list[str] = typer.Argument(None, help="Manifest ids (default: all)."),
                   profile: Optional[str] = typer.Option(None, "--profile", "-p", help="Default: $REPRO_PROFILE or smoke."),
                   results_dir: Optional[Path] = typer.Option(None, "--results-dir", "-o",
                                                              help="Default: $REPRO_RESULTS or ./results."),
                   stale_lock_after: float = typer.Option(DEFAULT_STALE_AFTER_S, "--stale-lock-after",
                                                          help="Seconds without a heartbeat after which a run counts as interrupted."),
                   verbose: bool = typer.Option(False, "--verbose", "-v", help="Also list the pending runs.")) -> None:
    """Per table: runs done, running (who, for how long, last heartbeat), failed (with the error), pending."""
    from rich.console import Console
    from rich.table import Table

    from repro.manifest import find_manifest, load_all
    from repro.profiles import default_profile
    from repro.results import default_results_dir

    profile = profile or default_profile()
    results_dir = results_dir or default_results_dir()
    manifests = [find_manifest(i) for i in ids] if ids else load_all()
    console = Console()
    table = Table("Table", *STATES, title=f"runs in {results_dir} (profile {profile})")
    lines: list[str] = []
    settings = LockSettings(stale_lock_after)
    for m in manifests:
        if profile not in m.profiles:
            continue
        status = table_status(m, profile, results_dir, settings)
        if not status.runs:
            continue
        table.add_row(m.id, *(str(status.count(s)) for s in STATES))
        for r in status.runs:
            if r.state in ("running", "failed") or (verbose and r.state == "pending"):
                lines.append(f"{r.state:8} {r.label} ({r.run_hash[:12]}): {r.detail}")
    console.print(table)
    for line in lines:
        console.print(line, highlight=False, markup=False)
