"""What every measurer gets and returns: the run context in, `repro.results.Measured` out."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from repro.manifest import Manifest
from repro.profiles import Profile
from repro.results import Measured


@dataclass
class Context:
    """How a manifest is being run."""

    profile_name: str
    profile: Profile
    results_dir: Path
    device: str = "cpu"
    jobs: int = 1
    data_dir: Path | None = None
    progress: Any = None  # a rich Progress, or None
    executor: Any = None  # repro.execution.options.ExecutorOptions: who trains the runs; None: local
    run_counts: Any = None  # repro.execution.runs.RunCounts of this table's runs, set by the accuracy measurer
    submitted: dict[str, str] = field(default_factory=dict)  # run hash -> Slurm job (123_4), not awaited (--no-wait)
    train: bool = True  # False: a rebuild (repro.pipeline.rebuild_result) reads the run records there, trains none

    @property
    def paper_scale(self) -> bool:
        return self.profile.evidence == "paper"


Measurer = Callable[[Manifest, Context], Measured]
