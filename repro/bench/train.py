"""`repro bench train`: end-to-end training images per second, the engine's path against the usual way.

Both sides train the same model (the CIFAR standard backbone with the paper's
sparse MoE head, h = 304, k = 1), from the same initial weights, for the same
number of steps on the same synthetic CIFAR-shaped images. Rounds alternate
between them so machine noise falls on both; each reports its median round.

    usual   a torchvision-style dataset of PIL images, DataLoader with worker
            processes, per-image RandomCrop / RandomHorizontalFlip / ToTensor /
            Normalize (repro.bench.data), the paper's loop dispatch, eager, the
            textbook loop: forward, loss, backward, step
    fast    repro.train.loop as a run executes: TensorLoader (uint8 images resident on
            the device, batch-wise augmentation), the Engine's choices (channels
            last, dispatch, backbone compiled with a fallback) and train_epoch,
            with its routing statistics and auxiliary losses
"""

from __future__ import annotations

import statistics
import time
from dataclasses import asdict, replace
from pathlib import Path
from typing import Callable

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader

from repro.bench.data import PILImages, usual_transform
from repro.measure.timing import cpu_threads, synchronize
from repro.core.settings import DEFAULT_CACHE, EngineSwitches
from repro.data.loader import TensorLoader
from repro.data.specs import get_dataset
from repro.data.synthetic import synthetic_tensors
from repro.plan.manifest import Row
from repro.spec.profiles import Profile
from repro.models import Component, build_model
from repro.models.base import RoutingHooks
from repro.models.classifier import Classifier
from repro.plan.run_config import RunConfig, resolve
from repro.train.engine import Engine, build_engine_model, compile_backbone, resolve_engine
from repro.train.loop import make_optimizer, train_epoch
from repro.train.routing import routing_modules
from repro.train.run_data import RunData

BACKBONE = Component("cifar_standard")
HEAD = Component("sparse_moe", {"expert_hidden": 304, "top_k": 1})


def bench_config(dataset: str, n_images: int, batch_size: int, seed: int, bf16: bool | None) -> RunConfig:
    row = Row(id="bench", label="bench", dataset=dataset, backbone=BACKBONE, head=HEAD, measures=("accuracy",))
    profile = Profile(
        description="bench",
        evidence="pipeline",
        epochs=1,
        data="synthetic",
        train_samples=n_images,
        batch_size=batch_size,
        pretrained=False,
    )
    cfg = resolve(row, profile, seed)
    return cfg if bf16 is None else replace(cfg, bf16=bf16)


def _usual_epoch(model: Classifier, loader: DataLoader, opt: torch.optim.Optimizer, device: torch.device) -> int:
    head = model.head
    assert isinstance(head, RoutingHooks)  # every head has the engine hooks (repro.models.base)
    model.train()
    seen = 0
    for x, y in loader:
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        loss = F.cross_entropy(model(x), y) + head.aux_loss()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        head.after_backward()
        opt.step()
        seen += len(y)
    return seen


def _timed(run: Callable[[], int], device: torch.device) -> float:
    """Images per second of one round."""
    start = time.perf_counter()
    seen = run()
    synchronize(device)
    return seen / (time.perf_counter() - start)


def bench_train(
    n_images: int = 2048,
    batch_size: int = 128,
    device: str = "cpu",
    rounds: int = 3,
    workers: int = 2,
    threads: int = 1,
    dataset: str = "cifar10",
    seed: int = 0,
    bf16: bool | None = None,
    engine: Engine | None = None,
    switches: EngineSwitches = EngineSwitches(),
    cache: Path = DEFAULT_CACHE,
) -> dict:
    """Training images/s of both paths and the fast path's speed-up; threads=0 keeps torch's setting. The fast
    path's engine: `engine`, else the one `switches` (the command's settings) resolve to on the device; the
    synthetic images kept in the cache folder `cache`."""
    dev = torch.device(device)
    cfg = bench_config(dataset, n_images, batch_size, seed, bf16)
    engine = engine or resolve_engine(cfg, dev, switches)
    images, labels = synthetic_tensors(dataset, n_images, seed, cache=cache)  # (N, 3, 32, 32) uint8
    spec = get_dataset(dataset)

    torch.manual_seed(seed)
    fast = build_engine_model(cfg, engine).to(dev)
    compile_error = compile_backbone(fast, cfg, engine, dev) if engine.compile else ""
    usual = build_model(dataset, BACKBONE, Component(HEAD.name, {**HEAD.params, "dispatch": "loop"})).to(dev)
    usual.load_state_dict(fast.state_dict())  # the same initial weights
    for model in (fast, usual):
        for m in routing_modules(model):
            assert isinstance(m, RoutingHooks)  # the modules with the engine hooks: repro.models.base's
            m.on_epoch_start(0, cfg.schedule_epochs)
    fast_opt, _ = make_optimizer(cfg, fast)
    usual_opt, _ = make_optimizer(cfg, usual)

    tensors = TensorLoader.for_dataset(
        dataset, images, labels, batch_size, train=True, seed=seed, device=dev, channels_last=engine.channels_last
    )
    data = RunData(tensors, [], "bench")
    pil = PILImages(
        images.permute(0, 2, 3, 1).contiguous().numpy(), labels.tolist(), usual_transform(spec.mean, spec.std)
    )
    loader = DataLoader(
        pil,
        batch_size=batch_size,
        shuffle=True,
        num_workers=workers,
        drop_last=True,
        persistent_workers=workers > 0,
        pin_memory=dev.type == "cuda",
    )
    epochs = iter(range(10**9))

    def fast_epoch() -> int:
        train_epoch(fast, data, fast_opt, cfg, dev, next(epochs))
        return len(tensors) * batch_size

    paths: dict[str, Callable[[], int]] = {
        "usual": lambda: _usual_epoch(usual, loader, usual_opt, dev),
        "fast": fast_epoch,
    }
    rates: dict[str, list[float]] = {name: [] for name in paths}
    with cpu_threads(dev, threads):
        for run in paths.values():  # warm-up: workers, allocator, compilation
            _timed(run, dev)
        names = list(paths)
        for r in range(rounds):
            for name in names[r % 2 :] + names[: r % 2]:  # alternate who goes first
                rates[name].append(_timed(paths[name], dev))
    median = {name: statistics.median(v) for name, v in rates.items()}
    return {
        "n_images": n_images,
        "batch_size": batch_size,
        "steps_per_round": n_images // batch_size,
        "device": str(dev),
        "threads": torch.get_num_threads() if threads <= 0 else threads,
        "workers": workers,
        "rounds": rates,
        "images_per_s": median,
        "speedup": median["fast"] / median["usual"],
        "engine": {
            **asdict(engine),
            "compile": engine.compile and not compile_error,
            "compile_error": compile_error,
            "bf16": cfg.bf16 and dev.type == "cuda",
        },
    }
