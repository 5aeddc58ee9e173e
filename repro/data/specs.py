"""The four datasets of the paper (Section 4.1) as data: shape, classes, protocol, and how each is stored.

How a dataset is stored decides which code finds, checks, sizes and loads it (repro.data.layout, check,
sizes, tensors, imagenet): that is the spec's `storage`, never its name.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from repro.core.registry import closest
from repro.core.settings import DEFAULT_DATA


# How a dataset is kept on disk: torchvision's CIFAR pickles; Tiny-ImageNet's JPEG files with its wnids and
# val annotations; ImageFolder trees (train/<class>/, val/<class>/), which do not fit in memory.
Storage = Literal["cifar_pickles", "tiny_imagenet_files", "image_folders"]


@dataclass(frozen=True)
class DatasetSpec:
    name: str
    title: str
    image_size: int  # H = W at the paper's resolution
    channels: int
    num_classes: int
    train_size: int
    test_size: int
    # Section 4.1: on CIFAR the score is the test accuracy after the last epoch; on Tiny-ImageNet and
    # ImageNet it is the best validation accuracy over the epochs.
    metric: Literal["final", "peak"]
    storage: Storage
    folder: str  # its folder under the data root
    test_split: str  # what the paper evaluates on: CIFAR's test set, the others' val set
    torchvision_class: str = ""  # cifar_pickles: torchvision.datasets' class (its file list and md5s)
    # Per-channel RGB mean and std of the training images, for normalisation.
    mean: tuple[float, float, float] = (0.485, 0.456, 0.406)
    std: tuple[float, float, float] = (0.229, 0.224, 0.225)

    @property
    def input_shape(self) -> tuple[int, int, int]:
        return (self.channels, self.image_size, self.image_size)

    @property
    def in_memory(self) -> bool:
        """Loaded whole into memory as tensors (repro.data.tensors); else streamed from image folders."""
        return self.storage != "image_folders"


DATASETS: dict[str, DatasetSpec] = {
    d.name: d
    for d in [
        DatasetSpec(
            "cifar10",
            "CIFAR-10",
            32,
            3,
            10,
            50_000,
            10_000,
            "final",
            "cifar_pickles",
            "cifar-10-batches-py",
            "test",
            "CIFAR10",
            mean=(0.4914, 0.4822, 0.4465),
            std=(0.2470, 0.2435, 0.2616),
        ),
        DatasetSpec(
            "cifar100",
            "CIFAR-100",
            32,
            3,
            100,
            50_000,
            10_000,
            "final",
            "cifar_pickles",
            "cifar-100-python",
            "test",
            "CIFAR100",
            mean=(0.5071, 0.4865, 0.4409),
            std=(0.2673, 0.2564, 0.2762),
        ),
        # Tiny-ImageNet is an ImageNet subset: ImageNet's statistics (the defaults).
        DatasetSpec(
            "tiny_imagenet",
            "Tiny-ImageNet",
            64,
            3,
            200,
            100_000,
            10_000,
            "peak",
            "tiny_imagenet_files",
            "tiny-imagenet-200",
            "val",
        ),
        DatasetSpec(
            "imagenet", "ImageNet-1K", 224, 3, 1000, 1_281_167, 50_000, "peak", "image_folders", "imagenet", "val"
        ),
    ]
}


def get_dataset(name: str) -> DatasetSpec:
    if name not in DATASETS:
        raise KeyError(f"unknown dataset '{name}'{closest(name, list(DATASETS))}; known: {', '.join(DATASETS)}")
    return DATASETS[name]


def data_root(path: str | Path | None = None) -> Path:
    """The datasets' root: `path` (the command line passes --data-dir, else $REPRO_DATA), else ./data."""
    return Path(path or DEFAULT_DATA).expanduser()
