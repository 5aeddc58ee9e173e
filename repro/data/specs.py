"""The four datasets of the paper (Section 4.1) as data: shape, classes, protocol."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from repro.registry import closest


@dataclass(frozen=True)
class DatasetSpec:
    name: str
    title: str
    image_size: int  # H = W at the paper's resolution
    channels: int
    num_classes: int
    train_size: int
    test_size: int
    # Section 4.1: CIFAR reports final-epoch test accuracy; Tiny-ImageNet and
    # ImageNet report peak validation accuracy.
    metric: Literal["final", "peak"]
    # Per-channel RGB mean and std of the training images, for normalisation.
    mean: tuple[float, float, float] = (0.485, 0.456, 0.406)
    std: tuple[float, float, float] = (0.229, 0.224, 0.225)

    @property
    def input_shape(self) -> tuple[int, int, int]:
        return (self.channels, self.image_size, self.image_size)


DATASETS: dict[str, DatasetSpec] = {
    d.name: d
    for d in [
        DatasetSpec("cifar10", "CIFAR-10", 32, 3, 10, 50_000, 10_000, "final",
                    mean=(0.4914, 0.4822, 0.4465), std=(0.2470, 0.2435, 0.2616)),
        DatasetSpec("cifar100", "CIFAR-100", 32, 3, 100, 50_000, 10_000, "final",
                    mean=(0.5071, 0.4865, 0.4409), std=(0.2673, 0.2564, 0.2762)),
        # Tiny-ImageNet is an ImageNet subset: ImageNet's statistics (the defaults).
        DatasetSpec("tiny_imagenet", "Tiny-ImageNet", 64, 3, 200, 100_000, 10_000, "peak"),
        DatasetSpec("imagenet", "ImageNet-1K", 224, 3, 1000, 1_281_167, 50_000, "peak"),
    ]
}


def get_dataset(name: str) -> DatasetSpec:
    if name not in DATASETS:
        raise KeyError(f"unknown dataset '{name}'{closest(name, list(DATASETS))}; known: {', '.join(DATASETS)}")
    return DATASETS[name]
