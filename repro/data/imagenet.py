"""ImageNet-1K (Deng et al., 2009) and any other ImageFolder tree, streamed from disk.

ImageNet does not fit in memory, so batches come from DataLoader worker processes
(persistent across epochs, with prefetch). Section 4.1's "random crops, flips" are
taken ImageNet-style (an assumption): a random resized crop to 224 and a horizontal
flip for training, resize to 256 and centre crop 224 for evaluation (repro.data.crops).
Three input paths, the same crops from the same draws (see tests/test_data_imagenet_paths.py):

    pil          workers decode with PIL and crop image by image (the reference)
    decode_cpu   workers read the bytes and decode the whole batch with decode_jpeg
                 (libjpeg-turbo), crop it as tensors; the default without CUDA
    decode_cuda  workers only read the bytes; the main process decodes the batch on
                 the GPU (nvJPEG) and crops there; the default on a GPU whose input
                 paths were not measured (choose_path)

Normalisation (ImageNet's mean and std, as the pretrained backbones expect) happens
on the training device, as in TensorLoader. Legend: B batch, C channels, S image size.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Iterator, Sequence

import torch
import torchvision.transforms.v2.functional as TF
from torch.utils.data import DataLoader, Dataset, Sampler
from torchvision.datasets.folder import IMG_EXTENSIONS, find_classes, make_dataset

from repro.data.augment import normalize
from repro.data.crops import draw_train, eval_view, train_view
from repro.data.input_choice import measured_path
from repro.data.jpeg import ImageDecodeError, decode_batch, open_rgb, read_bytes
from repro.data.layout import data_root, require
from repro.data.loader import epoch_generator, one_thread, subset_indices
from repro.data.specs import get_dataset
from repro.runtime.distributed import shard_positions

PATHS = ("pil", "decode_cpu", "decode_cuda")
PREFETCH = 4  # batches each worker keeps ready
CPU = torch.device("cpu")


def choose_path(device: str | torch.device) -> str:
    """The input path for a training device: on a GPU whose input paths `repro bench gpu` measured, the one that
    fed its model fastest (repro.data.input_choice); on any other GPU the GPU decoder; else decode_jpeg in the
    workers.

    decode_cpu over pil: more images/s per core, within one grey level of PIL's pixels
    (repro bench data --dataset imagenet measures both; docs/performance.md).
    """
    device = torch.device(device)
    if device.type != "cuda":
        return "decode_cpu"
    measured = measured_path(torch.cuda.get_device_name(device)) if torch.cuda.is_available() else None
    return measured or "decode_cuda"


def default_workers(ranks_here: int = 1) -> int:
    """Every CPU this process may use but one, which the training loop keeps; under torchrun, this
    process's share of them (`ranks_here`: torchrun's LOCAL_WORLD_SIZE, the ranks on this host)."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    cpus //= max(1, ranks_here)
    return max(1, cpus - 1)


@dataclass(eq=False)
class FolderImages(Dataset):
    """The (path, class) list of an ImageFolder tree; dataset[(i, epoch)] reads image i as `mode` says.

    mode "pil": uint8 (C, S, S) view and label; mode "bytes": the encoded file, for a batch decode.
    """

    samples: list[tuple[str, int]]
    classes: list[str]
    train: bool
    image_size: int
    seed: int = 0  # seeds the crop draws
    mode: str = "pil"

    @property
    def targets(self) -> list[int]:
        return [label for _, label in self.samples]

    @property
    def class_to_idx(self) -> dict[str, int]:
        return {c: i for i, c in enumerate(self.classes)}

    def reading(self, mode: str, seed: int) -> "FolderImages":
        return replace(self, mode=mode, seed=seed)

    def __len__(self) -> int:
        return len(self.samples)

    def __getitem__(self, key: int | tuple[int, int]):
        with one_thread(CPU):  # a no-op in a worker (one thread already); matters with workers=0
            return self._item(key)

    def _item(self, key: int | tuple[int, int]):
        index, epoch = key if isinstance(key, tuple) else (key, 0)
        path, label = self.samples[index]
        try:
            if self.mode == "bytes":
                return read_bytes(path), label, path, index, epoch
            image = open_rgb(path)
            if self.train:
                box, flip = draw_train(image.height, image.width, self.seed, epoch, index)
                image = train_view(image, box, flip, self.image_size)
            else:
                image = eval_view(image, self.image_size)
            return TF.pil_to_tensor(image), label
        except ImageDecodeError as exc:  # returned, not raised: raised in a worker, it comes back as "Caught ..."
            return Unreadable(str(exc))


@dataclass(frozen=True)
class Unreadable:
    message: str


