"""CIFAR-10 / CIFAR-100 (Krizhevsky, 2009) as uint8 tensors, through torchvision's classes.

torchvision checks the md5 of every batch file on each load, so a corrupted copy
fails here rather than training on it. Loading the pickles takes about a second,
so the result is not cached.
"""

from __future__ import annotations

from pathlib import Path

import torch
from torchvision.datasets import CIFAR10, CIFAR100

from repro.data.layout import DatasetMissing, data_root, how_to_fill, require, status

CLASSES = {"cifar10": CIFAR10, "cifar100": CIFAR100}


def cifar_tensors(name: str, root: str | Path | None, train: bool,
                  download: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """(images uint8 (N, 3, 32, 32), labels int64 (N,)) of one CIFAR split."""
    root = data_root(root)
    if download and not status(name, root).present:
        try:
            CLASSES[name](str(root), train=train, download=True)
        except Exception as e:  # offline, read-only root, interrupted transfer
            raise DatasetMissing(f"{status(name, root).message()} (download failed: {e})") from e
    require(name, root)
    try:
        ds = CLASSES[name](str(root), train=train, download=False)
    except RuntimeError as e:  # torchvision's md5 check
        raise DatasetMissing(f"{name}: files in {root / CLASSES[name].base_folder} fail torchvision's md5 check "
                             f"({e}); to replace them, {how_to_fill(name, root)}") from e
    images = torch.from_numpy(ds.data).permute(0, 3, 1, 2).contiguous()  # (N, H, W, C) -> (N, C, H, W)
    return images, torch.tensor(ds.targets, dtype=torch.int64)
