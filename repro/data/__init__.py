"""Datasets: what each one is (specs), where it lives (layout), how to load it, and synthetic stand-ins.

Real data: `load_tensors` (CIFAR, Tiny-ImageNet: whole splits as uint8 tensors),
`image_folder_loaders` / `image_folder_loader` (streamed ImageFolder trees).
Batches: `TensorLoader` (in-memory, batch-wise augmentation on the device).
Smoke profile: `synthetic_tensors`. Expected folders: see repro.data.layout.

Names are imported from their modules on first use, so `repro.data.specs`
(torch-free) can be read without importing torch.
"""

from __future__ import annotations

import importlib
from typing import Any

_HOME = {
    "crop_padding": "augment",
    "normalize": "augment",
    "random_crop_flip": "augment",
    "FolderLoader": "imagenet",
    "image_folder": "imagenet",
    "image_folder_loader": "imagenet",
    "image_folder_loaders": "imagenet",
    "imagenet_loader": "imagenet",
    "DatasetMissing": "layout",
    "DatasetStatus": "layout",
    "data_root": "specs",
    "data_status": "layout",
    "dataset_dir": "layout",
    "require": "layout",
    "TensorLoader": "loader",
    "subset": "loader",
    "DATASETS": "specs",
    "DatasetSpec": "specs",
    "get_dataset": "specs",
    "synthetic_tensors": "synthetic",
    "load_tensors": "tensors",
}


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module 'repro.data' has no attribute {name!r}")
    return getattr(importlib.import_module(f"repro.data.{_HOME[name]}"), name)


def __dir__() -> list[str]:
    return sorted([*globals(), *_HOME])


__all__ = sorted(_HOME)
