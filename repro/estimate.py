"""Cost estimates shown before a run and by `repro list`: the cost model and its throughput.

seconds per epoch = training FLOPs / the device's measured throughput + a fixed cost
per step. The throughput is measured once per device on a small conv net (about a
second) and cached (repro.cache); FLOPs come from the model's analytic count, also
cached, so a warm estimate imports no torch.
"""

from __future__ import annotations

import os
import sys
import time
from functools import lru_cache
from pathlib import Path
from typing import Callable

from repro.cache import cache_root, read_json, write_json
from repro.data.specs import get_dataset
from repro.manifest import Manifest
from repro.measure.accuracy import planned_runs
from repro.measure.flops import flop_summary
from repro.models import Component
from repro.recipes import RunConfig

STEP_OVERHEAD_S = {"cpu": 0.004, "cuda": 0.002}  # optimiser, Python and launch overhead per step
FLOP_COUNT_S = 0.5  # analytic counting: well under a second a model on a CPU


def _throughput_file() -> Path:
    return cache_root() / "throughput.json"


def _cpu_threads() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def local_device() -> str:
    """'cuda' when this host has a usable NVIDIA GPU, else 'cpu' (without importing torch if it can)."""
    if "torch" in sys.modules:
        return "cuda" if sys.modules["torch"].cuda.is_available() else "cpu"
    if os.environ.get("CUDA_VISIBLE_DEVICES", None) == "":
        return "cpu"
    gpus = Path("/proc/driver/nvidia/gpus")
    return "cuda" if gpus.is_dir() and any(gpus.iterdir()) else "cpu"


def measure_throughput(device: str) -> float:
    """Multiply-adds per second of forward+backward on a small conv net."""
    import torch
    from torch import nn

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
    key = f"{device}:{_cpu_threads()}"
    path = _throughput_file()
    cache = read_json(path)
    cache = cache if isinstance(cache, dict) else {}
    value = cache.get(key)
    if not isinstance(value, (int, float)) or not value > 0:
        cache[key] = value = measure_throughput(device)
        write_json(path, cache)
    return float(value)


def seconds_per_epoch(cfg: RunConfig, device: str | None = None) -> float:
    device = device or local_device()
    spec = get_dataset(cfg.dataset)
    flops = flop_summary(cfg.dataset, Component(**cfg.backbone), Component(**cfg.head))
    scale = (cfg.image_size / spec.image_size) ** 2
    macs = flops["backbone_macs"] * scale + flops["head_macs"]  # per image, forward
    n_train = cfg.train_samples or spec.train_size
    n_test = cfg.test_samples or spec.test_size
    work = 3 * macs * n_train + macs * n_test
    steps = n_train // cfg.batch_size + n_test // cfg.batch_size + 1
    return work / throughput(device) + steps * STEP_OVERHEAD_S.get(device, 0.004)


def estimate_flops(manifest: Manifest, profile_name: str) -> tuple[float, str]:
    n = sum("flops" in r.measures for r in manifest.rows)
    return FLOP_COUNT_S * n, f"{n} FLOP counts"


def estimate_training(manifest: Manifest, profile_name: str) -> tuple[float, str]:
    """Runs x epochs x seconds per epoch on this host's device; runs shared between rows count once."""
    unique = {p.cfg.hash: p.cfg for p in planned_runs(manifest, manifest.profiles[profile_name])}
    seconds = sum(seconds_per_epoch(cfg) * cfg.epochs for cfg in unique.values())
    epochs = sum(cfg.epochs for cfg in unique.values())
    return seconds, f"{len(unique)} runs, {epochs} epochs"


def estimate_latency(manifest: Manifest, profile_name: str) -> tuple[float, str]:
    """Calls x multiply-adds per call / this device's throughput, plus a fixed cost per call."""
    from repro.measure.latency import settings_for

    profile = manifest.profiles[profile_name]
    s = settings_for(profile, profile.evidence == "paper")
    rows = [r for r in manifest.rows if "latency" in r.measures]
    calls = s.warmup + s.min_reps
    seconds = 0.0
    for row in rows:
        spec = get_dataset(row.dataset)
        scale = (min(spec.image_size, s.image_size or spec.image_size) / spec.image_size) ** 2
        f = flop_summary(row.dataset, row.backbone, row.head)
        macs = calls * s.batch * (2 * f["backbone_macs"] * scale + 2 * f["head_macs"]) + s.op_batch * f["head_macs"]
        seconds += macs / throughput("cpu") + 3 * calls * 0.002
    return seconds, f"{len(rows)} latency rows x 3 timings, batch {s.batch}, {calls}+ calls each"


Estimator = Callable[[Manifest, str], tuple[float, str]]
ESTIMATORS: dict[str, Estimator] = {"flops": estimate_flops, "accuracy": estimate_training,
                                    "latency": estimate_latency}


def duration(seconds: float) -> str:
    if seconds < 90:
        return f"~{seconds:.0f} s"
    if seconds < 5400:
        return f"~{seconds / 60:.0f} min"
    return f"~{seconds / 3600:.1f} h"


def estimate(manifest: Manifest, profile: str) -> str:
    parts, total = [], 0.0
    for measure in sorted(manifest.measures()):
        seconds, text = ESTIMATORS[measure](manifest, profile)
        parts.append(text)
        total += seconds
    return f"{duration(total)} ({'; '.join(parts)})"