@dataclass
class BatchTransform:
    """Encoded files -> uint8 (B, C, S, S) views on `device`, decoded in one batch; the same draws as the PIL path."""

    train: bool
    image_size: int
    seed: int
    device: torch.device

    def __call__(
        self, datas: list[torch.Tensor], paths: list[str], indices: list[int], epochs: list[int]
    ) -> torch.Tensor:
        with one_thread(self.device):  # per-image ops: a second thread only waits (as in TensorLoader)
            return self._views(datas, paths, indices, epochs)

    def _views(
        self, datas: list[torch.Tensor], paths: list[str], indices: list[int], epochs: list[int]
    ) -> torch.Tensor:
        images = decode_batch(datas, paths, self.device)  # each (C, H_i, W_i) uint8
        if not self.train:
            return torch.stack([eval_view(im, self.image_size) for im in images])
        draws = [draw_train(im.shape[-2], im.shape[-1], self.seed, e, i) for im, e, i in zip(images, epochs, indices)]
        x = torch.stack([train_view(im, box, False, self.image_size) for im, (box, _) in zip(images, draws)])
        flips = torch.tensor([f for _, f in draws]).to(self.device, non_blocking=True)
        return torch.where(flips[:, None, None, None], x.flip(-1), x)  # (B, C, S, S)


@dataclass
class Collate:
    """Runs in the worker: stacks PIL views, or lists the bytes and (decode_cpu) decodes them there."""

    transform: BatchTransform | None = None
    decode: bool = False

    def __call__(self, items: list):
        with one_thread(CPU):
            return self._collate(items)

    def _collate(self, items: list):
        bad = [it for it in items if isinstance(it, Unreadable)]
        if bad:
            return bad[0]
        labels = torch.tensor([it[1] for it in items], dtype=torch.int64)
        if self.transform is None:  # PIL views
            return torch.stack([it[0] for it in items]), labels
        batch = ([it[0] for it in items], [it[2] for it in items], [it[3] for it in items], [it[4] for it in items])
        if not self.decode:
            return batch, labels
        try:
            return self.transform(*batch), labels
        except ImageDecodeError as exc:
            return Unreadable(str(exc))


def image_folder(
    path: str | Path, train: bool = True, image_size: int = 224, n: int | None = None, seed: int = 0
) -> FolderImages:
    """Any <path>/<class>/<image> tree; classes are numbered in sorted folder order.

    With n, only a seeded class-stratified subset of n images is kept.
    """
    path = Path(path)
    if not path.is_dir():
        raise FileNotFoundError(f"image folder {path} does not exist; expected {path}/<class>/<image files>")
    classes, class_to_idx = find_classes(str(path))
    samples = make_dataset(str(path), class_to_idx, extensions=IMG_EXTENSIONS)
    if n is not None and n < len(samples):
        keep = sorted(subset_indices(torch.tensor([s[1] for s in samples]), n, seed).tolist())
        samples = [samples[i] for i in keep]
    return FolderImages(samples, classes, train, image_size)


class EpochSampler(Sampler[tuple[int, int]]):
    """(index, epoch) keys in a shuffled (train) or the identity order (test) that depends only on (seed, epoch).

    `shard=(r, N)`: rank r's positions r, r + N, ... of that order (repro.runtime.distributed.shard_positions;
    when shuffled, every rank as many), as TensorLoader shards its epochs.
    """

    def __init__(self, n: int, shuffle: bool, seed: int = 0, shard: tuple[int, int] = (0, 1)) -> None:
        self.n, self.shuffle, self.seed, self.epoch = n, shuffle, seed, 0
        self.rank, self.world = shard
        self.positions = shard_positions(n, self.rank, self.world, even=shuffle).tolist() if self.world > 1 else None

    def __iter__(self) -> Iterator[tuple[int, int]]:
        epoch = self.epoch
        order: Sequence[int] = range(self.n)
        if self.shuffle:
            order = torch.randperm(self.n, generator=epoch_generator(self.seed, epoch)).tolist()
        if self.positions is not None:
            order = [order[p] for p in self.positions]
        return ((i, epoch) for i in order)

    def __len__(self) -> int:
        return self.n if self.positions is None else len(self.positions)


