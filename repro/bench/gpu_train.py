"""A model built, compiled and stepped as a run trains it, for `repro bench gpu`'s timed checks.

`Trainer` builds a run config's model through repro.train.engine (its Engine: channels-last, the compiled
backbone on CUDA, the sparse dispatch, each as the command's engine switches decide, as train_run takes
them), puts its routing schedules at their steady state (the last epoch's) and trains passes over any
batches with train_epoch. `SyntheticBatches` are two training batches resident on the device, cycled: the
model's step alone, no input pipeline. The input paths' check
(repro.bench.input_paths) feeds the same Trainer from image-folder loaders instead.
"""

from __future__ import annotations

import contextlib
import time
from typing import Any

import torch

from repro.core.settings import Settings
from repro.data.specs import get_dataset
from repro.plan.run_config import RunConfig


class SyntheticBatches:
    """Training batches cycled from two resident on the device: the model's step alone, no input pipeline."""

    def __init__(self, cfg: RunConfig, device: torch.device, channels_last: bool) -> None:
        spec = get_dataset(cfg.dataset)
        g = torch.Generator().manual_seed(0)
        shape = (cfg.batch_size, spec.channels, cfg.image_size, cfg.image_size)  # (B, C, H, W)
        fmt = torch.channels_last if channels_last else torch.contiguous_format
        self.pool = [
            (
                torch.randn(shape, generator=g).to(device).contiguous(memory_format=fmt),
                torch.randint(0, spec.num_classes, (cfg.batch_size,), generator=g).to(device),
            )
            for _ in range(2)
        ]
        self.steps = 0  # set before each pass

    def set_epoch(self, epoch: int) -> None:
        pass

    def __len__(self) -> int:
        return self.steps

    def __iter__(self):
        return (self.pool[i % len(self.pool)] for i in range(self.steps))


def bf16_autocast(device: torch.device):
    """CPU autocast for --dry-run; on CUDA train_epoch's own autocast (cfg.bf16) is the one that runs."""
    if device.type == "cpu":
        return torch.autocast("cpu", dtype=torch.bfloat16)
    return contextlib.nullcontext()


class Trainer:
    """`cfg`'s model, optimiser and Engine on `device`, compiled where the Engine compiles (a failed compilation
    trains eagerly, as a run does: `compile_error` says why); `build_s` is the seconds this took. `settings`: the
    command's (its engine switches, cache and weights folders), as train_run takes them."""

    def __init__(self, cfg: RunConfig, device: torch.device, settings: Settings = Settings()) -> None:
        from repro.models.base import RoutingHooks
        from repro.train.engine import build_engine_model, compile_backbone, resolve_engine
        from repro.train.loop import freeze, make_optimizer, schedule_position
        from repro.train.routing import routing_modules

        started = time.perf_counter()
        self.cfg, self.device = cfg, device
        self.engine = resolve_engine(cfg, device, settings.engine)
        torch.manual_seed(0)
        self.model = build_engine_model(cfg, self.engine, settings)
        freeze(self.model, cfg)
        self.model.to(device)
        self.opt, _ = make_optimizer(cfg, self.model)
        if device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(device)
        self.compile_error = compile_backbone(self.model, cfg, self.engine, device) if self.engine.compile else ""
        for m in routing_modules(self.model):
            assert isinstance(m, RoutingHooks)  # the modules with the engine hooks: repro.models.base's
            m.on_epoch_start(*schedule_position(cfg.epochs - 1, cfg))  # the schedules' steady state
        self.build_s = time.perf_counter() - started
        self.epochs = 0

    @property
    def compiled(self) -> bool:
        return self.engine.compile and not self.compile_error

    def synthetic(self) -> SyntheticBatches:
        return SyntheticBatches(self.cfg, self.device, self.engine.channels_last)

    def epoch(self, batches: Any) -> dict[str, Any]:
        """One pass of train_epoch over `batches` (anything with len, iter and set_epoch); ends on a host sync."""
        from repro.train.loop import train_epoch
        from repro.train.run_data import RunData

        self.epochs += 1
        with bf16_autocast(self.device):
            return train_epoch(self.model, RunData(batches, [], "bench"), self.opt, self.cfg, self.device, self.epochs)
