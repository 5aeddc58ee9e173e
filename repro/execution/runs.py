"""The run scheduler: what has no record yet is trained by an executor; records are reused, never repeated.

One run is one record (repro.execution.records: train under a lock, write the record); who trains
the pending runs, on this machine or on a Slurm cluster, is an executor (repro.execution.local,
repro.execution.slurm), each an Executor of repro.execution.protocol: one ExecutionRequest in, one
Outcome per run out. The names below are the public ones other code imports from here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from repro.execution.files import (  # noqa: F401  (re-exported)
    checkpoint_path,
    failure_path,
    load_record,
    record_path,
    remove_stale_temporaries,
    runs_dir,
)
from repro.execution.options import EXECUTORS, ExecutorOptions
from repro.core.progress import Progress
from repro.core.settings import Settings
from repro.data.read_options import DataOptions  # noqa: F401  (re-exported: a run request's data options)
from repro.execution.record_checks import LeftAlone
from repro.execution.protocol import ExecutionRequest, Executor, Outcome, RunRequest, RunState, Stopped
from repro.runtime.interrupt import RunsInterrupted, checkpoint_epoch


def get_executor(name: str) -> Executor:
    # Imported on use: the slurm executor needs submitit, the local one does not.
    if name == "local":
        from repro.execution.local import run_local

        return run_local
    if name == "slurm":
        from repro.execution.slurm import run_slurm

        return run_slurm
    raise KeyError(f"executor '{name}' is not one of {', '.join(EXECUTORS)}")


@dataclass
class RunCounts:
    trained: int = 0  # trained by this command (in its processes, or by the Slurm jobs it submitted)
    reused: int = 0  # recorded before this command started
    by_other: int = 0  # recorded meanwhile by another process
    failed: int = 0  # failed, here or in the process that held it: the table's line names them beside the others

    def line(self) -> str:
        return (
            f"runs: {self.trained} trained here, {self.reused} reused, {self.by_other} trained by another process"
            + (f", {self.failed} failed" if self.failed else "")
        )


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

    def add(self, outcome: Outcome) -> None:
        """Book an executor's outcome for one run."""
        h = outcome.run_hash
        if outcome.state in (RunState.TRAINED, RunState.RECORDED):
            assert outcome.record is not None  # every executor gives a TRAINED or RECORDED outcome its record
            self.records[h] = outcome.record
            if outcome.state is RunState.TRAINED:
                self.counts.trained += 1
                self.trained.append(h)
            else:
                self.counts.by_other += 1
            return
        if outcome.state is RunState.SUBMITTED:
            assert outcome.job is not None  # and a SUBMITTED one its Slurm job
            self.submitted[h] = outcome.job
        if outcome.state is RunState.FAILED:
            self.counts.failed += 1
        self.errors[h] = outcome.error or f"not finished ({outcome.state.value})"


def pending_runs(requests: list[RunRequest], results_dir: Path) -> tuple[RunBatch, list[RunRequest]]:
    """Deduplicate by hash; the runs already recorded are booked as reused, those whose record is left alone
    (unreadable, or a newer version's) as errors, the others returned to do."""
    batch = RunBatch()
    todo: list[RunRequest] = []
    seen: set[str] = set()
    for r in requests:
        if r.cfg.hash in seen:
            continue
        seen.add(r.cfg.hash)
        try:
            record = load_record(results_dir, r.cfg)
        except LeftAlone as exc:
            batch.errors[r.cfg.hash] = str(exc)
            continue
        if record is None:
            todo.append(r)
        else:
            batch.records[r.cfg.hash] = record
            batch.counts.reused += 1
    return batch, todo


def interruption(results_dir: Path, requests: list[RunRequest], in_flight: list[RunRequest]) -> RunsInterrupted:
    """What an interrupt left, read from disk (a record may be written after its outcome was last booked):
    the runs with a record, the epoch each interrupted run resumes from, the runs not started."""
    unique = list({r.cfg.hash: r for r in requests}.values())
    recorded = {r.cfg.hash for r in unique if _recorded(results_dir, r)}
    stopped = [r for r in {r.cfg.hash: r for r in in_flight}.values() if r.cfg.hash not in recorded]
    for r in in_flight:
        if r.cfg.hash in recorded:  # stopped between its record and its checkpoint's removal
            checkpoint_path(results_dir, r.cfg).unlink(missing_ok=True)
    epochs = [checkpoint_epoch(checkpoint_path(results_dir, r.cfg)) for r in stopped]
    return RunsInterrupted(len(recorded), epochs, len(unique) - len(recorded) - len(stopped))


def _recorded(results_dir: Path, request: RunRequest) -> bool:
    try:
        return load_record(results_dir, request.cfg) is not None
    except LeftAlone:
        return False


def execute_runs(
    requests: list[RunRequest],
    results_dir: Path,
    device: str,
    data_dir: Path | None = None,
    jobs: int = 1,
    progress: Progress | None = None,
    options: ExecutorOptions | None = None,
    train: bool = True,
    settings: Settings = Settings(),
) -> RunBatch:
    """Run what has no record yet with the executor `options` names (repro.execution.options.ExecutorOptions;
    default: local); return the records and errors by hash, and the counts trained here, reused and
    trained by another process. On Ctrl-C or SIGTERM, raises RunsInterrupted saying what was kept.
    `train` False: the records there only; a run without one is an error, as a failed run is. `settings`: the
    command's, handed to whichever process trains each run."""
    options = options or ExecutorOptions()
    remove_stale_temporaries(results_dir, options.lock)
    batch, todo = pending_runs(requests, results_dir)
    if not train:
        for r in todo:
            batch.errors[r.cfg.hash] = "it has no run record, and a rebuild trains nothing"
    elif todo:
        work = ExecutionRequest(
            tuple(todo), results_dir, device, data_dir, jobs, options, progress, batch.counts.reused, settings
        )
        try:
            outcomes = get_executor(options.executor)(work)
        except Stopped as stop:
            raise interruption(results_dir, requests, stop.in_flight) from None
        for outcome in outcomes:
            batch.add(outcome)
    return batch
