"""How many images each split holds on this machine, for the cost model (repro.cost.estimate); no torch.

What is on disk is counted, never assumed from the dataset's name: a CIFAR folder of a user's own may hold 200
images, not 50,000. CIFAR's batches are read (every pickle in the folder holding "data"; the test split those
named "test..."), Tiny-ImageNet's training files and validation annotations counted, and ImageNet's ImageFolder
trees counted. Counting takes up to seconds (reading CIFAR's 180 MB, listing 1.3M names), so each count is cached
(repro.core.cache) under a signature of the files' or folders' sizes and mtimes, which change whenever a file is
added, replaced or removed. Without the folder, the paper's sizes stand in, and `source` says so.
"""

from __future__ import annotations

import hashlib
import os
import warnings
from dataclasses import dataclass
from pathlib import Path

from repro.core.cache import cache_dir, read_json, write_json
from repro.core.settings import DEFAULT_CACHE
from repro.data.pickles import PickleRefused, load_pickle
from repro.data.specs import data_root, get_dataset

IMAGE_SUFFIXES = (".jpeg", ".jpg", ".png")


@dataclass(frozen=True)
class SplitSizes:
    train: int
    test: int
    source: str  # "on disk (counted)", "on disk (fixed split)" or "paper (not on disk)"


def _class_dirs(split: Path) -> list[os.DirEntry]:
    return sorted((e for e in os.scandir(split) if e.is_dir()), key=lambda e: e.name) if split.is_dir() else []


def _stamp(path: Path) -> str:
    if not path.exists():
        return f"{path.name}:-"
    st = path.stat()
    return f"{path.name}:{st.st_size}:{st.st_mtime_ns}"


def _signature_image_folders(folder: Path) -> list[str]:
    return [
        _stamp(folder / split) + "".join(f"|{e.name}:{e.stat().st_mtime_ns}" for e in _class_dirs(folder / split))
        for split in ("train", "val")
    ]


def _signature_tiny_imagenet(folder: Path) -> list[str]:
    return [
        _stamp(folder / "train"),
        _stamp(folder / "val" / "val_annotations.txt"),
        *(_stamp(Path(e.path) / "images") for e in _class_dirs(folder / "train")),
    ]


def _signature_cifar(folder: Path) -> list[str]:
    return sorted(_stamp(Path(e.path)) for e in os.scandir(folder) if e.is_file())


def _count_images(split: Path) -> int:
    return sum(1 for d in _class_dirs(split) for e in os.scandir(d.path) if e.name.lower().endswith(IMAGE_SUFFIXES))


def _count_image_folders(folder: Path) -> tuple[int, int]:
    return _count_images(folder / "train"), _count_images(folder / "val")


def _count_tiny_imagenet(folder: Path) -> tuple[int, int]:
    train = sum(
        1
        for d in _class_dirs(folder / "train")
        if (Path(d.path) / "images").is_dir()
        for e in os.scandir(Path(d.path) / "images")
        if e.name.lower().endswith(IMAGE_SUFFIXES)
    )
    annotations = folder / "val" / "val_annotations.txt"
    val = sum(1 for line in annotations.read_text().splitlines() if line.strip()) if annotations.is_file() else 0
    return train, val


def _count_cifar(folder: Path) -> tuple[int, int]:
    """Images in the folder's batches: every pickle holding "data", in the test split when its name starts "test".
    Read by the restricted unpickler (repro.data.pickles): a file that names any other global is not run."""
    counts = {True: 0, False: 0}
    for entry in os.scandir(folder):
        if not entry.is_file():  # a regular file (a FIFO would block the read)
            continue
        try:
            batch = load_pickle(entry.path)
        except PickleRefused as e:  # named here, as a file that is no batch is not; the data check refuses it
            warnings.warn(f"{entry.path}: not counted: {e}", stacklevel=2)
            continue
        except Exception:  # not a batch (readme.html) or damaged: the data check names it before training
            continue
        if isinstance(batch, dict) and "data" in batch:
            counts[entry.name.startswith("test")] += len(batch["data"])
    return counts[False], counts[True]


COUNTERS = {
    "cifar_pickles": (_signature_cifar, _count_cifar),
    "tiny_imagenet_files": (_signature_tiny_imagenet, _count_tiny_imagenet),
    "image_folders": (_signature_image_folders, _count_image_folders),
}


def count_on_disk(folder: Path, storage: str, cache: Path = DEFAULT_CACHE) -> tuple[int, int]:
    """(train, test) images of a dataset folder stored as `storage`, cached by the files' sizes and mtimes in the
    cache folder `cache`."""
    folder = folder.absolute()
    sign, count = COUNTERS[storage]
    path = cache_dir(cache, "sizes") / (hashlib.sha256(f"{storage}:{folder}".encode()).hexdigest()[:24] + ".json")
    signature = hashlib.sha256("\n".join(sign(folder)).encode()).hexdigest()[:24]
    cached = read_json(path)
    if isinstance(cached, dict) and cached.get("signature") == signature and cached.get("folder") == str(folder):
        return int(cached["train"]), int(cached["val"])
    train, val = count(folder)
    write_json(path, {"folder": str(folder), "signature": signature, "train": train, "val": val})
    return train, val


def split_sizes(dataset: str, root: str | Path | None = None, cache: Path = DEFAULT_CACHE) -> SplitSizes:
    """The train and test split sizes of `dataset` as found under the data root, else the paper's."""
    spec = get_dataset(dataset)
    folder = data_root(root) / spec.folder
    if not folder.is_dir():
        return SplitSizes(spec.train_size, spec.test_size, "paper (not on disk)")
    train, test = count_on_disk(folder, spec.storage, cache)
    if train and test:
        return SplitSizes(train, test, "on disk (counted)")
    return SplitSizes(spec.train_size, spec.test_size, "paper (the folder holds no images)")


def run_split_sizes(
    dataset: str,
    data: str,
    train_samples: int | None,
    test_samples: int | None,
    root: str | Path | None = None,
    cache: Path = DEFAULT_CACHE,
) -> SplitSizes:
    """A run's training and test images: its real data's on disk (`data` "real"), else the dataset's sizes in
    the kind of data it makes (synthetic, digits); each capped by the profile's subset."""
    spec = get_dataset(dataset)
    sizes = (
        split_sizes(dataset, root, cache)
        if data == "real"
        else SplitSizes(spec.train_size, spec.test_size, f"{data} data")
    )
    return SplitSizes(
        min(sizes.train, train_samples or sizes.train), min(sizes.test, test_samples or sizes.test), sizes.source
    )


def decoded_cache_bytes(dataset: str, root: str | Path | None = None, cache: Path = DEFAULT_CACHE) -> int:
    """Bytes of the decoded splits repro.data.tensors caches for `dataset` (uint8 images (N, C, H, W), int64
    labels): only a tiny_imagenet_files dataset is decoded once and cached; the others are read as stored."""
    spec = get_dataset(dataset)
    if spec.storage != "tiny_imagenet_files":
        return 0
    sizes = split_sizes(dataset, root, cache)
    return (sizes.train + sizes.test) * (spec.channels * spec.image_size**2 + 8)
