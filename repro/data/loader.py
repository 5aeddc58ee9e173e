"""Batches from in-memory uint8 tensors held on the training device (after airbench's loader).

The whole split sits on the device as uint8; each batch is picked, augmented
(train only) and normalised there, so no worker processes or per-image Python run.
Shuffling and augmentation for epoch e come from a generator seeded by (seed, e):
`set_epoch(e)` replays epoch e exactly, which is what a resumed run needs.
Legend: N images, B batch, C channels, H height, W width.
"""

from __future__ import annotations

from typing import Iterator

import torch
import torch.nn.functional as F

from repro.data.augment import crop_flip, crop_padding, draw_crop_flip, normalize
from repro.data.specs import get_dataset
from repro.core.devices import cpu_threads
from repro.runtime.distributed import shard_positions


def one_thread(device: torch.device):
    """CPU batch preparation on one intra-op thread: its ops are small and memory-bound, and on a busy
    machine a split op waits for a descheduled peer thread (docs/measurements.md)."""
    return cpu_threads(device, 1)


def epoch_generator(seed: int, epoch: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed * 1_000_003 + epoch)


def subset_indices(labels: torch.Tensor, n: int, seed: int = 0, stratified: bool = True) -> torch.Tensor:
    """The first n positions after a seeded shuffle; with `stratified`, classes take turns
    (every class gets n / classes positions, up to what it has)."""
    m = len(labels)
    order = torch.randperm(m, generator=torch.Generator().manual_seed(seed))
    if stratified:
        shuffled = labels[order]
        by_class = torch.argsort(shuffled, stable=True)  # shuffled positions, grouped by class
        counts = torch.bincount(shuffled)
        starts = torch.cumsum(counts, 0) - counts
        turn = torch.empty_like(by_class)
        turn[by_class] = torch.arange(m) - starts.repeat_interleave(counts)  # rank within its class
        order = order[torch.argsort(turn * m + torch.arange(m))]
    return order[:n]


def subset(
    images: torch.Tensor, labels: torch.Tensor, n: int | None, seed: int = 0, stratified: bool = True
) -> tuple[torch.Tensor, torch.Tensor]:
    """A seeded (by default class-stratified) subset of n images; n=None keeps everything."""
    if n is None or n >= len(labels):
        return images, labels
    keep = subset_indices(labels, n, seed, stratified)
    return images[keep], labels[keep]


class TensorLoader:
    """Iterable of (x (B, C, H, W) float32, or `dtype`, y int64 (B,)) batches on `device`.

    Train batches are shuffled, randomly cropped (zero padding P, default H / 8) and
    flipped; test batches keep the data's order, are not augmented, and cover every
    image. Train drops a last partial batch, unless that would leave no batch.

    `shard=(r, N)`: rank r of N data-parallel processes (repro.runtime.distributed), `batch_size` the
    local batch. Every rank draws the same epoch permutation and crops; rank r takes positions
    r, r + N, ... of it (train: all ranks as many), so step i's N local batches together are
    one process's step i with batch N * batch_size.
    """

    def __init__(
        self,
        images: torch.Tensor,
        labels: torch.Tensor,
        batch_size: int,
        *,
        train: bool,
        mean: tuple[float, ...],
        std: tuple[float, ...],
        padding: int | None = None,
        flip: bool = True,
        seed: int = 0,
        device: str | torch.device | None = None,
        drop_last: bool | None = None,
        channels_last: bool = False,
        dtype: torch.dtype = torch.float32,
        shard: tuple[int, int] = (0, 1),
    ) -> None:
        if images.dtype != torch.uint8 or images.ndim != 4 or len(images) != len(labels):
            raise ValueError(
                f"expected uint8 images (N, C, H, W) and N labels, got {images.dtype} "
                f"{tuple(images.shape)} and {tuple(labels.shape)}"
            )
        device = torch.device(device) if device is not None else images.device
        self.images = images.to(device)  # (N, C, H, W) uint8, moved once; batches never leave the device
        self.labels = labels.to(device=device, dtype=torch.int64)
        self.batch_size, self.train, self.mean, self.std = batch_size, train, tuple(mean), tuple(std)
        self.padding = crop_padding(images.shape[-1]) if padding is None else padding
        self.flip, self.seed, self.channels_last, self.dtype = flip, seed, channels_last, dtype
        self.drop_last = train if drop_last is None else drop_last
        self.rank, self.world = shard
        self.epoch = 0

    @classmethod
    def for_dataset(
        cls, name: str, images: torch.Tensor, labels: torch.Tensor, batch_size: int, *, train: bool, **kwargs
    ) -> "TensorLoader":
        """A loader normalising with the dataset's own mean and std."""
        spec = get_dataset(name)
        return cls(images, labels, batch_size, train=train, mean=spec.mean, std=spec.std, **kwargs)

    @property
    def device(self) -> torch.device:
        return self.images.device

    @property
    def pipeline(self) -> str:
        """Which input path made the batches, for the run record: e.g. "tensor_cuda"."""
        return f"tensor_{self.device.type}"

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        n = len(self.labels)
        if self.world > 1:
            return -(-len(self._positions()) // self.batch_size)
        if self.drop_last and n >= self.batch_size:
            return n // self.batch_size
        return -(-n // self.batch_size)

    def _positions(self) -> torch.Tensor:
        """This rank's positions in the epoch's order (all N when not sharded)."""
        n, total = len(self.labels), self.batch_size * self.world  # total: the global batch
        if self.train and self.drop_last and n >= total:
            n = n // total * total
        return shard_positions(n, self.rank, self.world, even=self.train)

    def __iter__(self) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        n, size = len(self.labels), (self.images.shape[-2], self.images.shape[-1])
        if not self.train and self.world > 1:
            keep = self._positions().to(self.device)
            for start in range(0, len(keep), self.batch_size):
                idx = keep[start : start + self.batch_size]
                with one_thread(self.device):
                    x = normalize(self.images.index_select(0, idx), self.mean, self.std, self.channels_last, self.dtype)
                yield x, self.labels.index_select(0, idx)
            return
        if not self.train:
            for start in range(0, n, self.batch_size):
                with one_thread(self.device):
                    x = normalize(
                        self.images[start : start + self.batch_size],
                        self.mean,
                        self.std,
                        self.channels_last,
                        self.dtype,
                    )
                yield x, self.labels[start : start + self.batch_size]
            return
        g = epoch_generator(self.seed, self.epoch)
        self.epoch += 1  # a loop that never calls set_epoch still sees a new order each epoch
        order = torch.randperm(n, generator=g).to(self.device)
        draws = draw_crop_flip(n, self.padding, g, self.flip)  # (N,) each, for the whole epoch
        dy, dx, flips = (t.to(self.device) for t in draws)
        mine = self._positions().to(self.device) if self.world > 1 else None
        for i in range(len(self)):
            cut: slice | torch.Tensor = slice(i * self.batch_size, (i + 1) * self.batch_size)
            if mine is not None:
                cut = mine[cut]  # (B,) positions in the epoch's order
            idx = order[cut]
            with one_thread(self.device):
                x = self.images.index_select(0, idx)  # (B, C, H, W) uint8
                if self.padding:
                    x = F.pad(x, (self.padding,) * 4)  # (B, C, H + 2P, W + 2P)
                x = crop_flip(x, size, dy[cut], dx[cut], flips[cut])
                x = normalize(x, self.mean, self.std, self.channels_last, self.dtype)
            yield x, self.labels.index_select(0, idx)
