"""CIFAR-10 / CIFAR-100 (Krizhevsky, 2009) as uint8 tensors, from torchvision's folder layout.

The files, their published md5s and the pickle format are torchvision's (its CIFAR10 /
CIFAR100 lists). Every load checks the md5s, once, and names each file that fails;
`allow_unverified` skips the check (re-packed or converted copies), and the data
check then reports the mismatches so that the run records can say so. Loading the
pickles takes about a second, so the result is not cached.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from repro.data.layout import DatasetInvalid, DatasetMissing, DatasetUnverified, cifar_class, data_root, require, status
from repro.data.pickles import load_pickle
from repro.data.specs import get_dataset

# The pickles' label key, by torchvision class: CIFAR-100's batches hold fine and coarse labels.
LABEL_KEY = {"CIFAR10": "labels", "CIFAR100": "fine_labels"}


def _cls(name: str):
    return cifar_class(get_dataset(name))


def _label_key(name: str) -> str:
    return LABEL_KEY[get_dataset(name).torchvision_class]


def split_files(name: str, train: bool | None = None) -> list[tuple[str, str]]:
    """(file name, published md5) of one split (None: both) and the meta file."""
    cls = _cls(name)
    files = (cls.train_list if train in (True, None) else []) + (cls.test_list if train in (False, None) else [])
    return [(f, md5) for f, md5 in files] + [(cls.meta["filename"], cls.meta["md5"])]


@dataclass(frozen=True)
class Mismatch:
    """One file whose md5 is not the one torchvision publishes."""

    file: str
    got: str
    expected: str

    def line(self) -> str:
        """As run records and the report store it (repro.data.check_result.DataCheck.unverified)."""
        return f"{self.file}: md5 {self.got} != {self.expected}"


def md5_mismatches(name: str, folder: Path, train: bool | None = None) -> list[Mismatch]:
    """Every file of the split (None: both) and the meta file whose md5 is not the published one."""
    out = []
    for file, expected in split_files(name, train):
        got = hashlib.md5((folder / file).read_bytes()).hexdigest()
        if got != expected:
            out.append(Mismatch(file, got, expected))
    return out


def unverified_error(name: str, folder: Path, mismatches: list[Mismatch], checked: int) -> DatasetUnverified:
    """The refusal in 6 lines, each within 80 columns but the folder's: the first file that fails, with both
    md5s, then the flag that accepts the files (the command line puts the table's id before the first)."""
    first, more = mismatches[0], len(mismatches) - 1
    return DatasetUnverified(
        f"{get_dataset(name).title} fails its checksums.\n"
        f"  {folder}: {len(mismatches)} of {checked} files differ{', e.g.' if more else ''}\n"
        f"  {first.file}: md5 {first.got}\n"
        f"  {' ' * len(first.file)}  expected {first.expected}\n"
        "Add --allow-unverified-data to train on them anyway: every record, table and\n"
        'report then says "unverified" (docs/your-own-data.md).'
    )


def _unpickle(path: Path) -> dict:
    try:
        return load_pickle(path)
    except Exception as exc:  # truncated, not a pickle, a global outside the format
        raise DatasetInvalid(f"{path}: cannot read it as a CIFAR pickle ({type(exc).__name__}: {exc})") from exc


def read_split(name: str, folder: Path, train: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """The split's pickles as (images uint8 (N, 3, 32, 32), labels int64 (N,)), as torchvision's class reads them."""
    data, labels = [], []
    for file, _ in split_files(name, train)[:-1]:
        entry = _unpickle(folder / file)
        try:
            data.append(np.asarray(_get(entry, "data"), dtype=np.uint8).reshape(-1, 3, 32, 32))  # rows are CHW
            labels += list(_get(entry, _label_key(name)))
        except (KeyError, ValueError, TypeError, IndexError) as exc:
            raise DatasetInvalid(
                f"{folder / file}: not a CIFAR batch ({type(exc).__name__}: {exc}); expected "
                f"'data' (N, 3072) uint8 and '{_label_key(name)}'"
            ) from exc
    images = torch.from_numpy(np.concatenate(data))
    if len(images) != len(labels):
        raise DatasetInvalid(f"{folder}: {len(images)} images but {len(labels)} labels in the {name} pickles")
    return images, torch.tensor(labels, dtype=torch.int64)


def _get(entry: dict, key: str):
    """entry[key], or entry[b'key']: a pickle re-written after a load with encoding='bytes' (the CIFAR site's own
    loader) keeps its keys as bytes. KeyError naming `key` when neither is there."""
    if isinstance(entry, dict) and key.encode() in entry and key not in entry:
        return entry[key.encode()]
    return entry[key]


def class_names(name: str, folder: Path) -> list[str]:
    meta = _cls(name).meta
    entry = _unpickle(folder / meta["filename"])
    try:
        names = _get(entry, meta["key"])
    except (KeyError, TypeError):
        raise DatasetInvalid(
            f"{folder / meta['filename']}: no '{meta['key']}' entry; expected the class names"
        ) from None
    return [n.decode("latin1") if isinstance(n, bytes) else n for n in names]


def cifar_tensors(
    name: str, root: str | Path | None, train: bool, download: bool = False, allow_unverified: bool = False
) -> tuple[torch.Tensor, torch.Tensor]:
    """(images uint8 (N, 3, 32, 32), labels int64 (N,)) of one CIFAR split; md5-checked unless `allow_unverified`."""
    root = data_root(root)
    if download and not status(name, root).present:
        try:
            _cls(name)(str(root), train=train, download=True)
        except Exception as e:  # offline, read-only root, interrupted transfer
            raise DatasetMissing(f"{status(name, root).message()} (download failed: {e})") from e
    folder = require(name, root)
    if not allow_unverified:
        mismatches = md5_mismatches(name, folder, train)
        if mismatches:
            raise unverified_error(name, folder, mismatches, len(split_files(name, train)))
    return read_split(name, folder, train)
