"""What every measurer gets and returns: a table's frozen plan and a frozen `Context` in, a `Measurement` out.

The plan (repro.plan.table_plan.TablePlan) says what to measure: the runs, the rows counted and timed, at which
settings. The context says how and where: the results folder, the device, the executor. A measurer plans
nothing and writes nothing into either: what it measured (metrics, the runs it counted, the runs it
submitted and did not await) comes back in its Measurement, and the pipeline combines them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Mapping

from repro.core.progress import Progress
from repro.core.settings import Settings
from repro.execution.options import ExecutorOptions
from repro.plan.table_plan import TablePlan
from repro.results.measurements import Measured

if TYPE_CHECKING:
    from repro.execution.runs import RunCounts


@dataclass(frozen=True)
class Context:
    """How a table's plan is being measured: where, on what, by whom."""

    profile_name: str
    results_dir: Path
    device: str = "cpu"
    jobs: int = 1
    data_dir: Path | None = None
    progress: Progress | None = None
    executor: ExecutorOptions | None = None  # who trains the runs; None: the local executor
    allow_unverified_data: bool = False  # train on datasets that failed their checksums (--allow-unverified-data)
    workers: int | None = None  # image-folder loader processes per split (--workers); None: the loader's choice
    remeasure_latency: bool = False  # time latency rows again rather than reuse this device's kept measurements
    train: bool = True  # False: a rebuild (repro.pipeline.rebuild_result) reads the run records there, trains none
    settings: Settings = Settings()  # the command's: its cache and weights folders, and how each run executes


@dataclass(frozen=True)
class Measurement:
    """What one measurer measured for one table."""

    measured: Measured
    runs: RunCounts | None = None  # the table's runs: trained here, reused, trained by another process
    submitted: Mapping[str, str] = field(default_factory=dict)  # run hash -> Slurm job (123_4), not awaited


Measurer = Callable[[TablePlan, Context], Measurement]
