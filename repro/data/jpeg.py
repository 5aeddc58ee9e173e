"""Reading and decoding image files, with errors that name the file and the cause.

Two decoders: PIL (the reference, in DataLoader workers) and torchvision.io's
decode_jpeg on a list of encoded files at once, on the CPU or on a CUDA device
(nvJPEG). Files decode_jpeg cannot take (a PNG saved as .JPEG, as one ImageNet
training file is; a CMYK JPEG on the GPU) go through decode_image on the CPU.
A file that no decoder reads raises ImageDecodeError naming it, from a worker or not.
"""

from __future__ import annotations

import warnings
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import torch
from PIL import Image
from torchvision.io import ImageReadMode, decode_image, decode_jpeg, read_file

JPEG_MAGIC = b"\xff\xd8"


@contextmanager
def _quiet() -> Iterator[None]:
    """torchvision 0.29 warns on every decode that TorchCodec will take these over; they still
    work, and a warning per image would bury a run's output."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="The image decoding and encoding", category=DeprecationWarning)
        yield


class ImageDecodeError(RuntimeError):
    """An image file that cannot be read or decoded; the message starts with its path."""


def decode_failure(path: str | Path, exc: BaseException, size: int | None = None) -> ImageDecodeError:
    """The error for one file: its path first, then its size and the decoder's own words."""
    cause = f"{type(exc).__name__}: {exc}".rstrip(": ")
    if size is None and Path(path).is_file():
        size = Path(path).stat().st_size
    where = "missing file" if size is None else f"{size:,} bytes"
    return ImageDecodeError(f"{path}: cannot decode this image ({where}; {cause})")


def open_rgb(path: str | Path) -> Image.Image:
    """The decoded RGB image (greyscale and CMYK converted), or ImageDecodeError naming the file."""
    try:
        with Image.open(path) as image:
            return image.convert("RGB")
    except Exception as exc:  # UnidentifiedImageError, truncated data, OSError
        raise decode_failure(path, exc) from exc


def read_bytes(path: str | Path) -> torch.Tensor:
    """The encoded file as uint8 (L,), or ImageDecodeError naming it."""
    try:
        with _quiet():
            data = read_file(str(path))
    except Exception as exc:
        raise decode_failure(path, exc) from exc
    if data.numel() == 0:
        raise decode_failure(path, ValueError("the file is empty"), 0)
    return data


def _is_jpeg(data: torch.Tensor) -> bool:
    return data.numel() > 2 and bytes(data[:2].tolist()) == JPEG_MAGIC


def _decode_one_cpu(data: torch.Tensor, path: str) -> torch.Tensor:
    try:
        with _quiet():
            return decode_image(data, mode=ImageReadMode.RGB)
    except Exception as exc:
        raise decode_failure(path, exc, data.numel()) from exc


def _try_jpeg(data: torch.Tensor, device: torch.device) -> torch.Tensor | None:
    try:
        with _quiet():
            return decode_jpeg(data, mode=ImageReadMode.RGB, device=device)
    except Exception:
        return None


def decode_batch(datas: list[torch.Tensor], paths: list[str], device: torch.device) -> list[torch.Tensor]:
    """Encoded files -> RGB uint8 (C, H_i, W_i) on `device`, one batched decode_jpeg call for the JPEGs."""
    out: list[torch.Tensor | None] = [None] * len(datas)
    jpegs = [i for i, d in enumerate(datas) if _is_jpeg(d)]
    if jpegs:
        try:
            with _quiet():
                decoded = decode_jpeg([datas[i] for i in jpegs], mode=ImageReadMode.RGB, device=device)
        except Exception:  # one bad file fails the whole call: decode one by one to find it
            decoded = [_try_jpeg(datas[i], device) for i in jpegs]
        for i, image in zip(jpegs, decoded):
            out[i] = image
    return [  # not a JPEG, or its batch failed: the CPU decoder, then the device
        _decode_one_cpu(datas[i], paths[i]).to(device, non_blocking=True) if image is None else image
        for i, image in enumerate(out)
    ]
