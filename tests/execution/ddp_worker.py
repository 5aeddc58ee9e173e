"""One rank of a gloo process group on this CPU, for tests/execution/test_distributed.py (spawned, so importable)."""

import json
import os
import socket
from pathlib import Path

import torch


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Stop(Exception):
    """Raised after an epoch on every rank: a run stopped between epochs, to be resumed."""


def rank_main(rank: int, world: int, port: int, cfg, checkpoint: str, out: str, stop_after: int = 0) -> None:
    """Train `cfg` as rank `rank` of `world`; rank 0 writes the result (or the epoch it stopped at) to `out`."""
    os.environ.update(
        MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank)
    )
    torch.set_num_threads(1)
    from repro.core.settings import Launch, Settings
    from repro.runtime import distributed
    from repro.train.loop import train_run

    # This process starts here, as a torchrun rank would: its launch, and a checkpoint after every epoch.
    settings = Settings(
        checkpoint_seconds=0.0, launch=Launch(world_size=world, local_rank=rank, local_world_size=world)
    )
    distributed.init("cpu", settings.launch)

    def stop(epoch: int, epochs: int, entry: dict) -> None:
        if epoch == stop_after:
            raise Stop

    try:
        result = train_run(
            cfg, torch.device("cpu"), None, Path(checkpoint), stop if stop_after else None, settings=settings
        )
    except distributed.WorldBroken as exc:
        if not isinstance(exc.__cause__, Stop):
            raise
        result = {"stopped_after": stop_after}
    if rank == 0:
        Path(out).write_text(json.dumps(result))
    torch.distributed.destroy_process_group()
