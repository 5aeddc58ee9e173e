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

from repro.core.settings import Settings


class TorchrunUsageError(ValueError):
    """Options that do not fit the torchrun launch they run under."""


def relaunch(argv: list[str], gpus_per_run: int, settings: Settings) -> int | None:
    """Outside torchrun (the command's settings.launch) with gpus_per_run > 1: run `argv` (the command's
    arguments) under torchrun and return its exit status; else None (nothing to relaunch)."""
    if settings.launch.world_size != 1 or gpus_per_run <= 1:
        return None
    from repro.runtime.distributed import torchrun_command

    return subprocess.call(torchrun_command(argv, gpus_per_run))


@contextlib.contextmanager
def ranks(
    device: str,
    results_dir: Path,
    data_dir: Path | None,
    gpus_per_run: int = 1,
    executor: str = "local",
    settings: Settings = Settings(),
) -> Iterator[bool]:
    """Yield True in the process that leads (rank 0, or the only process); a rank > 0 trains the runs rank 0
    announces, then yields False. Raise TorchrunUsageError for options the launch (settings.launch, read where
    this rank's command started) cannot honour."""
    world_size = settings.launch.world_size
    if world_size == 1:
        yield True
        return
    from repro.core.devices import resolve_device
    from repro.runtime import distributed

    if gpus_per_run not in (1, world_size):
        raise TorchrunUsageError(
            f"--gpus-per-run {gpus_per_run} under torchrun with {world_size} processes: give one of them"
        )
    if executor != "local":
        raise TorchrunUsageError(
            f"under torchrun each run trains on the launched processes; --executor {executor} "
            "does not apply (use the local executor, or run torchrun inside the Slurm job)"
        )
    device = resolve_device(device)
    world = distributed.init(device, settings.launch)
    if not world.main:
        from repro.execution.records import follow_runs

        follow_runs(results_dir, device, data_dir, settings)
        distributed.finish()
        yield False
        return
    with distributed.leading():
        yield True
    distributed.finish()
