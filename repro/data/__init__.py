"""Datasets: what each one is (specs), where it lives (layout), how to load it, and synthetic stand-ins.

Real data: `load_tensors` (CIFAR, Tiny-ImageNet: whole splits as uint8 tensors),
`image_folder_loaders` / `image_folder_loader` (streamed ImageFolder trees).
Batches: `TensorLoader` (in-memory, batch-wise augmentation on the device).
Smoke profile: `synthetic_tensors`. Expected folders: see repro.data.layout.
"""

from repro.data.augment import crop_padding, normalize, random_crop_flip
from repro.data.imagenet import (FolderLoader, image_folder, image_folder_loader, image_folder_loaders,
                                 imagenet_loader)
from repro.data.layout import (DatasetMissing, DatasetStatus, cache_dir, data_root, data_status, dataset_dir,
                               require)
from repro.data.loader import TensorLoader, subset
from repro.data.specs import DATASETS, DatasetSpec, get_dataset
from repro.data.synthetic import synthetic_tensors
from repro.data.tensors import load_tensors

__all__ = [
    "DATASETS", "DatasetMissing", "DatasetSpec", "DatasetStatus", "FolderLoader", "TensorLoader", "cache_dir",
    "crop_padding", "data_root", "data_status", "dataset_dir", "get_dataset", "image_folder", "image_folder_loader",
    "image_folder_loaders", "imagenet_loader", "load_tensors", "normalize", "random_crop_flip", "require", "subset",
    "synthetic_tensors",
]
