"""How a run reads its data: options of the command that trains it, not of the run itself.

They change nothing a run computes (a file that failed its checksum is either refused or read as it is;
loader processes only change speed), so they are not in the run's hash. They travel with each run's
request (repro.execution.protocol.RunRequest) to whichever process trains it: a local worker, a Slurm
task, every torchrun rank.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DataOptions:
    allow_unverified: bool = False  # train on dataset files that failed their checksums (--allow-unverified-data)
    workers: int | None = None  # image-folder loader processes per split (--workers); None: the loader's choice
