"""What an executor is given and what it gives back: one typed request, one typed outcome per run.

Every executor (repro.execution.local, repro.execution.slurm) is an `Executor`: it takes an
ExecutionRequest (the runs that have no record yet, where and how to train them) and returns
one Outcome per run, whose `state` is a RunState. The same states describe what the files of a
run say about it (repro.execution.files.probe), what `repro status` shows, and what one try
at a run came to (repro.execution.records.attempt_run). Torch-free.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from repro.core.progress import Progress
from repro.core.settings import Settings
from repro.data.read_options import DataOptions
from repro.execution.options import ExecutorOptions
from repro.plan.run_config import RunConfig


@dataclass(frozen=True)
class RunRequest:
    cfg: RunConfig
    label: str  # e.g. "table1/std_h128_moe seed 0", for progress and errors
    data: DataOptions = DataOptions()  # how it reads its data (not part of its hash)


class RunState(enum.Enum):
    TRAINED = "trained"  # trained by this command (in its processes, or by the Slurm jobs it submitted)
    RECORDED = "recorded"  # its record is there: written before, or by another process
    HELD = "held"  # another live process holds its lock
    FAILED = "failed"  # it failed (here, or in the process that held it)
    FREE = "free"  # none of these: nobody trains it, it may be tried here
    SUBMITTED = "submitted"  # handed to Slurm and not awaited (--no-wait)


@dataclass(frozen=True)
class Outcome:
    run_hash: str
    state: RunState
    record: dict[str, Any] | None = None  # TRAINED, RECORDED
    error: str | None = None  # FAILED; why it is not finished, for HELD or SUBMITTED runs not awaited
    holder: dict[str, Any] | None = None  # the lock's holder (HELD), or who wrote the failure (FAILED)
    job: str | None = None  # the Slurm job (123_4) that trains it, when one does


@dataclass(frozen=True)
class ExecutionRequest:
    runs: tuple[RunRequest, ...]  # distinct runs, none recorded when the request was made
    results_dir: Path
    device: str
    data_dir: Path | None = None
    jobs: int = 1  # concurrent runs on a CPU (the local executor)
    options: ExecutorOptions = field(default_factory=ExecutorOptions)
    progress: Progress | None = None
    reused: int = 0  # runs of the same table already recorded, for the progress line
    settings: Settings = Settings()  # the command's: how each run executes, its caches, this process's launch


class Executor(Protocol):
    def __call__(self, request: ExecutionRequest, /) -> list[Outcome]:
        """Train `request.runs` (each through records.attempt_run) and return one Outcome per run, none HELD
        or FREE unless `no_wait`. On Ctrl-C or SIGTERM, stop within seconds and raise Stopped."""


class Stopped(KeyboardInterrupt):
    """An executor stopped on Ctrl-C or SIGTERM; `in_flight`: the runs it was training (their workers stopped).
    The scheduler says what was kept from the files on disk (repro.execution.runs.interruption)."""

    def __init__(self, in_flight: list[RunRequest]) -> None:
        super().__init__("stopped")
        self.in_flight = in_flight
