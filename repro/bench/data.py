"""`repro bench data`: images per second of the training data path alone, no model.

Compares, in one run, the usual way of writing a CIFAR training loader (a
torchvision-style dataset of PIL images, DataLoader, and per-image RandomCrop(32,
padding=4), RandomHorizontalFlip, ToTensor, Normalize) with TensorLoader's
in-memory, batch-wise path. Rounds alternate between the contenders so that
machine noise falls on all of them; each reports its median round. Both sides
read the same synthetic CIFAR-10-shaped images (no download needed) and end with
normalised float batches on `device`.
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path
from typing import Callable, Iterable

import numpy as np
import torch
from PIL import Image
from torch.utils.data import DataLoader, Dataset
from torchvision import transforms

from repro.core.settings import DEFAULT_CACHE
from repro.measure.timing import synchronize
from repro.data.loader import TensorLoader
from repro.data.specs import get_dataset
from repro.data.synthetic import synthetic_tensors


class PILImages(Dataset):
    """torchvision's CIFAR10.__getitem__ over arrays held in memory: HWC uint8 -> PIL -> transform."""

    def __init__(self, data: np.ndarray, targets: list[int], transform: Callable) -> None:
        self.data, self.targets, self.transform = data, targets, transform

    def __len__(self) -> int:
        return len(self.data)

    def __getitem__(self, index: int):
        return self.transform(Image.fromarray(self.data[index])), self.targets[index]


def usual_transform(mean: tuple[float, ...], std: tuple[float, ...]) -> transforms.Compose:
    return transforms.Compose(
        [
            transforms.RandomCrop(32, padding=4),
            transforms.RandomHorizontalFlip(),
            transforms.ToTensor(),
            transforms.Normalize(mean, std),
        ]
    )


def _epoch_seconds(batches: Iterable, device: torch.device) -> tuple[float, int]:
    start, seen = time.perf_counter(), 0
    for x, y in batches:
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        seen += len(y)
    synchronize(device)
    return time.perf_counter() - start, seen


def bench_data(
    n_images: int = 10_000,
    batch_size: int = 256,
    device: str = "cpu",
    repeats: int = 3,
    workers: tuple[int, ...] = (0, 2),
    seed: int = 0,
    cache: Path = DEFAULT_CACHE,
) -> dict:
    """Images/s of each data path and TensorLoader's speed-up over each DataLoader setting (the synthetic images
    kept in the cache folder `cache`)."""
    dev = torch.device(device)
    spec = get_dataset("cifar10")
    images, labels = synthetic_tensors("cifar10", n_images, seed, cache=cache)  # (N, 3, 32, 32) uint8
    hwc = images.permute(0, 2, 3, 1).contiguous().numpy()  # (N, 32, 32, 3): CIFAR10.data's layout
    dataset = PILImages(hwc, labels.tolist(), usual_transform(spec.mean, spec.std))
    paths: dict[str, Iterable] = {
        f"dataloader_workers{w}": DataLoader(
            dataset,
            batch_size=batch_size,
            shuffle=True,
            num_workers=w,
            drop_last=True,
            persistent_workers=w > 0,
            pin_memory=dev.type == "cuda",
        )
        for w in workers
    }
    paths["tensor_loader"] = TensorLoader.for_dataset(
        "cifar10", images, labels, batch_size, train=True, seed=seed, device=dev
    )
    for batches in paths.values():  # warm-up: worker start-up, allocator, caches
        _epoch_seconds(batches, dev)
    rates: dict[str, list[float]] = {name: [] for name in paths}
    for r in range(repeats):
        names = list(paths)
        for name in names[r % len(names) :] + names[: r % len(names)]:  # rotate who goes first
            seconds, seen = _epoch_seconds(paths[name], dev)
            rates[name].append(seen / seconds)
    median = {name: statistics.median(v) for name, v in rates.items()}
    ours = median["tensor_loader"]
    return {
        "n_images": n_images,
        "batch_size": batch_size,
        "device": str(dev),
        "repeats": repeats,
        "torch_threads": torch.get_num_threads(),
        "images_per_s": median,
        "rounds": rates,
        "speedup": {name: ours / rate for name, rate in median.items() if name != "tensor_loader"},
    }