class FolderLoader:
    """(x (B, C, S, S) float32 or `dtype`, y int64 (B,)) batches from an image folder, normalised on `device`.

    Same interface as TensorLoader: len() batches per epoch, set_epoch(e) replays epoch e; `shard=(r, N)`
    with `batch_size` the local batch: rank r's share of every epoch, as TensorLoader's.
    `pipeline` is one of PATHS (None: choose_path(device)); the attribute of that name says which one ran.
    """

    def __init__(
        self,
        dataset: FolderImages,
        batch_size: int,
        *,
        train: bool,
        mean: tuple[float, ...],
        std: tuple[float, ...],
        workers: int | None = None,
        seed: int = 0,
        device: str | torch.device = "cpu",
        channels_last: bool = False,
        pipeline: str | None = None,
        prefetch: int = PREFETCH,
        dtype: torch.dtype = torch.float32,
        shard: tuple[int, int] = (0, 1),
    ) -> None:
        self.device, self.train, self.seed, self.epoch = torch.device(device), train, seed, 0
        self.mean, self.std, self.channels_last, self.dtype = tuple(mean), tuple(std), channels_last, dtype
        self.pipeline = pipeline or choose_path(self.device)
        if self.pipeline not in PATHS:
            raise ValueError(f"unknown input path {self.pipeline!r}; use one of {', '.join(PATHS)}")
        if self.pipeline == "decode_cuda" and self.device.type != "cuda":
            raise ValueError(f"input path decode_cuda needs a CUDA device, not {self.device}")
        self.workers = default_workers() if workers is None else workers
        size = dataset.image_size
        decode_device = self.device if self.pipeline == "decode_cuda" else CPU
        self.transform = BatchTransform(train, size, seed, decode_device)
        if self.pipeline == "pil":
            reader, collate = dataset.reading("pil", seed), Collate()
        else:
            reader, collate = dataset.reading("bytes", seed), Collate(self.transform, self.pipeline == "decode_cpu")
        self.dataset = reader
        self.sampler = EpochSampler(len(reader), shuffle=train, seed=seed, shard=shard)
        self.loader = DataLoader(
            reader,
            batch_size=batch_size,
            sampler=self.sampler,
            num_workers=self.workers,
            collate_fn=collate,
            drop_last=train and len(self.sampler) >= batch_size,
            persistent_workers=self.workers > 0,
            prefetch_factor=prefetch if self.workers > 0 else None,
            pin_memory=self.device.type == "cuda" and self.pipeline != "decode_cuda",
        )

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        return len(self.loader)

    def __iter__(self) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        self.sampler.epoch = self.epoch
        self.epoch += 1
        for batch in self.loader:
            if isinstance(batch, Unreadable):
                raise ImageDecodeError(batch.message)
            x, y = batch
            if self.pipeline == "decode_cuda":
                x = self.transform(*x)  # (B, C, S, S) uint8, decoded and cropped on the GPU
            x = x.to(self.device, non_blocking=True)
            with one_thread(self.device):
                x = normalize(x, self.mean, self.std, self.channels_last, self.dtype)
            yield x, y.to(self.device, non_blocking=True)


def image_folder_loader(
    path: str | Path,
    batch_size: int,
    *,
    train: bool,
    image_size: int = 224,
    mean: tuple[float, ...] | None = None,
    std: tuple[float, ...] | None = None,
    n: int | None = None,
    seed: int = 0,
    **kwargs,
) -> FolderLoader:
    """A FolderLoader over any ImageFolder tree (n: a seeded subset); ImageNet's mean and std unless given."""
    spec = get_dataset("imagenet")
    return FolderLoader(
        image_folder(path, train, image_size, n, seed),
        batch_size,
        train=train,
        mean=mean or spec.mean,
        std=std or spec.std,
        seed=seed,
        **kwargs,
    )


def imagenet_loader(
    root: str | Path | None, split: str, batch_size: int, name: str = "imagenet", **kwargs
) -> FolderLoader:
    """An image_folders dataset's (ImageNet-1K's) train or val ("test" is accepted for val) tree under the data root."""
    if split not in ("train", "val", "test"):
        raise ValueError(f"unknown split {split!r}; use 'train' or 'val'")
    folder = require(name, data_root(root)) / ("train" if split == "train" else "val")
    return image_folder_loader(folder, batch_size, train=split == "train", **kwargs)


def image_folder_loaders(
    name: str,
    root: str | Path | None,
    batch_size: int,
    image_size: int | None = None,
    *,
    seed: int = 0,
    train_samples: int | None = None,
    test_samples: int | None = None,
    **kwargs,
) -> tuple[FolderLoader, FolderLoader]:
    """(train, test) loaders of a dataset kept as image folders (ImageNet-1K), at `image_size`.

    Further keywords (workers, device, channels_last, pipeline, prefetch, dtype, shard) go to FolderLoader.
    """
    spec = get_dataset(name)
    if spec.in_memory:
        raise ValueError(f"{spec.title} is loaded into memory; use repro.data.tensors.load_tensors")
    size = image_size or spec.image_size
    common = dict(image_size=size, mean=spec.mean, std=spec.std, seed=seed, **kwargs)
    return (
        imagenet_loader(root, "train", batch_size, name, n=train_samples, **common),
        imagenet_loader(root, "val", batch_size, name, n=test_samples, **common),
    )
