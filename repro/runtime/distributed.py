"""One run trained on N processes with DistributedDataParallel (issue 14.3).

Launch: `torchrun --nproc-per-node N -m repro run <id> ...`. Every rank runs the same
command; rank 0 alone schedules: it runs the table as a single process would (locks,
records, tables) and, before it trains a run, sends the run's config to the other
ranks (`announce_run`), which train it with it (repro.execution.records.follow_runs) and write nothing.

What is split, what is not:
  - The global batch is the recipe's (ImageNet: 256); each rank takes batch_size // N.
    Step i of an epoch uses the same samples as on one process: a rank takes the
    positions i*B + r, i*B + r + N, ... of the epoch's permutation (`shard_positions`),
    which every rank draws alike from (seed, epoch).
  - Gradients are averaged by DDP; since the local batches are equal, the mean of the
    local mean losses is the global mean loss.
  - Per rank, on its local batch: the MoE heads' auxiliary losses (balance, entropy) and
    capacity, and BatchNorm's batch statistics (no SyncBatchNorm). The paper gives the global
    batch (256) but not whether the capacity ceil(c B k / E) (Eq. 3) counts the global or the
    local batch; we take the local one, what a standard DDP implementation computes without
    extra communication: on 2 ranks each routes its 128 samples with C from B = 128 (half of
    one process's C for 256, over half the samples), so the capacity per sample is the same
    but which samples overflow is decided per half batch. The record says so
    (engine.per_local_batch). DDP copies rank 0's buffers (BatchNorm running statistics)
    to every rank before each step.
  - Random draws in the forward pass (dropout): rank 0 keeps the run's generator as on
    one process (and in the checkpoint); rank r > 0 reseeds from (seed, epoch, r) at
    every epoch, so a resumed run draws as an uninterrupted one.
  - Evaluation is sharded (rank r takes test images r, r + N, ...) and the sums of
    loss, correct and seen are all-reduced: every image counts once and an N-GPU run
    evaluates N times faster than on rank 0 alone.
  - Rank 0 writes checkpoints; the others wait at a barrier. Resume loads on every rank.

Between one process and N, the per-sample arithmetic is the same but sums are taken in
another order (the gradient's all-reduce adds per-rank partial sums; kernels see
batches of B / N), so results agree to float rounding (tests/execution/test_distributed.py measures it).
"""

from __future__ import annotations

import datetime as dt
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist
from torch import nn

from repro.core.settings import Launch

_control: Any = None  # the gloo group of control messages (objects, barriers)
_local_rank = 0  # this rank's GPU on its node, from the launch `init` joined with


class WorldBroken(BaseException):
    """A rank failed inside a distributed run: the others are left in a collective, so the command ends
    (torchrun then stops every rank). A BaseException, so that no per-run `except Exception` goes on."""


@dataclass(frozen=True)
class World:
    rank: int = 0
    size: int = 1
    local_rank: int = 0
    backend: str | None = None

    @property
    def main(self) -> bool:
        return self.rank == 0

    @property
    def distributed(self) -> bool:
        return self.size > 1

    def describe(self, batch_size: int) -> dict[str, Any]:
        """For the run record's engine: N, the local batch, and what each rank computes on its own batch."""
        if not self.distributed:
            return {"world_size": 1}
        return {
            "world_size": self.size,
            "backend": self.backend,
            "local_batch_size": batch_size // self.size,
            "per_local_batch": "MoE auxiliary losses and capacity, BatchNorm batch statistics",
        }


def current() -> World:
    if not (dist.is_available() and dist.is_initialized()):
        return World()
    return World(dist.get_rank(), dist.get_world_size(), _local_rank, dist.get_backend())


