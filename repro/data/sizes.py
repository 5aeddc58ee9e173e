"""How many images each split holds on this machine, for the cost model (repro.cost.estimate); no torch.

CIFAR and Tiny-ImageNet have fixed splits: when the folder is there, the split sizes are
the published ones (repro.data.specs). ImageNet is an ImageFolder tree a user may have
trimmed or extended, so its files are counted; counting 1.3M names takes seconds, so the
count is cached (repro.core.cache) under a signature of the folder's and its class folders'
mtimes, which change whenever a file is added or removed. Without the folder, the
paper's sizes stand in, and `source` says so.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from repro.core.cache import cache_dir, read_json, write_json
from repro.data.specs import get_dataset

IMAGE_SUFFIXES = (".jpeg", ".jpg", ".png")


@dataclass(frozen=True)
class SplitSizes:
    train: int
    test: int
    source: str  # "on disk (counted)", "on disk (fixed split)" or "paper (not on disk)"


def data_root(root: str | Path | None = None) -> Path:
    """The same rule as repro.data.layout.data_root: `root`, else $REPRO_DATA, else ./data."""
    return Path(root or os.environ.get("REPRO_DATA") or "data").expanduser()


def _class_dirs(split: Path) -> list[os.DirEntry]:
    return sorted((e for e in os.scandir(split) if e.is_dir()), key=lambda e: e.name) if split.is_dir() else []


def _signature(folder: Path) -> str:
    digest = hashlib.sha256()
    for split in ("train", "val"):
        path = folder / split
        digest.update(f"{split}:{path.stat().st_mtime_ns if path.is_dir() else 0}".encode())
        for entry in _class_dirs(path):
            digest.update(f"{entry.name}:{entry.stat().st_mtime_ns}".encode())
    return digest.hexdigest()[:24]


def _count_images(split: Path) -> int:
    return sum(1 for d in _class_dirs(split) for e in os.scandir(d.path)
               if e.name.lower().endswith(IMAGE_SUFFIXES))


def count_image_folder(folder: Path) -> tuple[int, int]:
    """(train, val) image files of an ImageFolder tree, cached by the tree's mtimes."""
    folder = folder.absolute()
    path = cache_dir("sizes") / (hashlib.sha256(str(folder).encode()).hexdigest()[:24] + ".json")
    signature = _signature(folder)
    cached = read_json(path)
    if isinstance(cached, dict) and cached.get("signature") == signature and cached.get("folder") == str(folder):
        return int(cached["train"]), int(cached["val"])
    train, val = _count_images(folder / "train"), _count_images(folder / "val")
    write_json(path, {"folder": str(folder), "signature": signature, "train": train, "val": val})
    return train, val


def split_sizes(dataset: str, root: str | Path | None = None) -> SplitSizes:
    """The train and test split sizes of `dataset` as found under the data root, else the paper's."""
    spec = get_dataset(dataset)
    folder = data_root(root) / spec.folder
    if not folder.is_dir():
        return SplitSizes(spec.train_size, spec.test_size, "paper (not on disk)")
    if spec.storage == "image_folders":  # a tree a user may have trimmed: counted; the others have fixed splits
        train, test = count_image_folder(folder)
        if train and test:
            return SplitSizes(train, test, "on disk (counted)")
        return SplitSizes(spec.train_size, spec.test_size, "paper (the folder holds no images)")
    return SplitSizes(spec.train_size, spec.test_size, "on disk (fixed split)")
