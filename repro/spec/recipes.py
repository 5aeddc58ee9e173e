"""The paper's training recipe for each dataset (Section 4.1), as data: epochs, optimizer, learning rate, batch.

repro.plan.run_config applies them (with a profile) to make every run's config; a profile's departures
from the paper's protocol (repro.spec.profiles.Profile.departures) name their numbers. `at_last_epoch` sets a
model's schedules to the recipe's last epoch: how it infers after training (FLOP counts, latency).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class Recipe:
    epochs: int
    optimizer: Literal["adam", "sgd"]
    lr: float
    momentum: float = 0.0
    schedule: Literal["constant", "cosine"] = "constant"
    batch_size: int = 128
    backbone_lr_scale: float = 1.0  # pretrained backbones: 0.1 x the head's lr
    bf16: bool = False  # autocast to bfloat16 (CUDA only)


# Section 4.1: CIFAR 50 epochs, Tiny-ImageNet 80, ImageNet 30; Adam lr 1e-3 for
# CIFAR/Tiny-ImageNet; SGD lr 1e-2, momentum 0.9, cosine for ImageNet, whose
# pretrained backbones train at 0.1x the head's lr with bf16 AMP and batch 256.
# The CIFAR/Tiny-ImageNet batch size is not stated: 128 is our choice.
RECIPES: dict[str, Recipe] = {
    "cifar10": Recipe(epochs=50, optimizer="adam", lr=1e-3),
    "cifar100": Recipe(epochs=50, optimizer="adam", lr=1e-3),
    "tiny_imagenet": Recipe(epochs=80, optimizer="adam", lr=1e-3),
    "imagenet": Recipe(
        epochs=30,
        optimizer="sgd",
        lr=1e-2,
        momentum=0.9,
        schedule="cosine",
        batch_size=256,
        backbone_lr_scale=0.1,
        bf16=True,
    ),
}


def at_last_epoch(model, dataset: str):
    """The model's schedules (temperature, k warm-up) at the recipe's last epoch: as it infers after training."""
    epochs = RECIPES[dataset].epochs
    for module in model.modules():
        if hasattr(module, "on_epoch_start"):
            module.on_epoch_start(epochs - 1, epochs)
    return model
