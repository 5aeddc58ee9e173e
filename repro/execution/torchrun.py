"""A command under torchrun: one run on N processes (repro.runtime.distributed).

Rank 0 leads: it runs the command (plans, schedules, records); every other rank trains the runs rank 0
announces with it (records.follow_runs) until rank 0 releases it. Outside torchrun, `--gpus-per-run N`
relaunches the same command under torchrun.
"""

from __future__ import annotations

import contextlib
import subprocess
from pathlib import Path
from typing import Iterator

from repro.core import environment


class TorchrunUsageError(ValueError):
    """Options that do not fit the torchrun launch they run under."""


def world_size() -> int:
    return environment.value("WORLD_SIZE")


def relaunch(argv: list[str], gpus_per_run: int) -> int | None:
    """Outside torchrun with gpus_per_run > 1: run `argv` (the command's arguments) under torchrun and return
    its exit status; else None (nothing to relaunch)."""
    if world_size() != 1 or gpus_per_run <= 1:
        return None
    from repro.runtime.distributed import torchrun_command

    return subprocess.call(torchrun_command(argv, gpus_per_run))


@contextlib.contextmanager
def ranks(device: str, results_dir: Path, data_dir: Path | None, gpus_per_run: int = 1,
          executor: str = "local") -> Iterator[bool]:
    """Yield True in the process that leads (rank 0, or the only process); a rank > 0 trains the runs rank 0
    announces, then yields False. Raise TorchrunUsageError for options the launch cannot honour."""
    if world_size() == 1:
        yield True
        return
    from repro.core.devices import resolve_device
    from repro.runtime import distributed

    if gpus_per_run not in (1, world_size()):
        raise TorchrunUsageError(f"--gpus-per-run {gpus_per_run} under torchrun with {world_size()} processes: "
                                 "give one of them")
    if executor != "local":
        raise TorchrunUsageError(f"under torchrun each run trains on the launched processes; --executor {executor} "
                                 "does not apply (use the local executor, or run torchrun inside the Slurm job)")
    device = resolve_device(device)
    world = distributed.init(device)
    if not world.main:
        from repro.execution.records import follow_runs

        follow_runs(results_dir, device, data_dir)
        distributed.finish()
        yield False
        return
    with distributed.leading():
        yield True
    distributed.finish()
