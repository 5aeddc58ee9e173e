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

Making the images of a full-size split takes seconds on the CPU (docs/measurements.md), for every run. A
split of CACHE_FROM values or more is therefore kept in the cache (repro.core.cache, folder "synthetic"),
keyed by the dataset, split, size, seed, count, torch's version and this module's source: a later run loads
the same tensors, bit for bit. The split is not made on the device instead: CUDA's generator draws other
numbers than the CPU's, and so other images.
Legend: N images, K classes, C channels, G grid, S image size.
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

from repro.core.cache import cache_dir, write_torch
from repro.core.settings import DEFAULT_CACHE
from repro.data.augment import crop_flip, crop_padding, draw_crop_flip
from repro.data.specs import get_dataset

GRID = 4  # prototype resolution
NUISANCE = 1.0  # amplitude of each image's own random layout, relative to the class layout
NOISE = 0.2  # std of per-pixel noise, in [0, 1] intensity units
CACHE_FROM = 2**24  # values (N x C x S x S) from which a split is cached: below, making it takes well under a second


def _seed(*parts: object) -> int:
    return int.from_bytes(hashlib.sha256("/".join(map(str, parts)).encode()).digest()[:7], "little")


def prototypes(name: str) -> torch.Tensor:
    """(K, C, G, G) class layouts in [0, 1], fixed by the dataset's name."""
    spec = get_dataset(name)
    g = torch.Generator().manual_seed(_seed("prototypes", name))
    return torch.rand(spec.num_classes, spec.channels, GRID, GRID, generator=g)


def synthetic_tensors(
    name: str, n: int, seed: int = 0, image_size: int | None = None, split: str = "train", cache: Path = DEFAULT_CACHE
) -> tuple[torch.Tensor, torch.Tensor]:
    """(images uint8 (n, C, S, S), labels int64 (n,)) shaped like dataset `name`, deterministic per
    (name, seed, split); classes are balanced to within one image. Large splits come from the cache folder."""
    spec = get_dataset(name)
    if split not in ("train", "test"):
        raise ValueError(f"unknown split {split!r}; use 'train' or 'test'")
    S = image_size or spec.image_size
    if n * spec.channels * S * S < CACHE_FROM:
        return make_tensors(name, n, seed, S, split)
    path = cache_path(name, n, seed, S, split, cache)
    if path.is_file():
        try:
            saved = torch.load(path, mmap=True, weights_only=True)
            return saved["images"], saved["labels"]
        except Exception as exc:  # damaged or truncated: made again and rewritten
            print(f"warning: ignoring the damaged cache entry {path} ({type(exc).__name__}: {exc})", file=sys.stderr)
    images, labels = make_tensors(name, n, seed, S, split)
    _save({"images": images, "labels": labels}, path)
    return images, labels


def cache_path(name: str, n: int, seed: int, image_size: int, split: str, cache: Path = DEFAULT_CACHE) -> Path:
    """Where a split is cached in the cache folder `cache`: named by what it is, keyed by what could change its
    pixels."""
    code = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()
    key = hashlib.sha256(f"{name}/{split}/{n}/{seed}/{image_size}/{torch.__version__}/{code}".encode()).hexdigest()
    return cache_dir(cache, "synthetic") / f"{name}-{split}-{n}x{image_size}px-seed{seed}-{key[:16]}.pt"


def _save(obj: dict, path: Path) -> None:
    """Atomically (temporary file, then rename); a cache that cannot be written only costs making it again."""
    try:
        write_torch(path, obj)
    except OSError as exc:
        print(f"warning: cannot write the cache entry {path} ({exc}); continuing without it", file=sys.stderr)


def make_tensors(name: str, n: int, seed: int, S: int, split: str) -> tuple[torch.Tensor, torch.Tensor]:
    """The split made afresh (synthetic_tensors' documentation)."""
    spec = get_dataset(name)
    margin = crop_padding(S)
    protos = prototypes(name)
    g = torch.Generator().manual_seed(_seed("samples", name, split, seed, S))
    labels = (torch.arange(n) % spec.num_classes)[torch.randperm(n, generator=g)]
    images = torch.empty(n, spec.channels, S, S, dtype=torch.uint8)
    chunk = max(1, 2**22 // (spec.channels * (S + 2 * margin) ** 2))
    for start in range(0, n, chunk):
        y = labels[start : start + chunk]
        m = len(y)
        own = torch.rand(m, spec.channels, GRID, GRID, generator=g)
        layout = (protos[y] + NUISANCE * own) / (1 + NUISANCE)  # (m, C, G, G)
        big = F.interpolate(layout, size=(S + 2 * margin,) * 2, mode="bicubic", align_corners=False)
        dy, dx, flips = draw_crop_flip(m, margin, g)
        x = crop_flip(big, (S, S), dy, dx, flips)  # (m, C, S, S)
        contrast = 0.7 + 0.6 * torch.rand(m, 1, 1, 1, generator=g)
        brightness = 0.2 * torch.rand(m, 1, 1, 1, generator=g) - 0.1
        x = (x - 0.5) * contrast + 0.5 + brightness + NOISE * torch.randn(x.shape, generator=g)
        images[start : start + m] = (x.clamp(0, 1) * 255).round().to(torch.uint8)
    return images, labels
