"""The data one run trains and is tested on: in-memory tensors (digits, synthetic, CIFAR-style) behind a
TensorLoader, or image folders (ImageNet-style) behind their loaders, sharded over the ranks of a process group.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator, Protocol

import torch
import torch.nn.functional as F

from repro.core.settings import Settings
from repro.data.read_options import DataOptions
from repro.data.specs import get_dataset
from repro.plan.run_config import RunConfig
from repro.runtime import distributed


class EpochBatches(Protocol):
    """The training batches: len() of them per epoch, and set_epoch(e) replays epoch e's order (a resume)."""

    def __iter__(self) -> Iterator[tuple[torch.Tensor, torch.Tensor]]: ...
    def __len__(self) -> int: ...
    def set_epoch(self, epoch: int) -> None: ...


@dataclass
class RunData:
    train: EpochBatches
    test: Iterable
    source: str  # what was loaded, for the record
    classes: int | None = None  # distinct labels trained on (None: the dataset's); chance is 1 / classes


def _resize(images: torch.Tensor, size: int) -> torch.Tensor:
    if images.shape[-1] == size:
        return images
    x = F.interpolate(images.float(), size=(size, size), mode="bilinear", antialias=True, align_corners=False)
    return x.round().clamp(0, 255).to(torch.uint8)


def make_data(
    cfg: RunConfig,
    device: torch.device,
    data_dir: Path | None,
    channels_last: bool = False,
    world: distributed.World = distributed.World(),
    options: DataOptions = DataOptions(),
    settings: Settings = Settings(),
) -> RunData:
    """The run's loaders; on N processes, rank r's shard of every epoch in batches of batch_size // N. From the
    command's `settings`: the cache folder, where a decoded dataset is kept (repro.data.tensors), and the ranks
    on this host, which share its CPUs for loader processes."""
    cache = settings.cache
    from repro.data import digits, loader, synthetic, tensors

    spec = get_dataset(cfg.dataset)
    batch, shard = distributed.local_batch(cfg.batch_size, world), (world.rank, world.size)
    flip = True
    if cfg.data == "digits":
        xtr, ytr = digits.digits_tensors(cfg.dataset, cfg.train_samples, cfg.image_size, "train")
        xte, yte = digits.digits_tensors(cfg.dataset, cfg.test_samples, cfg.image_size, "test")
        flip = False  # a mirrored digit is not a digit
        source = (
            f"real handwritten digits (scikit-learn) standing in for {spec.title}: {spec.num_classes} classes of "
            f"{digits.digits_per_image(spec.num_classes)}-digit numbers, {len(ytr)} train / {len(yte)} test "
            f"images at {cfg.image_size}px from disjoint scans"
        )
    elif cfg.data == "synthetic":
        n_train, n_test = cfg.train_samples or 2048, cfg.test_samples or 512
        # The data set is fixed (seed 0) like a real one; the run seed sets init and order.
        xtr, ytr = synthetic.synthetic_tensors(cfg.dataset, n_train, 0, cfg.image_size, "train", cache)
        xte, yte = synthetic.synthetic_tensors(cfg.dataset, n_test, 0, cfg.image_size, "test", cache)
        source = f"synthetic {spec.title}-shaped data: {n_train} train / {n_test} test images at {cfg.image_size}px"
    elif get_dataset(cfg.dataset).in_memory:
        allow = options.allow_unverified
        xtr, ytr = tensors.load_tensors(cfg.dataset, data_dir, "train", cache=cache, allow_unverified=allow)
        xte, yte = tensors.load_tensors(cfg.dataset, data_dir, "test", cache=cache, allow_unverified=allow)
        xtr, ytr = loader.subset(xtr, ytr, cfg.train_samples)
        xte, yte = loader.subset(xte, yte, cfg.test_samples)
        xtr, xte = _resize(xtr, cfg.image_size), _resize(xte, cfg.image_size)
        source = f"{spec.title}: {len(ytr)} train / {len(yte)} test images from {data_dir or 'the data root'}"
    else:
        from repro.data import imagenet

        train_folders, test_folders = imagenet.image_folder_loaders(
            cfg.dataset,
            data_dir,
            batch,
            cfg.image_size,
            seed=cfg.seed,
            train_samples=cfg.train_samples,
            test_samples=cfg.test_samples,
            device=device,
            channels_last=channels_last,
            shard=shard,
            workers=options.workers
            if options.workers is not None
            else imagenet.default_workers(settings.launch.local_world_size),
        )
        return RunData(
            train_folders,
            test_folders,
            f"{spec.title} image folders under {data_dir or 'the data root'}",
            len(train_folders.dataset.classes),
        )
    train = loader.TensorLoader.for_dataset(
        cfg.dataset,
        xtr,
        ytr,
        batch,
        train=True,
        seed=cfg.seed,
        device=device,
        channels_last=channels_last,
        flip=flip,
        shard=shard,
    )
    test = loader.TensorLoader.for_dataset(
        cfg.dataset, xte, yte, batch, train=False, device=device, channels_last=channels_last, shard=shard
    )
    return RunData(train, test, source, int(ytr.unique().numel()))
