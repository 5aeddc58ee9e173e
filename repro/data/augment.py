"""The paper's "standard augmentations (flips, random crops)" (Section 4.1), on whole uint8 batches.

A random crop with zero padding P and a horizontal flip with probability 1/2, as
torchvision's RandomCrop(H, padding=P) and RandomHorizontalFlip do image by image,
done here for a whole batch at once, on whatever device the batch is on (two
equivalent forms: one gather on a GPU, block copies grouped by offset on a CPU).
Random draws come from a CPU torch.Generator, so a seed gives the same
augmentation on every device. Legend: B batch, C channels, H height, W width,
P padding.
"""

from __future__ import annotations

from functools import lru_cache

import torch
import torch.nn.functional as F


def crop_padding(image_size: int) -> int:
    """P = H / 8: 4 at 32x32 (the usual CIFAR recipe), 8 at 64x64 (Tiny-ImageNet); an assumption."""
    return image_size // 8


def draw_crop_flip(
    n: int, padding: int, generator: torch.Generator | None = None, flip: bool = True
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Per-image (dy, dx) crop offsets in [0, 2P] and flip flags, each (n,), on the CPU."""
    dy = torch.randint(0, 2 * padding + 1, (n,), generator=generator)
    dx = torch.randint(0, 2 * padding + 1, (n,), generator=generator)
    flips = torch.rand(n, generator=generator) < 0.5
    return dy, dx, flips & flip


def crop_flip_gather(
    images: torch.Tensor, size: tuple[int, int], dy: torch.Tensor, dx: torch.Tensor, flips: torch.Tensor
) -> torch.Tensor:
    """Crop window size=(H, W) at (dy, dx) from each image, mirrored where `flips`, with one gather.

    images (B, C, H', W') -> (B, C, H, W). A single gather for the batch: the fast form on a GPU.
    """
    B = images.shape[0]
    H, W = size
    dev = images.device
    dy, dx, flips = dy.to(dev), dx.to(dev), flips.to(dev)
    col = torch.arange(W, device=dev)
    rows = dy[:, None] + torch.arange(H, device=dev)  # (B, H)
    cols = dx[:, None] + torch.where(flips[:, None], col.flip(0), col)  # (B, W)
    b = torch.arange(B, device=dev)[:, None, None]
    out = images[b, :, rows[:, :, None], cols[:, None, :]]  # (B, H, W, C)
    return out.permute(0, 3, 1, 2).contiguous()  # (B, C, H, W)


def crop_flip_grouped(
    images: torch.Tensor, size: tuple[int, int], dy: torch.Tensor, dx: torch.Tensor, flips: torch.Tensor
) -> torch.Tensor:
    """Same result as crop_flip_gather, as one slice copy per distinct (dy, dx): the fast form on a CPU.

    Per-element gathers are slow on a CPU; sorting the batch by offset turns the
    crop into at most (2P + 1)^2 contiguous block copies, whatever B is.
    """
    B, C = images.shape[:2]
    H, W = size
    dy, dx = dy.cpu(), dx.cpu()
    K = int(max(dy.max(), dx.max())) + 1 if B else 1
    key = dy * K + dx
    order = torch.argsort(key, stable=True)
    counts = torch.bincount(key, minlength=K * K).tolist()
    ordered = images.index_select(0, order.to(images.device))
    out = torch.empty(B, C, H, W, dtype=images.dtype, device=images.device)
    start = 0
    for k, count in enumerate(counts):
        if count:
            y, x = divmod(k, K)
            out[start : start + count] = ordered[start : start + count, :, y : y + H, x : x + W]
            start += count
    out = out.index_select(0, torch.argsort(order).to(images.device))  # back to the batch's order
    return torch.where(flips.to(images.device)[:, None, None, None], out.flip(3), out)


def crop_flip(
    images: torch.Tensor, size: tuple[int, int], dy: torch.Tensor, dx: torch.Tensor, flips: torch.Tensor
) -> torch.Tensor:
    """Crop window size=(H, W) at (dy, dx) from each image, mirrored where `flips`: (B, C, H', W') -> (B, C, H, W)."""
    if images.device.type == "cpu":
        return crop_flip_grouped(images, size, dy, dx, flips)
    return crop_flip_gather(images, size, dy, dx, flips)


def random_crop_flip(
    images: torch.Tensor, padding: int, generator: torch.Generator | None = None, flip: bool = True
) -> torch.Tensor:
    """Zero-pad by P, crop back to (H, W) at a random offset, flip half: (B, C, H, W) uint8 -> same."""
    B, _, H, W = images.shape
    dy, dx, flips = draw_crop_flip(B, padding, generator, flip)
    padded = F.pad(images, (padding,) * 4) if padding else images  # (B, C, H + 2P, W + 2P)
    return crop_flip(padded, (H, W), dy, dx, flips)


@lru_cache(maxsize=32)
def _affine(mean: tuple[float, ...], std: tuple[float, ...], device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """(scale, shift), each (1, C, 1, 1) on `device`; cached so that a batch makes no host-to-device copy."""
    std_t = torch.tensor(std, device=device)
    scale = (1.0 / (255.0 * std_t)).view(1, -1, 1, 1)
    shift = (torch.tensor(mean, device=device) / std_t).view(1, -1, 1, 1)
    return scale, shift


def normalize(
    images: torch.Tensor,
    mean: tuple[float, ...],
    std: tuple[float, ...],
    channels_last: bool = False,
    dtype: torch.dtype = torch.float32,
) -> torch.Tensor:
    """uint8 (B, C, H, W) -> (x / 255 - mean) / std per channel, computed in float32, returned as `dtype`."""
    scale, shift = _affine(tuple(mean), tuple(std), images.device)
    fmt = torch.channels_last if channels_last else torch.contiguous_format
    x = images.to(torch.float32).contiguous(memory_format=fmt)
    x = x.mul_(scale).sub_(shift)
    return x if dtype == torch.float32 else x.to(dtype)
