"""One content check per dataset, run once per table before anything trains.

The presence check (repro.data.layout) only looks for files. This one opens them:
the class count must be the dataset's (a Tiny-ImageNet copy with 10 wnids is refused),
one batch of train and test images must decode at the expected shape, the split
sizes are counted and stated, and CIFAR's md5s are compared with the published ones.
A checksum mismatch names the file; it is accepted only with `allow_unverified`,
and then the DataCheck (repro.data.check_result) says so (`unverified`), for the run
records and the report.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import torch

from repro.data import cifar
from repro.data.check_result import MD5_ACCEPTED, MD5_MISMATCH, MD5_VERIFIED, DataCheck
from repro.data.layout import DataRefused, how_to_fill, status
from repro.data.layout import DatasetInvalid  # noqa: F401 (re-exported)
from repro.data.specs import get_dataset

BATCH = 8  # images decoded per split


def _count_files(folder: Path, suffixes: tuple[str, ...]) -> int:
    with os.scandir(folder) as it:
        return sum(1 for e in it if e.name.lower().endswith(suffixes))


def _check_cifar(name: str, folder: Path, allow_unverified: bool) -> dict:
    spec = get_dataset(name)
    mismatches = cifar.md5_mismatches(name, folder)
    found: dict = {"checksum": MD5_VERIFIED, "unverified": tuple(m.line() for m in mismatches), "problems": []}
    if mismatches:
        found["checksum"] = MD5_ACCEPTED if allow_unverified else MD5_MISMATCH
        if not allow_unverified:  # the files are not read: they are not the published ones
            found["problems"].append(
                str(cifar.unverified_error(name, folder, mismatches, len(cifar.split_files(name))))
            )
            return found
    names = cifar.class_names(name, folder)
    (xtr, ytr), (xte, yte) = (cifar.read_split(name, folder, train) for train in (True, False))
    found.update(classes=len(names), train_size=len(ytr), test_size=len(yte))
    seen = int(torch.unique(ytr).numel())
    if seen != spec.num_classes or int(ytr.max()) >= spec.num_classes:
        found["problems"].append(
            f"{folder}: the training labels hold {seen} classes (largest {int(ytr.max())}); "
            f"{spec.title} has {spec.num_classes}"
        )
    for split, x in (("train", xtr), ("test", xte)):
        if x[:BATCH].shape[1:] != spec.input_shape:
            found["problems"].append(f"{folder}: {split} images are {tuple(x.shape[1:])}, expected {spec.input_shape}")
    return found


def _check_tiny_imagenet(folder: Path) -> dict:
    from repro.data.tiny_imagenet import decode_file, tiny_imagenet_files

    wnids = sorted((folder / "wnids.txt").read_text().split())
    found: dict = {"checksum": "no checksum published", "classes": len(wnids), "problems": []}
    train, train_labels = tiny_imagenet_files(folder, True)
    val, _ = tiny_imagenet_files(folder, False)
    found.update(train_size=len(train), test_size=len(val))
    missing = [p for p in val if not p.is_file()]
    if missing:
        found["problems"].append(
            f"{folder / 'val' / 'val_annotations.txt'} lists {len(missing)} files that are not "
            f"in val/images/, e.g. {missing[0].name}"
        )
    present = set(train_labels)
    empty = [w for i, w in enumerate(wnids) if i not in present]
    if empty:
        found["problems"].append(f"{folder / 'train'}: no training images for {len(empty)} wnids, e.g. {empty[0]}")
    picks = [train[train_labels.index(c)] for c in sorted(present)[:BATCH]]
    for path in picks + [p for p in val if p.is_file()][:BATCH]:
        decode_file(path)  # raises naming the file and the size it found
    return found


def _check_image_folders(folder: Path) -> dict:
    from repro.data.jpeg import decode_batch, read_bytes

    found: dict = {"checksum": "archive md5s checked by torchvision at extraction", "problems": []}
    classes = sorted(e.name for e in os.scandir(folder / "train") if e.is_dir())
    found["classes"] = len(classes)
    suffixes = (".jpeg", ".jpg", ".png")
    counts = {split: sum(_count_files(folder / split / c, suffixes) for c in classes) for split in ("train", "val")}
    found.update(train_size=counts["train"], test_size=counts["val"])
    for split in ("train", "val"):
        paths = []
        for c in classes[:BATCH]:
            with os.scandir(folder / split / c) as it:
                first = next((e.path for e in it if e.name.lower().endswith(suffixes)), None)
            if first is None:
                found["problems"].append(f"{folder / split / c}: no images")
            else:
                paths.append(first)
        decode_batch([read_bytes(p) for p in paths], paths, torch.device("cpu"))
    return found


def check_dataset(dataset: str, data_dir: str | Path | None = None, allow_unverified: bool = False) -> DataCheck:
    """Look at the dataset's content: classes, split sizes, one decoded batch, checksums. Never raises for
    bad data: the DataCheck's problems say what is wrong (raise_if_failed raises them as the error of their kind)."""
    spec = get_dataset(dataset)
    s = status(dataset, data_dir)
    base = DataCheck(dataset=dataset, title=spec.title, path=str(s.path), test_split=spec.test_split)
    if not s.present:
        return replace(base, problems=(s.message(),), missing=True)
    try:
        if spec.storage == "cifar_pickles":
            found = _check_cifar(dataset, s.path, allow_unverified)
        elif spec.storage == "tiny_imagenet_files":
            found = _check_tiny_imagenet(s.path)
        else:
            found = _check_image_folders(s.path)
    except DataRefused as exc:  # a malformed file: the message names it and what was expected
        return replace(base, problems=(str(exc),))
    except Exception as exc:  # an unreadable file: its error names it (ImageDecodeError, ValueError)
        return replace(base, problems=(f"{type(exc).__name__}: {exc}",))
    problems = found.pop("problems")
    if found.get("classes") is not None and found["classes"] != spec.num_classes:
        problems.insert(
            0,
            f"{found['classes']} classes found, {spec.title} has {spec.num_classes}; "
            f"to replace {spec.folder}/,\n{how_to_fill(dataset, data_dir)}",
        )
    notes: tuple[str, ...] = ()
    sizes = (found.get("train_size"), found.get("test_size"))
    if None not in sizes and sizes != (spec.train_size, spec.test_size):
        notes = (
            f"split sizes differ from the paper's {spec.train_size:,} train / {spec.test_size:,} {base.test_split}",
        )
    return replace(base, **found, problems=tuple(problems), notes=notes)


def check_datasets(
    datasets: list[str], data_dir: str | Path | None = None, allow_unverified: bool = False
) -> list[DataCheck]:
    """One check per distinct dataset, in sorted order (a table's rows share their datasets' checks)."""
    return [check_dataset(d, data_dir, allow_unverified) for d in sorted(set(datasets))]
