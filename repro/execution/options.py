"""How runs are executed: the options of the executors, as data, and parsed from their command-line text.

Torch-free (the CLI imports it for `repro --help`); the Typer option set that fills them is
repro.cli.execution.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from repro.core.settings import Settings
from repro.data.read_options import DataOptions
from repro.runtime.locks import DEFAULT_STALE_AFTER_S, LockSettings, stale_after_problem
from repro.spec.profiles import RunDefaults

EXECUTORS = ("local", "slurm")


@dataclass(frozen=True)
class SlurmOptions:
    partition: str | None = None
    gpus_per_task: int | None = None
    cpus_per_task: int | None = None
    time_min: int = 240  # a task's time limit; longer runs resume after the requeue
    max_parallel: int = 256  # array tasks running at once
    account: str | None = None
    runs_per_task: int = 1  # runs trained one after another in one array task
    params: dict[str, str] = field(default_factory=dict)  # any other submitit/sbatch parameter
    folder: str | None = None  # submitit's logs and pickles; default <results>/slurm


@dataclass(frozen=True)
class ExecutorOptions:
    executor: str = "local"
    runs_per_gpu: int = 1
    no_wait: bool = False
    stale_after_s: float = DEFAULT_STALE_AFTER_S
    slurm: SlurmOptions = field(default_factory=SlurmOptions)
    gpus_per_run: int = 1  # >1: the command relaunches itself under torchrun (repro.runtime.distributed)

    def __post_init__(self) -> None:
        if self.executor not in EXECUTORS:
            raise ValueError(f"executor '{self.executor}' is not one of {', '.join(EXECUTORS)}")
        if self.runs_per_gpu < 1:
            raise ValueError(f"runs_per_gpu must be at least 1, got {self.runs_per_gpu}")
        if self.gpus_per_run < 1:
            raise ValueError(f"gpus_per_run must be at least 1, got {self.gpus_per_run}")
        if problem := stale_after_problem(self.stale_after_s):
            raise ValueError(problem)

    @property
    def lock(self) -> LockSettings:
        return LockSettings(self.stale_after_s)


@dataclass(frozen=True)
class TableOptions:
    """What a table command (`repro run`, `repro <id>`, `repro verify-all`) was asked, as one typed value: the
    command line fills it once (repro.cli.run), and the pipeline hands its parts to each run's request."""

    profile: str
    results_dir: Path
    device: str = "auto"  # auto, cpu, cuda, cuda:N
    jobs: int = 0  # concurrent runs; 0: as many as the cores hold on a CPU, 1 on a GPU
    data_dir: Path | None = None
    manifests_dir: Path | None = None
    profiles_file: Path | None = None
    readings_file: Path | None = None  # a file of readings of one's own, added to the shipped ones
    data: DataOptions = DataOptions()
    defaults: RunDefaults = RunDefaults()  # threads and deterministic mode where a profile gives neither
    executor: ExecutorOptions = field(default_factory=ExecutorOptions)
    verbose: bool = False
    strict: bool = False  # exit 1 when a claim the profile and device could decide did not reproduce
    remeasure_latency: bool = False  # time latency rows again rather than reuse this device's kept measurements
    settings: Settings = Settings()  # the command's environment, read once where it started (repro.core.settings)


def parse_slurm_time(text: str) -> int:
    """Slurm's time formats (MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS) -> whole minutes, rounded up."""
    m = re.fullmatch(r"(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?", text.strip())
    if not m:
        raise ValueError(f"--slurm-time '{text}' is not a Slurm time (MM, HH:MM:SS or D-HH:MM:SS)")
    days, a, b, c = m.groups()
    if days is not None:  # D-HH[:MM[:SS]]
        seconds = int(days) * 86400 + int(a) * 3600 + int(b or 0) * 60 + int(c or 0)
    elif c is not None:  # HH:MM:SS
        seconds = int(a) * 3600 + int(b) * 60 + int(c)
    elif b is not None:  # MM:SS
        seconds = int(a) * 60 + int(b)
    else:  # MM
        seconds = int(a) * 60
    return max(1, -(-seconds // 60))


def parse_params(items: list[str]) -> dict[str, str]:
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--slurm-param '{item}' is not key=value (e.g. --slurm-param qos=high)")
        out[key.strip().replace("-", "_")] = value.strip()
    return out


def options_from_cli(
    executor_name: str = "local",
    runs_per_gpu: int = 1,
    no_wait: bool = False,
    stale_lock_after: float = DEFAULT_STALE_AFTER_S,
    slurm_partition: str | None = None,
    slurm_gpus_per_task: int | None = None,
    slurm_cpus_per_task: int | None = None,
    slurm_time: str = "4:00:00",
    slurm_max_parallel: int = 256,
    slurm_account: str | None = None,
    slurm_runs_per_task: int = 1,
    slurm_param: list[str] | None = None,
    gpus_per_run: int = 1,
) -> ExecutorOptions:
    slurm = SlurmOptions(
        partition=slurm_partition,
        gpus_per_task=slurm_gpus_per_task,
        cpus_per_task=slurm_cpus_per_task,
        time_min=parse_slurm_time(slurm_time),
        max_parallel=slurm_max_parallel,
        account=slurm_account,
        runs_per_task=slurm_runs_per_task,
        params=parse_params(slurm_param or []),
    )
    return ExecutorOptions(executor_name, runs_per_gpu, no_wait, stale_lock_after, slurm, gpus_per_run)
