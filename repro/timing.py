"""Rough cost model for `repro list` and the estimate printed before a run.

seconds per epoch = training FLOPs / this device's measured throughput + a fixed
cost per step. The throughput is measured once per device on a small conv net
(about a second) and cached; FLOPs come from the model's analytic count.
"""

from __future__ import annotations

import json
import os
import time
from functools import lru_cache
from pathlib import Path

import torch
from torch import nn

from repro.data.specs import get_dataset
from repro.recipes import RunConfig

STEP_OVERHEAD_S = {"cpu": 0.004, "cuda": 0.002}  # optimiser, Python and launch overhead per step


def _cache_file() -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    return base / "repro" / "throughput.json"


def _measure(device: str) -> float:
    """Multiply-adds per second of forward+backward on a small conv net."""
    net = nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(),
                        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10)).to(device)
    x = torch.randn(64, 3, 32, 32, device=device)
    macs_fwd = 64 * (32 * 32 * 32 * 27 + 32 * 32 * 64 * 288 + 640)
    for _ in range(2):
        net(x).sum().backward()
    if device == "cuda":
        torch.cuda.synchronize()
    reps, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < 0.5:
        net(x).sum().backward()
        reps += 1
    if device == "cuda":
        torch.cuda.synchronize()
    return 3 * macs_fwd * reps / (time.perf_counter() - t0)


@lru_cache(maxsize=None)
def throughput(device: str) -> float:
    key = f"{device}:{torch.get_num_threads()}"
    path = _cache_file()
    cache = json.loads(path.read_text()) if path.exists() else {}
    if key not in cache:
        cache[key] = _measure(device)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(cache))
    return cache[key]


def local_device() -> str:
    return "cuda" if torch.cuda.is_available() else "cpu"


def seconds_per_epoch(cfg: RunConfig, device: str | None = None) -> float:
    device = device or local_device()
    from repro.models import Component
    from repro.pipeline import model_flops

    spec = get_dataset(cfg.dataset)
    report = model_flops(cfg.dataset, Component(**cfg.backbone), Component(**cfg.head))
    scale = (cfg.image_size / spec.image_size) ** 2
    macs = report.backbone * scale + report.head  # per image, forward
    n_train = cfg.train_samples or spec.train_size
    n_test = cfg.test_samples or spec.test_size
    work = 3 * macs * n_train + macs * n_test
    steps = n_train // cfg.batch_size + n_test // cfg.batch_size + 1
    return work / throughput(device) + steps * STEP_OVERHEAD_S.get(device, 0.004)
