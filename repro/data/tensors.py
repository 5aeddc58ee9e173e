"""Whole real datasets as in-memory uint8 tensors, with a cache of decoded Tiny-ImageNet.

`split` is "train" or "test"; "test" is the split the paper evaluates on (CIFAR's
test set, Tiny-ImageNet's validation set) and "val" is accepted for it.
Decoding Tiny-ImageNet's 110k JPEGs takes about a minute, so the result is saved
under the cache dir, named by a fingerprint of the source files (path, size,
mtime; the label files included) so that edited data is decoded afresh, and
written atomically (temporary file, then rename). CIFAR's pickles load in about a
second and are read each time, md5 check included (unless `allow_unverified`).
"""

from __future__ import annotations

import hashlib
import warnings
from pathlib import Path

import torch

from repro.core.cache import write_torch
from repro.data.cifar import cifar_tensors
from repro.core.settings import DEFAULT_CACHE
from repro.data.layout import require
from repro.data.specs import get_dataset
from repro.data.tiny_imagenet import tiny_imagenet_files, tiny_imagenet_tensors


def _is_train(split: str) -> bool:
    if split not in ("train", "test", "val"):
        raise ValueError(f"unknown split {split!r}; use 'train' or 'test' ('val' is a synonym of 'test')")
    return split == "train"


def fingerprint(paths: list[Path]) -> str:
    h = hashlib.sha1()
    for p in paths:
        st = p.stat()
        h.update(f"{p.resolve()}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()[:16]


def cache_path(root: str | Path | None, split: str, cache: Path = DEFAULT_CACHE, name: str = "tiny_imagenet") -> Path:
    """Where a tiny_imagenet_files dataset's decoded split goes; lists the source files but decodes nothing."""
    folder, train = require(name, root), _is_train(split)
    paths, _ = tiny_imagenet_files(folder, train)
    labels = [folder / "wnids.txt"] + ([] if train else [folder / "val" / "val_annotations.txt"])
    return Path(cache) / f"{name}-{'train' if train else 'test'}-{fingerprint(labels + paths)}.pt"


def load_tensors(
    name: str,
    root: str | Path | None = None,
    split: str = "train",
    *,
    cache: Path = DEFAULT_CACHE,
    download: bool = False,
    allow_unverified: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """(images uint8 (N, 3, H, W), labels int64 (N,)) of a real dataset that fits in memory.

    CIFAR reads torchvision's pickles (fast, md5-checked, downloaded first when
    `download`; `allow_unverified` skips the md5 check); Tiny-ImageNet, which has no published
    checksum, decodes its JPEGs once and afterwards reads the cache.
    """
    spec = get_dataset(name)
    if not spec.in_memory:
        raise ValueError(f"{spec.title} does not fit in memory; use repro.data.imagenet.image_folder_loader")
    train = _is_train(split)
    if spec.storage == "cifar_pickles":
        return cifar_tensors(name, root, train, download=download, allow_unverified=allow_unverified)
    path = cache_path(root, split, cache, name)
    if path.is_file():
        saved = torch.load(path, weights_only=True)
        return saved["images"], saved["labels"]
    images, labels = tiny_imagenet_tensors(root, train)
    try:
        write_torch(path, {"images": images, "labels": labels})
    except OSError as e:
        warnings.warn(f"could not cache decoded {spec.title} at {path} ({e}); set REPRO_CACHE to a writable folder")
    return images, labels
