"""What `repro status` shows: per table, its runs done, running (who, for how long, last heartbeat), failed, pending.

Read from the results directory alone, through the probe every executor uses
(repro.execution.files.probe: records, locks, failures), so it answers for runs of any executor on
any host; it reads only, so an unusable record (repro.execution.record_checks, the rule `repro run`
applies) is counted pending, with why, and left where it is. Torch-free.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from repro.execution.files import checkpoint_path, probe, read_json, submitted_path
from repro.execution.protocol import RunState
from repro.plan.run_config import RunConfig
from repro.plan.table_plan import TablePlan
from repro.runtime.locks import LockSettings, describe_holder, stale_reason

# What status calls each state a run's files can be in (repro.execution.files.probe).
SHOWN = {RunState.RECORDED: "done", RunState.HELD: "running", RunState.FAILED: "failed", RunState.FREE: "pending"}
STATES = tuple(SHOWN.values())


@dataclass(frozen=True)
class RunLine:
    label: str
    run_hash: str
    state: str  # one of STATES
    detail: str = ""


@dataclass
class TableStatus:
    manifest_id: str
    runs: list[RunLine] = field(default_factory=list)

    def count(self, state: str) -> int:
        return sum(r.state == state for r in self.runs)


def run_line(
    results_dir: Path, cfg: RunConfig, label: str, settings: LockSettings, now: float | None = None
) -> RunLine:
    """One run's state from its files: a usable record, then a live lock, then a failure, else pending."""
    now = time.time() if now is None else now
    outcome = probe(results_dir, cfg, settings, set_aside_unusable=False, now=now)
    state = SHOWN[outcome.state]
    if outcome.state is RunState.RECORDED:
        assert outcome.record is not None  # probe gives every RECORDED outcome its record
        ex = outcome.record.get("provenance", {}).get("executor", {})
        where = f" on {ex['host']} ({ex.get('name', '?')})" if ex.get("host") else ""
        return RunLine(label, cfg.hash, state, f"{outcome.record.get('wall_seconds', 0):.0f} s{where}")
    if outcome.state is RunState.HELD:
        assert outcome.holder is not None  # and every HELD one its holder
        return RunLine(label, cfg.hash, state, describe_holder(outcome.holder, now))
    if outcome.state is RunState.FAILED:
        assert outcome.error is not None  # and every FAILED one its error
        return RunLine(label, cfg.hash, state, outcome.error.splitlines()[0])
    notes = []
    if outcome.error:  # an unusable record
        notes.append(f"{outcome.error}: the next run sets it aside and redoes it")
    if outcome.holder is not None:
        notes.append(
            f"interrupted ({describe_holder(outcome.holder, now)}: {stale_reason(outcome.holder, settings, now)})"
        )
    queued = read_json(submitted_path(results_dir, cfg.hash))
    if queued is not None:
        notes.append(f"submitted as Slurm job {queued.get('job_id')}")
    if checkpoint_path(results_dir, cfg).exists():
        notes.append("a checkpoint is kept: it resumes")
    return RunLine(label, cfg.hash, state, "; ".join(notes))


def table_status(plan: TablePlan, results_dir: Path, settings: LockSettings) -> TableStatus:
    """The state of each distinct run the table's plan holds."""
    out = TableStatus(plan.id)
    seen: set[str] = set()
    now = time.time()
    for planned in plan.runs:
        if planned.cfg.hash not in seen:
            seen.add(planned.cfg.hash)
            out.runs.append(run_line(results_dir, planned.cfg, planned.label, settings, now))
    return out
