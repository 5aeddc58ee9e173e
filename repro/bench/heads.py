"""`repro bench latency` and `repro bench capacity`: every method's head timed at one dataset's shapes,
and the greedy capacity assignment (Section 3.3) against the batched expert forward it feeds."""

from __future__ import annotations

from dataclasses import asdict, replace
from typing import Any

import torch

from repro.measure.timing import cpu_threads, time_call
from repro.core.devices import device_label, resolve_device
from repro.plan.manifest import Row
from repro.measure.latency import LatencySettings, measure_head, measure_row
from repro.models import Component
from repro.models.capacity import assign, assign_reference, capacity
from repro.models.experts import ExpertBank

# Each dataset's standard backbone and expert width h (Section 3.1).
SHAPES = {"cifar100": ("cifar_standard", 304), "tiny_imagenet": ("tiny_standard", 1024), "imagenet": ("resnet18", 512)}


def method_rows(dataset: str, num_experts: int = 8) -> list[Row]:
    """Every method's head on the dataset's standard backbone, as a latency manifest would list them."""
    backbone, h = SHAPES[dataset]
    moe = {"num_experts": num_experts, "expert_hidden": h}
    heads: list[tuple[str, str, dict[str, Any]]] = [
        ("dense head", "dense", {"hidden": (1024, 256)}),
        ("sparse MoE, loop", "sparse_moe", {**moe, "top_k": 1, "dispatch": "loop"}),
        ("sparse MoE, batched", "sparse_moe", {**moe, "top_k": 1, "dispatch": "batched"}),
        ("Soft MoE", "soft_moe", moe),
        ("per-sample Soft MoE", "per_sample_soft_moe", moe),
        ("Expert Choice", "expert_choice", moe),
    ]
    return [
        Row(
            id=f"m{i}",
            label=label,
            dataset=dataset,
            backbone=Component(backbone),
            head=Component(name, params),
            measures=("latency",),
        )
        for i, (label, name, params) in enumerate(heads)
    ]


def bench_latency(
    dataset: str = "cifar100",
    device: str = "cpu",
    settings: LatencySettings = LatencySettings(),
    experts: tuple[int, ...] = (2, 4, 8, 16),
    whole_model: bool = True,
) -> dict[str, Any]:
    """Per-method timings and ratios to dense, and operator calls of the two dispatches against E."""
    dev = torch.device(resolve_device(device))
    s = replace(settings, op_batch=settings.batch)
    backbones: dict = {}
    methods = []
    for row in method_rows(dataset):
        r = measure_row(row, s, dev, backbones) if whole_model else measure_head(row, s, dev)
        methods.append({"method": row.label, **r})
    dense = methods[0]
    for m in methods:
        m["head_x"] = m["head"]["median_ms"] / dense["head"]["median_ms"]
        if whole_model:
            m["model_x"] = m["model"]["median_ms"] / dense["model"]["median_ms"]
    sweep = []
    for e in experts:
        loop, batched = method_rows(dataset, e)[1:3]
        sweep.append({"experts": e, "loop": measure_head(loop, s, dev), "batched": measure_head(batched, s, dev)})
    return {
        "dataset": dataset,
        "device": device_label(dev, s.threads),
        "settings": asdict(s),
        "methods": methods,
        "sweep": sweep,
    }


def bench_capacity(
    batch: int = 256,
    num_experts: int = 8,
    features: int = 3072,
    hidden: int = 304,
    classes: int = 100,
    capacity_factor: float = 1.25,
    device: str = "cpu",
    settings: LatencySettings = LatencySettings(warmup=3, min_reps=20, max_reps=200, budget_s=2.0),
) -> dict[str, Any]:
    """ms per batch of the greedy assignment (both implementations) and of the batched expert forward."""
    dev = torch.device(resolve_device(device))
    g = torch.Generator().manual_seed(0)
    probs = torch.softmax(torch.randn(batch, num_experts, generator=g) * 2, -1).to(dev)  # (B, E), a skewed router
    cap = capacity(capacity_factor, batch, 1, num_experts)
    torch.manual_seed(0)
    bank = ExpertBank(num_experts, features, hidden, classes).to(dev).train()
    x = torch.randn(num_experts, batch, features, generator=g).to(dev)  # (E, S=B, D): the batched buffer
    rows = []
    with torch.no_grad(), cpu_threads(dev, settings.threads):
        experts_ms = time_call(lambda: bank(x), dev, settings).median_ms
        for kc, when in ((1, "k = 1 (the paper's head)"), (num_experts, f"{num_experts} candidates (k warm-up start)")):
            cand = probs.topk(kc, dim=-1).indices  # (B, Kc)
            for name, rule in (
                ("vectorised (batched dispatch)", assign),
                ("sequential loop (the paper's)", assign_reference),
            ):
                ms = time_call(lambda: rule(cand, cap, 1, num_experts), dev, settings).median_ms
                rows.append({"assignment": f"{name}, {when}", "ms": ms, "of_experts": ms / experts_ms})
    return {
        "batch": batch,
        "num_experts": num_experts,
        "capacity": cap,
        "device": device_label(dev, settings.threads),
        "experts_ms": experts_ms,
        "rows": rows,
    }
