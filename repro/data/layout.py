"""Where the real datasets live, what must be there, and how to fill what is missing.

The data root is the `root` argument (the command line passes --data-dir, else `$REPRO_DATA`), else
`./data` (repro.data.specs.data_root). Under it:

    <root>/
      cifar-10-batches-py/      torchvision's CIFAR-10 folder: data_batch_1..5, test_batch, batches.meta
      cifar-100-python/         torchvision's CIFAR-100 folder: train, test, meta
      tiny-imagenet-200/        the official zip, extracted:
        wnids.txt                 the 200 class ids, one a line
        train/<wnid>/images/*.JPEG
        val/images/*.JPEG         validation images, not in class folders...
        val/val_annotations.txt   ...their labels: "<file>\t<wnid>\t<box>" per line
      imagenet/                 ILSVRC-2012 as two ImageFolder trees:
        train/<wnid>/*.JPEG
        val/<wnid>/*.JPEG

Decoded tensors are cached in the cache folder (the `cache` argument: the command's settings, repro.core.settings),
never next to the data, because the data mount may be read-only.

Checks here only look for files; they never decode (repro.data.check looks at the
content). Messages hold no square brackets, which rich would take for markup, but
printers still escape them (paths may). Checksums: CIFAR's published md5s (torchvision's
lists) are checked whenever the batches load, and torchvision verifies the
ILSVRC-2012 archives' md5s when its `ImageNet` class extracts them (the fill
instruction below uses it). The Tiny-ImageNet zip has no checksum published by its
source, so none is checked.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from shlex import quote


from repro.data.specs import DATASETS, DatasetSpec, data_root, get_dataset
from repro.core.terminal import Step, as_lines

TINY_IMAGENET_URL = "http://cs231n.stanford.edu/tiny-imagenet-200.zip"
IMAGENET_URL = "https://image-net.org/challenges/LSVRC/2012/2012-downloads.php"


def cifar_class(spec: DatasetSpec):
    """torchvision's CIFAR10 / CIFAR100 class of a cifar_pickles dataset: its file list, md5s, folder."""
    import torchvision.datasets  # a slow import: only where a CIFAR folder is checked

    return getattr(torchvision.datasets, spec.torchvision_class)


class DataRefused(RuntimeError):
    """A real dataset that cannot be trained on as it is: absent, malformed, or failing its published checksums.
    The message says what failed (the file, and what was expected) and what to do, in a few lines."""


class DatasetMissing(DataRefused):
    """A real dataset is absent or incomplete; the message says how to fill it."""


class DatasetInvalid(DataRefused):
    """A dataset that is present but whose files are not the dataset's (unreadable, malformed, wrong classes);
    the message names the file and what differs."""


class DatasetUnverified(DataRefused):
    """Files whose checksum differs from the published one; accepted only with --allow-unverified-data."""


def dataset_dir(name: str, root: str | Path | None = None) -> Path:
    return data_root(root) / get_dataset(name).folder


def fill_steps(name: str, root: str | Path | None = None) -> list[Step]:
    """How to fill a missing dataset under `root`: what to do, each with its command (repro data prints them)."""
    spec, root = get_dataset(name), data_root(root).absolute()
    if spec.storage == "cifar_pickles":
        return [
            Step(
                "on a machine with internet, run:",
                f"python -c \"import torchvision; torchvision.datasets.{spec.torchvision_class}('{root}', "
                'download=True)"',
            ),
            Step(f"(or copy an existing {spec.folder}/ folder into {root}/)"),
        ]
    if spec.storage == "tiny_imagenet_files":
        return [
            Step(
                f"download {TINY_IMAGENET_URL} and unzip it inside {root}/ (it creates {spec.folder}/):",
                f"curl -LO {TINY_IMAGENET_URL} && unzip -q {TINY_IMAGENET_URL.rsplit('/', 1)[-1]} "
                f"-d {quote(str(root))}",
            )
        ]
    if spec.storage == "image_folders":
        folder = root / spec.folder
        return [
            Step(
                f"download ILSVRC2012_img_train.tar, ILSVRC2012_img_val.tar and ILSVRC2012_devkit_t12.tar.gz "
                f"from {IMAGENET_URL} into {folder}/, then run:"
            ),
            *(
                Step("", f"python -c \"import torchvision as tv; tv.datasets.ImageNet('{folder}', split='{split}')\"")
                for split in ("train", "val")
            ),  # a command a line, each shorter than both in one
            Step("(it checks the archives' md5s and writes train/<wnid>/ and val/<wnid>/)"),
        ]
    raise KeyError(name)


