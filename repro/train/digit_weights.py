"""Backbone weights pretrained on the digit stand-in, where the recipe starts from ImageNet weights.

The paper fine-tunes ImageNet-pretrained ResNet-18 and MobileNet-V2 (Section 4.1). A
`functional` profile cannot download torchvision's weights, and from random
initialisation its 1000-class stand-in (repro.data.digits) does not learn in a CPU
budget (docs/performance.md, "Pretrained digit weights"). A profile with `pretrained_on = "digits"` therefore starts
those backbones from weights repro makes itself, once per (backbone, dataset, image
size), as torchvision's were made on ImageNet's own training split:

- data: the stand-in's training split (PRETRAIN.images images, the runs' random
  crops, no flips), never its test split;
- objective: read the number's D digits, one 10-way linear readout per digit place
  on the backbone's pooled features, cross-entropy summed over places. The digits
  are the parts of the class label; reading them is learnable in a few epochs where
  the 1000-way label is not (ResNet-18 at 16 px: 70% of test images with all three
  digits read after 4 epochs);
- the readout is dropped: a run's head starts from random initialisation as always.

The weights file and a JSON record beside it (settings, seconds, test-split digit
accuracy, sha256) live under the cache folder's digit_weights/ (repro.core.cache); the name carries a hash of
the settings, so a change to them makes new weights. Concurrent runs that need the
same file make it once: the first takes a lock, the others wait for the file.
Legend: N images, D digits per image, F features.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from repro.core.cache import cache_dir, read_json
from repro.core.settings import DEFAULT_CACHE
from repro.core.fsutil import atomic_write_bytes, atomic_write_json
from repro.runtime.locks import LockSettings, try_lock
from repro.runtime.numerics import run_numerics
from repro.models.weights import pretrained_backbones, sha256, weights_for


@dataclass(frozen=True)
class Pretraining:
    images: int = 8192
    test_images: int = 1000
    epochs: int = 6
    batch_size: int = 128
    lr: float = 1e-3  # Adam
    seed: int = 0
    # Intra-op threads, fixed: the weights would otherwise depend on the core count of the machine that made
    # them (repro.runtime.numerics); 2, the count the functional profile's sizes were chosen with.
    threads: int = 2
    # bump when the procedure changes what it produces. 2: channels-last, the small-map convolution paths
    # (repro.models.small_maps) and fused Adam, the runs' own engine on a CPU: the same procedure, other float
    # rounding, faster (docs/measurements.md, `repro bench small-maps`)
    version: int = 2


PRETRAIN = Pretraining()
POLL_S = 2.0


def base_backbone(backbone: str) -> str:
    """The plain torchvision backbone whose weights `backbone` starts from (resnet18_moeconv -> resnet18):
    the first pretrained backbone, by name, with the same weights enum."""
    enum = weights_for(backbone)
    if enum is None:
        raise KeyError(
            f"backbone '{backbone}' starts from no pretrained weights; those that do: "
            f"{', '.join(pretrained_backbones())}"
        )
    return next(name for name, e in pretrained_backbones().items() if e == enum)


def _key(backbone: str, dataset: str, image_size: int, settings: Pretraining) -> str:
    blob = json.dumps(
        {"backbone": backbone, "dataset": dataset, "image_size": image_size, **asdict(settings)}, sort_keys=True
    )
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def weights_path(
    backbone: str, dataset: str, image_size: int, settings: Pretraining | None = None, cache: Path = DEFAULT_CACHE
) -> Path:
    settings = settings or PRETRAIN
    base = base_backbone(backbone)
    key = _key(base, dataset, image_size, settings)
    return cache_dir(cache, "digit_weights") / f"{base}-{dataset}-{image_size}px-{key}.pt"


def record(path: Path) -> dict[str, Any] | None:
    """The pretraining record beside a weights file (None when absent or unreadable)."""
    return read_json(path.with_suffix(".json"))


def ensure(
    backbone: str,
    dataset: str,
    image_size: int,
    settings: Pretraining | None = None,
    log=print,
    cache: Path = DEFAULT_CACHE,
    lock_settings: LockSettings = LockSettings(),
) -> Path:
    """The weights file for `backbone` on `dataset`'s stand-in at `image_size` in the cache folder `cache`,
    pretrained here if absent (under a lock: `lock_settings` say when another holder's lock is stale)."""
    settings = settings or PRETRAIN
    path = weights_path(backbone, dataset, image_size, settings, cache)
    while not (path.is_file() and record(path) is not None):
        lock = try_lock(path.parent, path.stem, lock_settings)
        if isinstance(lock, dict):  # another process is pretraining it
            time.sleep(POLL_S)
            continue
        with lock:
            if not (path.is_file() and record(path) is not None):
                log(
                    f"pretraining {base_backbone(backbone)} on the digit stand-in for {dataset} at {image_size}px "
                    f"({settings.images} images x {settings.epochs} epochs), once: {path}"
                )
                _pretrain(base_backbone(backbone), dataset, image_size, settings, path, lock)
    return path


def digit_targets(labels, digits: int):
    """(N,) class numbers -> (N, D) their decimal digits, most significant first."""
    import torch

    return torch.stack([labels // 10 ** (digits - 1 - p) % 10 for p in range(digits)], 1)


def _pretrain(backbone: str, dataset: str, image_size: int, s: Pretraining, path: Path, lock) -> None:
    import torch

    # The caller's random stream is left where it was: a run that pretrains its backbone here (a cold cache)
    # then draws its head's initialisation and its batches as a run that found the file does.
    with run_numerics(s.threads, False, "cpu"), torch.random.fork_rng(devices=[]):
        _pretrain_on(backbone, dataset, image_size, s, path, lock)


def _pretrain_on(backbone: str, dataset: str, image_size: int, s: Pretraining, path: Path, lock) -> None:
    import io

    import torch
    import torch.nn.functional as F
    from torch import nn

    from repro.data import digits, loader
    from repro.data.specs import get_dataset
    from repro.models import BACKBONES
    from repro.models.small_maps import to_channels_last, use_small_maps

    spec = get_dataset(dataset)
    d = digits.digits_per_image(spec.num_classes)
    started = time.perf_counter()
    torch.manual_seed(s.seed)
    body = BACKBONES.get(backbone).builder((spec.channels, image_size, image_size), pretrained=False)
    use_small_maps(to_channels_last(body))  # fixed, not the environment's engine: the file's key names no engine
    readout = nn.Linear(body.out_features, 10 * d)
    opt = torch.optim.Adam([*body.parameters(), *readout.parameters()], lr=s.lr, fused=True)
    x, y = digits.digits_tensors(dataset, s.images, image_size, "train")
    train = loader.TensorLoader.for_dataset(
        dataset, x, y, s.batch_size, train=True, seed=s.seed, flip=False, channels_last=True
    )
    xt, yt = digits.digits_tensors(dataset, s.test_images, image_size, "test")
    test = loader.TensorLoader.for_dataset(dataset, xt, yt, s.batch_size, train=False, channels_last=True)
    history = []
    for epoch in range(s.epochs):
        body.train()
        train.set_epoch(epoch)
        total, seen = 0.0, 0
        for xb, yb in train:
            logits = readout(body(xb)).view(-1, 10)  # (N*D, 10)
            loss = F.cross_entropy(logits, digit_targets(yb, d).flatten()) * d  # summed over digit places
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            total, seen = total + loss.item() * len(yb), seen + len(yb)
        lock.ensure_held()
        history.append({"epoch": epoch + 1, "train_loss": total / seen})
    body.eval()
    right = torch.zeros(d)
    all_right = 0
    with torch.no_grad():
        for xb, yb in test:
            hit = readout(body(xb)).view(-1, d, 10).argmax(-1) == digit_targets(yb, d)  # (N, D)
            right += hit.float().sum(0)
            all_right += int(hit.all(1).sum())
    buffer = io.BytesIO()
    torch.save(body.net.state_dict(), buffer)  # the torchvision network without its classifier
    atomic_write_bytes(path, buffer.getvalue())
    atomic_write_json(
        path.with_suffix(".json"),
        {
            "backbone": backbone,
            "dataset": dataset,
            "image_size": image_size,
            "settings": asdict(s),
            "objective": f"read the {d} digits (one 10-way readout per place) of the stand-in's training split",
            "seconds": time.perf_counter() - started,
            "history": history,
            "test_digit_accuracy": (right / len(yt)).tolist(),
            "test_all_digits_accuracy": all_right / len(yt),
            "sha256": sha256(path),
            "file": path.name,
        },
    )


def describe(path: Path) -> str:
    """One line for a run record: whose weights, and how well they read the test split's digits."""
    r = record(path) or {}
    acc = r.get("test_all_digits_accuracy")
    read = f"; all digits read on {acc:.0%} of the test split" if isinstance(acc, (int, float)) else ""
    return (
        f"pretrained by repro on the digit stand-in's training split ({path.name}, sha256 "
        f"{str(r.get('sha256', '?'))[:16]}{read})"
    )
