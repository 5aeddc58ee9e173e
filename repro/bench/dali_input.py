"""NVIDIA DALI's ImageNet training input, where DALI is installed: the input paths' check measures it.

The usual DALI recipe for ImageNet training: files read and shuffled by DALI, decoded with a random crop
of area (0.08, 1) and aspect ratio (3/4, 4/3) by nvJPEG ("mixed": the GPU), resized to S x S, mirrored at
random and normalised with ImageNet's mean and std, batches of (B, S, S, C) handed to torch as channels-last
(B, C, S, S) tensors. With `device` a CPU the same pipeline decodes on DALI's CPU threads (no GPU needed):
the nearest CPU equivalent, which the tests run where DALI is installed.

Not a run's input path: DALI draws its crops and flips from its own generator, not from the per-image
draws that every path of repro.data.imagenet shares (repro.data.crops), so a run fed by DALI would see
other augmentations than the same run fed by any other path.
"""

from __future__ import annotations

import importlib.util
from typing import Iterator

import torch

PACKAGE = "nvidia-dali-cuda130"  # the wheel for CUDA 13, as torch's


def missing() -> str:
    """Why DALI cannot run here, or "" when it can be imported."""
    try:
        found = importlib.util.find_spec("nvidia.dali") is not None
    except (ImportError, ValueError):  # no `nvidia` namespace at all
        found = False
    return "" if found else f"nvidia.dali is not installed (pip install {PACKAGE})"


class DaliLoader:
    """(x (B, C, S, S) float32 channels-last, y int64 (B,)) batches on `device`, from DALI; len() batches an epoch."""

    def __init__(
        self,
        samples: list[tuple[str, int]],
        batch_size: int,
        image_size: int,
        device: torch.device,
        threads: int,
        mean: tuple[float, ...],
        std: tuple[float, ...],
        seed: int = 0,
    ) -> None:
        from nvidia.dali import fn, pipeline_def, types
        from nvidia.dali.plugin.pytorch import DALIGenericIterator, LastBatchPolicy

        gpu = device.type == "cuda"
        files, labels = [s[0] for s in samples], [s[1] for s in samples]

        @pipeline_def
        def pipeline():
            jpegs, label = fn.readers.file(files=files, labels=labels, random_shuffle=True, name="reader")
            images = fn.decoders.image_random_crop(
                jpegs,
                device="mixed" if gpu else "cpu",
                output_type=types.RGB,
                random_area=[0.08, 1.0],
                random_aspect_ratio=[3 / 4, 4 / 3],
                num_attempts=10,
            )
            images = fn.resize(images, resize_x=image_size, resize_y=image_size, antialias=True)
            images = fn.crop_mirror_normalize(
                images,
                dtype=types.FLOAT,
                output_layout="HWC",
                mean=[m * 255 for m in mean],
                std=[s * 255 for s in std],
                mirror=fn.random.coin_flip(probability=0.5),
            )
            return images, label

        self.batch_size, self.device = batch_size, device
        self.steps = len(samples) // batch_size
        pipe = pipeline(
            batch_size=batch_size,
            num_threads=max(1, threads),
            seed=seed,
            device_id=(device.index or 0) if gpu else None,
        )
        pipe.build()
        self.iterator = DALIGenericIterator(
            [pipe], ["x", "y"], reader_name="reader", last_batch_policy=LastBatchPolicy.DROP, auto_reset=True
        )
        self.pipeline = "dali"
        self.workers = threads

    def set_epoch(self, epoch: int) -> None:
        pass  # DALI reshuffles each epoch from its own seed

    def __len__(self) -> int:
        return self.steps

    def __iter__(self) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        for i, out in enumerate(self.iterator):
            if i >= self.steps:
                break
            batch = out[0]
            x = batch["x"].to(self.device, non_blocking=True).permute(0, 3, 1, 2)  # (B, S, S, C) -> channels-last
            yield x, batch["y"].reshape(-1).to(self.device, dtype=torch.int64, non_blocking=True)
