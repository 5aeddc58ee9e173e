"""Seeded synthetic stand-ins for the paper's datasets, for the `smoke` profile.

Each class has a prototype: a coarse G x G colour layout, drawn from a generator
seeded by the dataset's name (not the run's seed), so train and test splits, and
every seed, share the same classes. An image is its class's layout, smoothly
upsampled, shifted by up to H / 8 pixels and mirrored at random (so the training
crops and flips do not change the distribution), with a random contrast and
brightness, a nuisance layout of its own as strong as the class's, and pixel
noise. A two-conv CNN reaches about 80% on 10 classes after 124 Adam steps on
2000 images, and 40-50x chance on 100 or 200 classes after 184 steps on 3000,
so models still differ in how much of it they learn.
Legend: N images, K classes, C channels, G grid, S image size.
"""

from __future__ import annotations

import hashlib

import torch
import torch.nn.functional as F

from repro.data.augment import crop_flip, crop_padding, draw_crop_flip
from repro.data.specs import get_dataset

GRID = 4  # prototype resolution
NUISANCE = 1.0  # amplitude of each image's own random layout, relative to the class layout
NOISE = 0.2  # std of per-pixel noise, in [0, 1] intensity units


def _seed(*parts: object) -> int:
    return int.from_bytes(hashlib.sha256("/".join(map(str, parts)).encode()).digest()[:7], "little")


def prototypes(name: str) -> torch.Tensor:
    """(K, C, G, G) class layouts in [0, 1], fixed by the dataset's name."""
    spec = get_dataset(name)
    g = torch.Generator().manual_seed(_seed("prototypes", name))
    return torch.rand(spec.num_classes, spec.channels, GRID, GRID, generator=g)


def synthetic_tensors(name: str, n: int, seed: int = 0, image_size: int | None = None,
                      split: str = "train") -> tuple[torch.Tensor, torch.Tensor]:
    """(images uint8 (n, C, S, S), labels int64 (n,)) shaped like dataset `name`, deterministic per
    (name, seed, split); classes are balanced to within one image."""
    spec = get_dataset(name)
    if split not in ("train", "test"):
        raise ValueError(f"unknown split {split!r}; use 'train' or 'test'")
    S = image_size or spec.image_size
    margin = crop_padding(S)
    protos = prototypes(name)
    g = torch.Generator().manual_seed(_seed("samples", name, split, seed, S))
    labels = (torch.arange(n) % spec.num_classes)[torch.randperm(n, generator=g)]
    images = torch.empty(n, spec.channels, S, S, dtype=torch.uint8)
    chunk = max(1, 2**22 // (spec.channels * (S + 2 * margin) ** 2))
    for start in range(0, n, chunk):
        y = labels[start:start + chunk]
        m = len(y)
        own = torch.rand(m, spec.channels, GRID, GRID, generator=g)
        layout = (protos[y] + NUISANCE * own) / (1 + NUISANCE)  # (m, C, G, G)
        big = F.interpolate(layout, size=(S + 2 * margin,) * 2, mode="bicubic", align_corners=False)
        dy, dx, flips = draw_crop_flip(m, margin, g)
        x = crop_flip(big, (S, S), dy, dx, flips)  # (m, C, S, S)
        contrast = 0.7 + 0.6 * torch.rand(m, 1, 1, 1, generator=g)
        brightness = 0.2 * torch.rand(m, 1, 1, 1, generator=g) - 0.1
        x = (x - 0.5) * contrast + 0.5 + brightness + NOISE * torch.randn(x.shape, generator=g)
        images[start:start + m] = (x.clamp(0, 1) * 255).round().to(torch.uint8)
    return images, labels
