"""Tiny-ImageNet (200 classes, 64x64) read from the official zip's layout.

Training images sit in `train/<wnid>/images/`; validation images all sit in
`val/images/` and take their class from `val/val_annotations.txt`. Class indices
follow the sorted wnids, as an ImageFolder over the same classes would number them.
The paper reports accuracy on the validation split (its test labels are not public).
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import torch

from repro.data.jpeg import open_rgb
from repro.data.layout import require

IMAGE_SIZE = 64


def tiny_imagenet_files(folder: Path, train: bool) -> tuple[list[Path], list[int]]:
    """Every image of one split with its class index, without decoding."""
    wnids = sorted((folder / "wnids.txt").read_text().split())
    index = {w: i for i, w in enumerate(wnids)}
    paths: list[Path] = []
    labels: list[int] = []
    if train:
        for w in wnids:
            files = sorted((folder / "train" / w / "images").glob("*.JPEG"))
            paths += files
            labels += [index[w]] * len(files)
    else:
        annotations = folder / "val" / "val_annotations.txt"
        for n, line in enumerate(annotations.read_text().splitlines(), 1):
            if line.strip():
                fields = line.split("\t")
                if len(fields) < 2 or fields[1] not in index:
                    raise ValueError(
                        f"{annotations}, line {n}: expected '<file>\\t<wnid>\\t...' with a wnid "
                        f"of wnids.txt, got {line[:80]!r}"
                    )
                paths.append(folder / "val" / "images" / fields[0])
                labels.append(index[fields[1]])
    return paths, labels


def decode_file(path: Path) -> torch.Tensor:
    """One 64x64 image as uint8 (C, H, W); the error names the file (ImageDecodeError, or ValueError for its size)."""
    image = open_rgb(path)  # a few of the JPEGs are greyscale: converted to RGB
    if image.size != (IMAGE_SIZE, IMAGE_SIZE):
        raise ValueError(f"{path}: expected a {IMAGE_SIZE}x{IMAGE_SIZE} image, got {image.size[0]}x{image.size[1]}")
    rgb = np.array(image)  # (H, W, C)
    return torch.from_numpy(rgb).permute(2, 0, 1)  # (C, H, W)


def tiny_imagenet_tensors(
    root: str | Path | None, train: bool, workers: int | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """(images uint8 (N, 3, 64, 64), labels int64 (N,)), decoded on `workers` threads (PIL frees the GIL)."""
    paths, labels = tiny_imagenet_files(require("tiny_imagenet", root), train)
    images = torch.empty(len(paths), 3, IMAGE_SIZE, IMAGE_SIZE, dtype=torch.uint8)
    with ThreadPoolExecutor(workers or os.cpu_count() or 1) as pool:
        for i, image in enumerate(pool.map(decode_file, paths)):
            images[i] = image
    return images, torch.tensor(labels, dtype=torch.int64)
