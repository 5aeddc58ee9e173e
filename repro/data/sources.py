"""Where each dataset comes from: the archives to download, their published checksums and sizes.

The URLs and md5s are torchvision's (its CIFAR classes, its ImageNet archive list) and repro.data.layout's,
read from them (and cached per torchvision version), never copied; the sizes are the archives' as their sources
serve them (the bytes a download writes), recorded once below.
Tiny-ImageNet's source publishes no checksum. What the data layer checks at
load time (every CIFAR file's md5) is listed beside the archives. The artifact appendix
(repro.report.appendix) and the disk estimate (repro.cost.disk) read these.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

from repro.core.cache import cache_dir, read_json, write_json
from repro.core.settings import DEFAULT_CACHE
from repro.data.specs import get_dataset

# Bytes of each archive as its source serves it (Content-Length of the download; the same figure
# torchvision's and Keras' download bars show). The ImageNet devkit's is not recorded: its few MB are
# left out of the sums, which say so.
ARCHIVE_BYTES: dict[str, int] = {
    "cifar-10-python.tar.gz": 170_498_071,
    "cifar-100-python.tar.gz": 169_001_437,
    "tiny-imagenet-200.zip": 248_100_043,
    "ILSVRC2012_img_train.tar": 147_897_477_120,
    "ILSVRC2012_img_val.tar": 6_744_924_160,
}


@dataclass(frozen=True)
class Archive:
    """One file to download: where from, its published md5 ('' when none is published) and size."""

    file: str
    url: str
    md5: str = ""
    size_bytes: int | None = None  # None: not recorded (ARCHIVE_BYTES)


@dataclass(frozen=True)
class DatasetSource:
    name: str
    title: str
    archives: tuple[Archive, ...]
    checked_files: tuple[tuple[str, str], ...] = ()  # (file, md5) the loader checks every time it reads them
    checksum_note: str = ""  # how the checksums are used, or that none is published

    @property
    def size_bytes(self) -> int:
        """The archives' recorded sizes, summed (an unrecorded one counts 0: see `unsized`)."""
        return sum(a.size_bytes or 0 for a in self.archives)

    @property
    def unsized(self) -> tuple[str, ...]:
        return tuple(a.file for a in self.archives if a.size_bytes is None)


def dataset_source(name: str, cache: Path = DEFAULT_CACHE) -> DatasetSource:
    """The archives of one dataset (KeyError naming the known ones). torchvision's lists are read once per
    torchvision version and cached in the cache folder `cache` (repro.core.cache), so that a report renders
    without importing torch."""
    spec = get_dataset(name)
    version = _torchvision_version()
    path = cache_dir(cache, "sources") / f"{spec.name}.json"
    cached = read_json(path)
    if isinstance(cached, dict) and cached.get("torchvision") == version and "source" in cached:
        try:
            return _from_dict(cached["source"])
        except (KeyError, TypeError):
            pass  # written by another version of this module: read the lists again
    source = _read_source(spec.name)
    write_json(path, {"torchvision": version, "source": asdict(source)})
    return source


def _torchvision_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("torchvision")
    except PackageNotFoundError:
        return ""


def _from_dict(d: dict) -> DatasetSource:
    return DatasetSource(
        d["name"],
        d["title"],
        tuple(Archive(**a) for a in d["archives"]),
        tuple(tuple(f) for f in d["checked_files"]),
        d["checksum_note"],
    )


def _read_source(name: str) -> DatasetSource:
    from repro.data.layout import IMAGENET_URL, TINY_IMAGENET_URL, cifar_class

    spec = get_dataset(name)
    if spec.storage == "cifar_pickles":
        cls = cifar_class(spec)
        files = tuple((f, md5) for f, md5 in cls.train_list + cls.test_list) + (
            (cls.meta["filename"], cls.meta["md5"]),
        )
        return DatasetSource(
            name,
            spec.title,
            (_archive(cls.filename, cls.url, cls.tgz_md5),),
            files,
            "md5 of the archive published by its source; every pickle's md5 checked at each load (torchvision's list)",
        )
    if spec.storage == "tiny_imagenet_files":
        file = TINY_IMAGENET_URL.rsplit("/", 1)[-1]
        return DatasetSource(
            name,
            spec.title,
            (_archive(file, TINY_IMAGENET_URL, ""),),
            (),
            "its source publishes no checksum, so none is checked",
        )
    from torchvision.datasets.imagenet import ARCHIVE_META

    archives = tuple(_archive(file, IMAGENET_URL, md5) for file, md5 in ARCHIVE_META.values())
    return DatasetSource(
        name,
        spec.title,
        archives,
        (),
        "md5s of the archives (torchvision's list), checked by torchvision when it extracts them; "
        "the download page asks for a registration",
    )


def _archive(file: str, url: str, md5: str) -> Archive:
    return Archive(file, url, md5, ARCHIVE_BYTES.get(file))
