"""Shared harness of the digits investigations: real 8x8 digits -> 32x32 RGB, the repo's own model and loop.

Data: scikit-learn's load_digits (1,797 real images, 10 classes), split 80/20 with a fixed
seed (1,437 train / 360 test), pixels 0..16 scaled to 0..255, upscaled bilinearly to 32x32,
replicated to 3 channels, normalised with the training set's mean/std. Training uses
repro.train.loop.train_epoch / evaluate and repro.data.loader.TensorLoader (crop + flip), the
schedules compressed onto the paper's 50 CIFAR epochs exactly as a shortened profile does.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run from anywhere: this tree's repro

from repro.data.loader import TensorLoader  # noqa: E402
from repro.models import Component, build_model  # noqa: E402
from repro.plan.run_config import RunConfig  # noqa: E402
from repro.train.loop import evaluate, make_optimizer, schedule_position, train_epoch  # noqa: E402
from repro.train.run_data import RunData  # noqa: E402

torch.set_num_threads(1)
DEVICE = torch.device("cpu")


def digits(size: int = 32):
    """(x_train, y_train, x_test, y_test): uint8 (N, 3, size, size) and int64 labels."""
    from sklearn.datasets import load_digits

    d = load_digits()
    x = torch.tensor(d.images, dtype=torch.float32).unsqueeze(1) * (255.0 / 16.0)  # (N, 1, 8, 8)
    x = F.interpolate(x, size=(size, size), mode="bilinear", align_corners=False)
    x = x.round().clamp(0, 255).to(torch.uint8).expand(-1, 3, -1, -1).contiguous()
    y = torch.tensor(d.target, dtype=torch.int64)
    perm = torch.randperm(len(y), generator=torch.Generator().manual_seed(0))
    cut = int(0.8 * len(y))
    tr, te = perm[:cut], perm[cut:]
    return x[tr], y[tr], x[te], y[te]


_DATA = None


def loaders(seed: int, batch_size: int = 128):
    global _DATA
    if _DATA is None:
        _DATA = digits()
    xtr, ytr, xte, yte = _DATA
    m = xtr.float().mean().item() / 255
    s = xtr.float().std().item() / 255
    norm = dict(mean=(m,) * 3, std=(s,) * 3)
    train = TensorLoader(xtr, ytr, batch_size, train=True, seed=seed, device=DEVICE, **norm)
    test = TensorLoader(xte, yte, batch_size, train=False, device=DEVICE, **norm)
    return RunData(train, test, "sklearn digits 32x32")


def config(seed: int, epochs: int, lr: float = 1e-3, batch_size: int = 128, backbone=None, head=None) -> RunConfig:
    return RunConfig(
        dataset="cifar10",
        backbone=backbone or {},
        head=head or {},
        seed=seed,
        epochs=epochs,
        batch_size=batch_size,
        optimizer="adam",
        lr=lr,
        momentum=0.0,
        schedule="constant",
        backbone_lr_scale=1.0,
        bf16=False,
        data="real",
        train_samples=None,
        test_samples=None,
        image_size=32,
        pretrained=False,
        metric="final",
        schedule_epochs=50,
    )


def build(backbone: str, head: str, seed: int, backbone_params=None, head_params=None):
    torch.manual_seed(seed)
    return build_model(
        "cifar10", Component(backbone, dict(backbone_params or {})), Component(head, dict(head_params or {}))
    )


def train(model, seed: int, epochs: int, lr: float = 1e-3, batch_size: int = 128, log=None) -> dict:
    """Train with the repo's loop; returns final test metrics and the per-epoch history."""
    cfg = config(seed, epochs, lr, batch_size)
    data = loaders(seed, batch_size)
    opt, _ = make_optimizer(cfg, model)
    history = []
    for epoch in range(epochs):
        e, n = schedule_position(epoch, cfg)
        for m in model.modules():
            if m is not model and hasattr(m, "on_epoch_start"):
                m.on_epoch_start(e, n)
        entry = train_epoch(model, data, opt, cfg, DEVICE, epoch)
        history.append(entry)
        if log:
            log(epoch, entry)
    ev = evaluate(model, data.test, 10, cfg, DEVICE)
    return {
        "accuracy": ev["accuracy"],
        "loss": ev["loss"],
        "history": history,
        "usage_by_class": ev.get("usage_by_class"),
    }
