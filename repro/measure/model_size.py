"""A model's size as a run trains it: parameters and per-sample multiply-adds, backbone and head apart, at the
run's resolution. What the fitted cost model (repro.cost.fit) prices a run by.

The model is built for the run's resolution (a smaller image gives a flattening head fewer inputs), so its
counts are not the paper-resolution ones scaled by area: a ResNet-18 at 16 px keeps 1 x 1 maps in its last
stage, four times the area scaling's share there. Counted once per model and resolution on the meta device
(no weights are made) and cached (repro.core.cache), so the cost model reads it without importing torch.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from repro.core.cache import cache_dir, read_json, write_json
from repro.core.settings import DEFAULT_CACHE
from repro.measure.flop_check import _count_from_shapes, model_key
from repro.models import Component


@dataclass(frozen=True)
class ModelSize:
    backbone_params: int
    head_params: int
    backbone_macs: int  # per sample, forward, at the run's resolution
    head_macs: int


def model_size(
    dataset: str, backbone: Component, head: Component, image_size: int, count: bool = True, cache: Path = DEFAULT_CACHE
) -> ModelSize | None:
    """The counts of the model a run at `image_size` trains, kept in the cache folder `cache`; None when not
    cached and `count` is False."""
    key = json.dumps({"model": model_key(dataset, backbone, head), "image_size": image_size}, sort_keys=True)
    path = cache_dir(cache, "model_size") / f"{hashlib.sha256(key.encode()).hexdigest()[:24]}.json"
    cached = read_json(path)
    if isinstance(cached, dict) and cached.get("key") == key:
        return ModelSize(**cached["size"])
    if not count:
        return None
    size = _count(json.loads(model_key(dataset, backbone, head)), image_size)
    write_json(path, {"key": key, "size": size.__dict__})
    return size


def _count(spec: dict, image_size: int) -> ModelSize:
    import torch

    from repro.core.devices import cpu_threads
    from repro.models import build_model

    with torch.device("meta"):
        model = build_model(
            spec["dataset"], Component(**spec["backbone"]), Component(**spec["head"]), image_size=image_size
        )
    params = {"backbone": 0, "head": 0}
    for name, p in model.named_parameters():
        params["backbone" if name.split(".")[0] == "backbone" else "head"] += p.numel()
    with cpu_threads("cpu", 1):  # batch-1 passes: threads only contend
        macs = _count_from_shapes(spec, image_size)
    return ModelSize(params["backbone"], params["head"], macs["backbone_macs"], macs["head_macs"])