def how_to_fill(name: str, root: str | Path | None = None) -> str:
    return as_lines(fill_steps(name, root))


@dataclass(frozen=True)
class DatasetStatus:
    name: str
    title: str
    path: Path  # the folder checked
    missing: list[str] = field(default_factory=list)  # paths relative to `path`
    how_to_fill: str = ""

    @property
    def present(self) -> bool:
        return not self.missing

    def message(self) -> str:
        if self.present:
            return f"{self.title}: present at {self.path}"
        shown = ", ".join(self.missing[:5]) + (f" and {len(self.missing) - 5} more" if len(self.missing) > 5 else "")
        return f"{self.title}: not found at {self.path} (missing {shown}); to fill it,\n{self.how_to_fill}"


def _missing_cifar(spec: DatasetSpec, folder: Path) -> list[str]:
    cls = cifar_class(spec)
    files = [f for f, _ in cls.train_list + cls.test_list] + [cls.meta["filename"]]
    return [f for f in files if not (folder / f).is_file()]


def _missing_tiny_imagenet(folder: Path) -> list[str]:
    missing = [f for f in ("wnids.txt", "val/val_annotations.txt") if not (folder / f).is_file()]
    if not (folder / "val/images").is_dir():
        missing.append("val/images/")
    if (folder / "wnids.txt").is_file():
        wnids = (folder / "wnids.txt").read_text().split()
        missing += [f"train/{w}/images/" for w in wnids if not (folder / "train" / w / "images").is_dir()]
    return missing


def _subdirs(path: Path) -> set[str]:
    return {e.name for e in os.scandir(path) if e.is_dir()} if path.is_dir() else set()


def _missing_image_folders(folder: Path, num_classes: int) -> list[str]:
    train, val = _subdirs(folder / "train"), _subdirs(folder / "val")
    missing = []
    if len(train) != num_classes:
        missing.append(f"train/<wnid>/ ({num_classes} class folders expected, {len(train)} found)")
    if len(val) != num_classes:
        missing.append(f"val/<wnid>/ ({num_classes} class folders expected, {len(val)} found)")
    elif train and val != train:
        missing.append(f"val/{sorted(train - val)[0]}/ (val class folders differ from train's)")
    return missing


def status(name: str, root: str | Path | None = None) -> DatasetStatus:
    spec = get_dataset(name)
    folder = dataset_dir(name, root).absolute()
    if spec.storage == "cifar_pickles":
        missing = _missing_cifar(spec, folder)
    elif spec.storage == "tiny_imagenet_files":
        missing = _missing_tiny_imagenet(folder)
    else:
        missing = _missing_image_folders(folder, spec.num_classes)
    if not folder.is_dir():
        missing = [f"{spec.folder}/ (the whole folder)"]
    return DatasetStatus(name, spec.title, folder, missing, how_to_fill(name, root) if missing else "")


def data_status(root: str | Path | None = None, names: list[str] | None = None) -> list[DatasetStatus]:
    """One status per dataset (all four, or `names`, e.g. the datasets of one manifest)."""
    return [status(n, root) for n in (names or list(DATASETS))]


def require(name: str, root: str | Path | None = None) -> Path:
    """The dataset's folder, or DatasetMissing naming it, its folder and how to fill it."""
    s = status(name, root)
    if not s.present:
        raise DatasetMissing(f"{s.message()} (data root: the given path, else $REPRO_DATA, else ./data)")
    return s.path
