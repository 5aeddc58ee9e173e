"""`repro bench data --dataset imagenet`: images/s of each ImageFolder input path, no model.

The paths are repro.data.imagenet's: pil (PIL decode and crop per image in the
workers, the reference), decode_cpu (batched decode_jpeg in the workers) and, on
CUDA, decode_cuda (workers read bytes, nvJPEG decodes on the GPU). Each ends with
normalised training batches (random resized crop 224, flip) on `device`. Workers
are persistent, so a warm-up epoch starts them and is not timed; rounds then
alternate between the paths so that machine noise falls on all of them, and each
path reports its median round. Without a folder, JPEG fixtures of ImageNet's
typical size (500x375) are written first (write_jpeg_fixtures).
"""

from __future__ import annotations

import statistics
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch
from PIL import Image

from repro.data.imagenet import default_workers, image_folder_loader


@dataclass(frozen=True)
class DataPathRow:
    pipeline: str
    device: str
    workers: int
    batch_size: int
    images: int  # per timed round (one epoch)
    images_per_s: float  # median round
    ratio_to_pil: float | None  # images_per_s / the pil path's; None when pil was not run
    rounds: list[float] = field(default_factory=list)  # images/s of each round

    def to_dict(self) -> dict:
        return asdict(self)


def write_jpeg_fixtures(
    folder: str | Path,
    n: int = 64,
    classes: int = 4,
    size: tuple[int, int] = (500, 375),
    seed: int = 0,
    quality: int = 90,
) -> Path:
    """n JPEGs in an ImageFolder tree of `classes` classes: gradients plus noise, a third of them portrait."""
    folder = Path(folder)
    rng = np.random.default_rng(seed)
    w, h = size
    y, x = np.mgrid[0:h, 0:w]
    for i in range(n):
        c = i % classes
        (folder / f"class{c}").mkdir(parents=True, exist_ok=True)
        rgb = np.stack([(x * 255 / w + 37 * i) % 256, y * 255 / h, ((x + y) * 0.3 + 60 * c) % 256], -1)
        image = Image.fromarray((rgb + rng.normal(0, 20, rgb.shape)).clip(0, 255).astype(np.uint8))
        if i % 3 == 1:
            image = image.transpose(Image.Transpose.ROTATE_90)
        image.save(folder / f"class{c}" / f"{i:05d}.JPEG", quality=quality)
    return folder


def default_pipelines(device: torch.device) -> list[str]:
    return ["pil", "decode_cpu"] + (["decode_cuda"] if device.type == "cuda" else [])


def _epoch_rate(loader, device: torch.device) -> float:
    start, seen = time.perf_counter(), 0
    for _, y in loader:
        seen += len(y)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return seen / (time.perf_counter() - start)


def bench_imagenet(
    folder: str | Path,
    device: str = "cpu",
    batch_size: int = 32,
    workers: int | None = None,
    repeats: int = 3,
    image_size: int = 224,
    pipelines: list[str] | None = None,
    seed: int = 0,
) -> list[DataPathRow]:
    """One row per input path: median images/s over `repeats` training epochs of `folder`, and its ratio to pil."""
    dev = torch.device(device)
    workers = default_workers() if workers is None else workers
    names = pipelines or default_pipelines(dev)
    loaders = {
        p: image_folder_loader(
            folder, batch_size, train=True, image_size=image_size, workers=workers, seed=seed, device=dev, pipeline=p
        )
        for p in names
    }
    for loader in loaders.values():  # warm-up: worker start-up, allocator, the GPU decoder's handles
        _epoch_rate(loader, dev)
    rates: dict[str, list[float]] = {p: [] for p in names}
    for r in range(repeats):
        for p in names[r % len(names) :] + names[: r % len(names)]:  # rotate who goes first
            rates[p].append(_epoch_rate(loaders[p], dev))
    median = {p: statistics.median(v) for p, v in rates.items()}
    rows = []
    for p in names:
        ratio = median[p] / median["pil"] if "pil" in median else None
        rows.append(
            DataPathRow(p, str(dev), workers, batch_size, len(loaders[p]) * batch_size, median[p], ratio, rates[p])
        )
    return rows
