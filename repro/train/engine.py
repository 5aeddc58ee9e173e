"""How a run executes: its Engine, the model built for it, the compiled backbone, bf16 autocast.

The choices (memory format, compilation, the sparse head's dispatch, small-map convolutions, MoEConv2d's path
rule) change speed, not results beyond float rounding, so they come with the command's settings
(repro.core.settings.EngineSwitches) and are recorded with the run (`paths_ran`: the exact path each MoEConv2d
layer ran), never hashed into the config. Also what the backbone starts from (`pretrained_source`).
"""

from __future__ import annotations

import contextlib
import copy
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Callable

import torch
from torch import nn

from repro.core.settings import EngineSwitches, Settings
from repro.data.specs import get_dataset
from repro.models import Component, build_model, small_maps
from repro.models.classifier import Classifier
from repro.models.small_maps import to_channels_last
from repro.plan.run_config import RunConfig
from repro.runtime.locks import LockSettings


@dataclass(frozen=True)
class Engine:
    """Speed choices, from the switches REPRO_CHANNELS_LAST, REPRO_COMPILE, REPRO_SMALL_MAPS (auto, 1, 0),
    REPRO_DISPATCH (auto, loop, batched), REPRO_BF16_CPU (0 by default) and REPRO_MOE_CONV (auto, measured,
    fewest-macs), resolved for a run and its device.

    auto: channels-last convolutions everywhere (faster from 32 px up, neutral at 16 px); the backbone
    compiled on CUDA only (on a CPU it compiled long and ran no faster); batched sparse dispatch on CUDA only
    (no host synchronisation; on a CPU its empty expert slots cost more than the loop's per-expert calls),
    and only where the row leaves `dispatch` unset; convolutions on maps smaller than their kernel by
    faster exact paths on the CPU (repro.models.small_maps; not measured on CUDA, so off there); the
    measurements: docs/performance.md. A recipe's bf16 autocast runs on CUDA; REPRO_BF16_CPU=1 runs it on
    the CPU too, the nearest CPU equivalent of the CUDA path (slower there, so off by default). MoEConv2d
    runs the exact path measured time chooses, on every device (repro.models.moe_conv_choice; auto: measured).
    """

    channels_last: bool = False
    compile: bool = False
    dispatch: str | None = None  # replaces the sparse head's default dispatch
    bf16_cpu: bool = False  # a bf16 recipe autocasts on the CPU as it does on CUDA
    small_maps: bool = False  # convolutions on maps smaller than their kernel: repro.models.small_maps
    moe_conv: str = "fewest-macs"  # MoEConv2d's path rule: repro.models.moe_conv_choice


def _switch(value: bool | None, auto: bool) -> bool:
    return auto if value is None else value  # None: auto


def resolve_engine(cfg: RunConfig, device: torch.device, switches: EngineSwitches = EngineSwitches()) -> Engine:
    from repro.models import HEADS

    cuda = device.type == "cuda"
    dispatch = None
    config = HEADS.get(cfg.head["name"]).config
    head_fields = {f.name for f in fields(config)} if config is not None else set()
    if "dispatch" in head_fields and "dispatch" not in cfg.head["params"]:
        choice = switches.dispatch
        dispatch = ("batched" if cuda else None) if choice == "auto" else choice
    return Engine(
        _switch(switches.channels_last, True),
        _switch(switches.compile, cuda),
        dispatch,
        _switch(switches.bf16_cpu, False),
        _switch(switches.small_maps, not cuda),
        "measured" if switches.moe_conv == "auto" else switches.moe_conv,
    )


def pretrained_source(cfg: RunConfig, settings: Settings = Settings()) -> bool | Path:
    """What the backbone starts from: False (random), or a weights file: torchvision's ImageNet weights (found in
    the settings' weights folders, else torch.hub's cache) or the digit stand-in's (made in the settings' cache)."""
    if cfg.digit_weights:
        from repro.train import digit_weights

        return digit_weights.ensure(
            cfg.backbone["name"],
            cfg.dataset,
            cfg.image_size,
            cache=settings.cache,
            lock_settings=LockSettings(job=settings.launch.slurm),
        )
    if cfg.pretrained:
        from repro.models.weights import require_weights

        return require_weights(cfg.backbone["name"], settings.weights)
    return False


def build_engine_model(cfg: RunConfig, engine: Engine, settings: Settings = Settings()) -> Classifier:
    head = Component(
        cfg.head["name"], {**cfg.head["params"], **({"dispatch": engine.dispatch} if engine.dispatch else {})}
    )
    model = build_model(
        cfg.dataset,
        Component(**cfg.backbone),
        head,
        pretrained=pretrained_source(cfg, settings),
        image_size=cfg.image_size,
    )
    if engine.channels_last:
        to_channels_last(model)
    if engine.small_maps:
        small_maps.use_small_maps(model)
    if engine.moe_conv != "fewest-macs":
        from repro.models.moe_conv import use_paths
        from repro.models.moe_conv_choice import choice_file

        use_paths(model, engine.moe_conv, choice_file(settings.cache))
    return model


def compile_backbone(
    model: Classifier, cfg: RunConfig, engine: Engine, device: torch.device, backend: str | Callable = "inductor"
) -> str:
    """Compile the backbone in place once a copy survives a training step; '' or why it stays eager."""
    spec = get_dataset(cfg.dataset)
    x = torch.randn(
        min(cfg.batch_size, 8),
        spec.channels,
        cfg.image_size,
        cfg.image_size,
        generator=torch.Generator().manual_seed(0),
    ).to(device)
    if engine.channels_last:
        x = x.contiguous(memory_format=torch.channels_last)
    trial = copy.deepcopy(model.backbone)
    gpus = [device.index or 0] if device.type == "cuda" else []
    try:
        with torch.random.fork_rng(devices=gpus):  # the trial step leaves the run's random streams untouched
            trial.compile(backend=backend)
            with autocast_context(cfg, device, engine):
                out = trial(x)
            if out.requires_grad:
                out.float().sum().backward()
    except Exception as exc:  # any compiler failure: train eagerly, as without compilation
        lines = [line for line in str(exc).splitlines() if line.strip()][:2]  # dynamo puts the cause second
        return f"{type(exc).__name__}: {' '.join(lines)}"
    model.backbone.compile(backend=backend)  # in place: parameter names, and so checkpoints, are unchanged
    return ""


def autocast_dtype(cfg: RunConfig, device: torch.device, engine: Engine | None = None) -> torch.dtype | None:
    """bfloat16 where the recipe asks for it and the device runs it (CUDA; the CPU with engine.bf16_cpu)."""
    on = device.type == "cuda" or (device.type == "cpu" and engine is not None and engine.bf16_cpu)
    return torch.bfloat16 if cfg.bf16 and on else None


def autocast_context(cfg: RunConfig, device: torch.device, engine: Engine | None = None):
    dtype = autocast_dtype(cfg, device, engine)
    return torch.autocast(device.type, dtype=dtype) if dtype is not None else contextlib.nullcontext()


def paths_ran(model: nn.Module) -> dict[str, Any]:
    """{"moe_conv_paths": {layer: {input shape "BxCxHxW": the exact path its last call of that shape ran}}} for a
    model with MoEConv2d layers (repro.models.moe_conv_choice), else {}: which rounding a run's numbers carry."""
    ran = {
        name: {"x".join(map(str, shape)): path for shape, path in m.paths_ran.items()}
        for name, m in model.named_modules()
        if isinstance(getattr(m, "paths_ran", None), dict)
    }
    return {"moe_conv_paths": ran} if ran else {}