def init(device: str, launch: Launch) -> World:
    """Join torchrun's process group (nccl on CUDA, gloo on a CPU) once, as the `launch` this process's command
    read where it started (torchrun's WORLD_SIZE, LOCAL_RANK); a single process stays World()."""
    global _control, _local_rank
    if launch.world_size <= 1:
        return World()
    _local_rank = launch.local_rank
    if not dist.is_initialized():
        cuda = device.startswith("cuda")
        if cuda:
            torch.cuda.set_device(launch.local_rank)
        dist.init_process_group("nccl" if cuda else "gloo")
    if _control is None:
        # Followers wait for rank 0's next run while it does the rest of a table (FLOP counts,
        # latency, waiting for another process's lock): their control channel waits long.
        _control = dist.new_group(backend="gloo", timeout=dt.timedelta(seconds=launch.control_timeout_s))
    return current()


def torchrun_command(args: list[str], n: int) -> list[str]:
    """`repro <args>` (without --gpus-per-run) on n ranks of this host, as `--gpus-per-run n` runs it."""
    import sys

    kept, skip = [], False
    for a in args:
        if skip or a.startswith("--gpus-per-run="):
            skip = False
            continue
        skip = a == "--gpus-per-run"
        if not skip:
            kept.append(a)
    return [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        f"--nproc-per-node={n}",
        "-m",
        "repro",
        *kept,
    ]


def finish() -> None:
    """Leave the process group once every rank is done (after `stop_followers`)."""
    global _control
    dist.destroy_process_group()
    _control = None


def rank_device(device: str, world: World) -> str:
    """Rank r trains on GPU LOCAL_RANK; a CPU stays the CPU."""
    return f"cuda:{world.local_rank}" if device.startswith("cuda") and world.distributed else device


def local_batch(batch_size: int, world: World) -> int:
    if batch_size % world.size:
        raise ValueError(
            f"batch_size {batch_size} does not split over {world.size} processes; the global batch "
            f"must be a multiple of the world size"
        )
    return batch_size // world.size


def shard_positions(n: int, rank: int, size: int, even: bool) -> torch.Tensor:
    """Rank `rank`'s positions in a list of n: r, r + size, ... With `even`, the last n % size are left out so
    that every rank has as many (equal local batches; with batch b, the union of step i's local batches is
    positions [i * b * size, (i + 1) * b * size), one process's step i)."""
    end = n - n % size if even else n
    return torch.arange(rank, end, size)


def broadcast(obj: Any = None) -> Any:
    """Rank 0's `obj` on every rank."""
    box = [obj]
    dist.broadcast_object_list(box, src=0, group=_control)
    return box[0]


def barrier() -> None:
    dist.barrier(group=_control)


def all_sum(*tensors: torch.Tensor) -> None:
    """Sum each tensor over the ranks, in place."""
    for t in tensors:
        dist.all_reduce(t, op=dist.ReduceOp.SUM)


def sync_buffers(model: nn.Module) -> None:
    """Rank 0's buffers (BatchNorm running statistics) on every rank, as DDP does before each training step."""
    for buf in model.buffers():
        dist.broadcast(buf, src=0)


def wrap(model: nn.Module, world: World, device: torch.device, routed: bool) -> nn.Module:
    """DDP around `model` (which keeps its parameters: checkpoints name them as on one process).
    Routed heads leave experts without gradient in some steps: DDP must look for unused parameters."""
    from torch.nn.parallel import DistributedDataParallel

    ids = [device.index] if device.type == "cuda" else None
    return DistributedDataParallel(model, device_ids=ids, find_unused_parameters=routed)


def rank_seed(seed: int, epoch: int, rank: int) -> int:
    return (seed * 1_000_003 + epoch) * 1_009 + rank


def announce_run(run: Any) -> None:
    """Rank 0: the other ranks are to train `run` (its config and data options) with it now."""
    broadcast(("train", run))


def stop_followers() -> None:
    """Rank 0: no more runs; the other ranks' commands return."""
    broadcast(("stop", None))


@contextmanager
def leading():
    """Rank 0's command: on its way out, release the other ranks, unless a run broke the world (then
    they are inside a collective and torchrun ends them)."""
    try:
        yield
    except (WorldBroken, KeyboardInterrupt):
        raise
    except BaseException:
        stop_followers()
        raise
    else:
        stop_followers()
