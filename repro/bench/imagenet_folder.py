"""A generated ImageNet-format folder: 1,000 class folders of JPEGs at the real training images' typical sizes.

The layout is the one repro.data.layout checks and repro.data.imagenet reads (imagenet/train/<wnid>/*.JPEG and
imagenet/val/<wnid>/*.JPEG, as many class folders in each), so the input paths measured on it run a run's
code. ImageNet's training images are mostly 500 pixels on the long side (500x375, 500x333, 375x500), a
mean of about 400x350, JPEG quality about 90, about 110 kB each (0.8 bytes a pixel); here:

    long side   500 pixels in 60% of the images, else uniform in [LONG_MIN, 500)
    aspect      4:3 (half), 3:2, 5:4, 1:1 or 16:9; one image in four portrait
    content     a smooth random colour field (a low-resolution layout upsampled bicubically) plus grain,
                of GRAIN grey levels: about 0.7 bytes a pixel, 95 kB a file

`FolderSpec.toy()` is the same folder at a few dozen pixels, for a dry run on a CPU.
"""

from __future__ import annotations

import os
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

ASPECTS = ((4 / 3, 0.5), (3 / 2, 0.2), (5 / 4, 0.1), (1.0, 0.15), (16 / 9, 0.05))  # (long / short, share)
PORTRAIT = 0.25
LONG_FULL = 500
GRAIN = 28.0  # std of the grain, in grey levels: ~0.7 bytes a pixel at quality 90, as photographs
LAYOUT = 48  # the colour field's resolution before upsampling


@dataclass(frozen=True)
class FolderSpec:
    classes: int = 1000
    per_class: int = 5  # training images per class; validation: one per class
    long_side: int = LONG_FULL  # the usual long side; others are drawn below it
    long_min: int = 200
    quality: int = 90
    seed: int = 0

    @classmethod
    def toy(cls) -> "FolderSpec":
        """1,000 classes of one image each at 24-40 pixels: the layout, at a dry run's cost."""
        return cls(per_class=1, long_side=40, long_min=24)


def image_size(rng: np.random.Generator, spec: FolderSpec) -> tuple[int, int]:
    """(width, height) of one image."""
    long = spec.long_side if rng.random() < 0.6 else int(rng.integers(spec.long_min, spec.long_side))
    ratios, shares = zip(*ASPECTS)
    ratio = ratios[int(rng.choice(len(ratios), p=np.array(shares)))]
    short = max(1, round(long / ratio))
    return (short, long) if rng.random() < PORTRAIT else (long, short)


def _image(rng: np.random.Generator, width: int, height: int, grain: np.ndarray) -> Image.Image:
    layout = Image.fromarray(rng.integers(0, 256, (LAYOUT, LAYOUT, 3), dtype=np.uint8))
    field = np.asarray(layout.resize((width, height), Image.Resampling.BICUBIC), dtype=np.float32)
    top, left = (int(rng.integers(0, g - s + 1)) for g, s in zip(grain.shape[:2], (height, width)))
    pixels = field + grain[top : top + height, left : left + width]  # (H, W, 3)
    return Image.fromarray(pixels.clip(0, 255).astype(np.uint8))


def _write_class(root: Path, spec: FolderSpec, c: int) -> tuple[int, int, int, int]:
    """Class c's training and validation images; (images, pixels wide, pixels high, bytes) summed."""
    rng = np.random.default_rng([spec.seed, c])
    side = spec.long_side
    grain = rng.normal(0, GRAIN, (side, side, 3)).astype(np.float32)
    wnid = f"n{c:08d}"
    n = widths = heights = size = 0
    for split, count in (("train", spec.per_class), ("val", 1)):
        folder = root / split / wnid
        folder.mkdir(parents=True, exist_ok=True)
        for i in range(count):
            w, h = image_size(rng, spec)
            path = folder / f"{wnid}_{i}.JPEG"
            _image(rng, w, h, grain).save(path, quality=spec.quality)
            if split == "train":
                n, widths, heights, size = n + 1, widths + w, heights + h, size + path.stat().st_size
    return n, widths, heights, size


def write_imagenet_folder(
    data_root: str | Path, spec: FolderSpec = FolderSpec(), processes: int | None = None
) -> dict[str, Any]:
    """Write <data_root>/imagenet/{train,val}/<wnid>/ and say what was written: {"images" (training), "classes",
    "mean_width", "mean_height", "mean_bytes", "quality", "spec"}; deterministic per spec."""
    root = Path(data_root) / "imagenet"
    processes = processes or max(1, min(len(os.sched_getaffinity(0)), 16))
    if processes > 1:
        with ProcessPoolExecutor(processes) as pool:
            parts = list(
                pool.map(
                    _write_class,
                    [root] * spec.classes,
                    [spec] * spec.classes,
                    range(spec.classes),
                    chunksize=max(1, spec.classes // (4 * processes)),
                )
            )
    else:
        parts = [_write_class(root, spec, c) for c in range(spec.classes)]
    n, widths, heights, size = (sum(p[i] for p in parts) for i in range(4))
    return {
        "images": n,
        "classes": spec.classes,
        "mean_width": widths / n,
        "mean_height": heights / n,
        "mean_bytes": size / n,
        "quality": spec.quality,
        "spec": asdict(spec),
    }
