"""ImageNet-1K (Deng et al., 2009) and any other ImageFolder tree, streamed from disk.

ImageNet does not fit in memory, so it goes through torchvision's ImageFolder and a
DataLoader with worker processes. Section 4.1's "random crops, flips" are taken
ImageNet-style (an assumption): RandomResizedCrop(224) + RandomHorizontalFlip for
training, Resize(256) + CenterCrop(224) for evaluation. Workers hand over uint8
tensors; normalisation (ImageNet's mean and std, as the pretrained backbones
expect) happens on the training device, as in TensorLoader.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterator

import torch
from torch.utils.data import DataLoader, Sampler
from torchvision import datasets, transforms

from repro.data.augment import normalize
from repro.data.layout import data_root, require
from repro.data.loader import epoch_generator, subset_indices
from repro.data.specs import get_dataset


def folder_transform(train: bool, image_size: int = 224) -> transforms.Compose:
    """PIL image -> uint8 (C, S, S); the resize before the centre crop keeps ImageNet's 256:224 ratio."""
    if train:
        steps = [transforms.RandomResizedCrop(image_size), transforms.RandomHorizontalFlip()]
    else:
        steps = [transforms.Resize(round(image_size * 256 / 224)), transforms.CenterCrop(image_size)]
    return transforms.Compose(steps + [transforms.PILToTensor()])


def image_folder(path: str | Path, train: bool = True, image_size: int = 224, n: int | None = None,
                 seed: int = 0) -> datasets.ImageFolder:
    """Any <path>/<class>/<image> tree; classes are numbered in sorted folder order.

    With n, only a seeded class-stratified subset of n images is kept.
    """
    path = Path(path)
    if not path.is_dir():
        raise FileNotFoundError(f"image folder {path} does not exist; expected {path}/<class>/<image files>")
    dataset = datasets.ImageFolder(str(path), transform=folder_transform(train, image_size))
    if n is not None and n < len(dataset):
        keep = sorted(subset_indices(torch.tensor(dataset.targets), n, seed).tolist())
        dataset.samples = dataset.imgs = [dataset.samples[i] for i in keep]
        dataset.targets = [s[1] for s in dataset.samples]
    return dataset


class EpochSampler(Sampler[int]):
    """A shuffle (train) or the identity order (test) that depends only on (seed, epoch)."""

    def __init__(self, n: int, shuffle: bool, seed: int = 0) -> None:
        self.n, self.shuffle, self.seed, self.epoch = n, shuffle, seed, 0

    def __iter__(self) -> Iterator[int]:
        if not self.shuffle:
            return iter(range(self.n))
        return iter(torch.randperm(self.n, generator=epoch_generator(self.seed, self.epoch)).tolist())

    def __len__(self) -> int:
        return self.n


class FolderLoader:
    """(x float32 (B, C, S, S), y int64 (B,)) batches from an ImageFolder, normalised on `device`.

    Same interface as TensorLoader: len() batches per epoch, set_epoch(e) replays
    epoch e's order and the workers' random seeds.
    """

    def __init__(self, dataset: datasets.ImageFolder, batch_size: int, *, train: bool,
                 mean: tuple[float, ...], std: tuple[float, ...], workers: int | None = None, seed: int = 0,
                 device: str | torch.device = "cpu", channels_last: bool = False) -> None:
        self.dataset, self.train = dataset, train
        self.mean, self.std, self.channels_last = tuple(mean), tuple(std), channels_last
        self.device, self.seed, self.epoch = torch.device(device), seed, 0
        self.sampler = EpochSampler(len(dataset), shuffle=train, seed=seed)
        workers = min(8, os.cpu_count() or 1) if workers is None else workers
        self.loader = DataLoader(dataset, batch_size=batch_size, sampler=self.sampler, num_workers=workers,
                                 drop_last=train and len(dataset) >= batch_size,
                                 pin_memory=self.device.type == "cuda",
                                 generator=torch.Generator())

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        return len(self.loader)

    def __iter__(self) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        self.sampler.epoch = self.epoch
        # The workers' base seed is drawn from this generator: fixing it fixes every crop.
        self.loader.generator.manual_seed(epoch_generator(self.seed, self.epoch).initial_seed() + 1)
        self.epoch += 1
        for x, y in self.loader:
            x = x.to(self.device, non_blocking=True)  # (B, C, S, S) uint8
            yield normalize(x, self.mean, self.std, self.channels_last), y.to(self.device, non_blocking=True)


def image_folder_loader(path: str | Path, batch_size: int, *, train: bool, image_size: int = 224,
                        mean: tuple[float, ...] | None = None, std: tuple[float, ...] | None = None,
                        n: int | None = None, seed: int = 0, **kwargs) -> FolderLoader:
    """A FolderLoader over any ImageFolder tree (n: a seeded subset); ImageNet's mean and std unless given."""
    spec = get_dataset("imagenet")
    return FolderLoader(image_folder(path, train, image_size, n, seed), batch_size, train=train,
                        mean=mean or spec.mean, std=std or spec.std, seed=seed, **kwargs)


def imagenet_loader(root: str | Path | None, split: str, batch_size: int, **kwargs) -> FolderLoader:
    """ImageNet-1K's train or val ("test" is accepted for val) tree under the data root."""
    if split not in ("train", "val", "test"):
        raise ValueError(f"unknown split {split!r}; use 'train' or 'val'")
    folder = require("imagenet", data_root(root)) / ("train" if split == "train" else "val")
    return image_folder_loader(folder, batch_size, train=split == "train", **kwargs)


def image_folder_loaders(name: str, root: str | Path | None, batch_size: int, image_size: int | None = None, *,
                         seed: int = 0, train_samples: int | None = None, test_samples: int | None = None,
                         **kwargs) -> tuple[FolderLoader, FolderLoader]:
    """(train, test) loaders of a dataset kept as image folders (ImageNet-1K), at `image_size`.

    Further keywords (workers, device, channels_last) go to FolderLoader.
    """
    spec = get_dataset(name)
    if name != "imagenet":
        raise ValueError(f"{spec.title} is loaded into memory; use repro.data.tensors.load_tensors")
    size = image_size or spec.image_size
    common = dict(image_size=size, mean=spec.mean, std=spec.std, seed=seed, **kwargs)
    return (imagenet_loader(root, "train", batch_size, n=train_samples, **common),
            imagenet_loader(root, "val", batch_size, n=test_samples, **common))
