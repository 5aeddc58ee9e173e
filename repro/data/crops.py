"""ImageNet-style views of one image: the random resized crop + flip (train) and resize + centre crop (eval).

Section 4.1's "random crops, flips" read ImageNet-style (an assumption, see
repro.data.imagenet). The crop draw is torchvision's RandomResizedCrop.get_params
(area scale (0.08, 1), log-uniform aspect ratio (3/4, 4/3), 10 tries, then the
centre-crop fallback) written once with an explicit generator; both input paths
(PIL in workers, decoded tensors on the device) take their crops from it.
Every image's draw comes from its own generator seeded by (seed, epoch, index),
so the crops do not depend on the path, the worker count or the batch.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass

import torch
import torchvision.transforms.v2.functional as TF

SCALE = (0.08, 1.0)
RATIO = (3 / 4, 4 / 3)
TRIES = 10


@dataclass(frozen=True)
class CropBox:
    top: int
    left: int
    height: int
    width: int


def sample_generator(seed: int, epoch: int, index: int) -> torch.Generator:
    """The generator of one image's draws in one epoch.

    Hashed: a CPU generator keeps only 32 bits of its seed, so any linear mix of
    (seed, epoch, index) would give image i + k in epoch e the draws of image i in epoch e + 1.
    """
    key = hashlib.blake2b(f"{seed}/{epoch}/{index}".encode(), digest_size=8).digest()
    return torch.Generator().manual_seed(int.from_bytes(key, "little"))


def draw_resized_crop(
    height: int,
    width: int,
    generator: torch.Generator | None = None,
    scale: tuple[float, float] = SCALE,
    ratio: tuple[float, float] = RATIO,
) -> CropBox:
    """torchvision's RandomResizedCrop.get_params, same draws in the same order (generator None: the global one)."""
    area = height * width
    log_ratio = torch.log(torch.tensor(ratio)).tolist()  # the float32 logs, as torchvision's
    for _ in range(TRIES):
        target_area = area * torch.empty(1).uniform_(scale[0], scale[1], generator=generator).item()
        aspect = torch.exp(torch.empty(1).uniform_(log_ratio[0], log_ratio[1], generator=generator)).item()
        w = int(round(math.sqrt(target_area * aspect)))
        h = int(round(math.sqrt(target_area / aspect)))
        if 0 < w <= width and 0 < h <= height:
            top = torch.randint(0, height - h + 1, size=(1,), generator=generator).item()
            left = torch.randint(0, width - w + 1, size=(1,), generator=generator).item()
            return CropBox(int(top), int(left), h, w)
    in_ratio = width / height  # fallback: the largest centred box with the ratio clamped into range
    if in_ratio < min(ratio):
        w, h = width, int(round(width / min(ratio)))
    elif in_ratio > max(ratio):
        w, h = int(round(height * max(ratio))), height
    else:
        w, h = width, height
    return CropBox((height - h) // 2, (width - w) // 2, h, w)


def draw_train(height: int, width: int, seed: int, epoch: int, index: int) -> tuple[CropBox, bool]:
    """One image's crop box and flip, in RandomResizedCrop then RandomHorizontalFlip's order."""
    g = sample_generator(seed, epoch, index)
    box = draw_resized_crop(height, width, g)
    return box, bool(torch.rand(1, generator=g).item() < 0.5)


def train_view(image, box: CropBox, flip: bool, size: int):
    """Crop `box`, resize to (size, size) bilinear with antialiasing, mirror if `flip`: PIL image or (C, H, W)."""
    out = TF.resized_crop(image, box.top, box.left, box.height, box.width, [size, size], antialias=True)
    return TF.horizontal_flip(out) if flip else out


def eval_size(size: int) -> int:
    """The shorter side before the centre crop: ImageNet's 256 for 224."""
    return round(size * 256 / 224)


def eval_view(image, size: int):
    """Shorter side to eval_size(size), then the centre (size, size): PIL image or (C, H, W)."""
    return TF.center_crop(TF.resize(image, [eval_size(size)], antialias=True), [size, size])
