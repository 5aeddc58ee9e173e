"""Training one run with the paper's recipe (Section 4.1): data, model, optimiser, epochs, metrics.

Dense and MoE models go through exactly the same loop; the MoE heads add their
auxiliary losses (Section 3.4) and receive the temperature / k schedules through
their ``on_epoch_start`` hook. A checkpoint (repro.train.checkpoints) is written after an epoch once a minute of
training has passed since the last one, never after the last epoch (the record follows it), so an interrupted run
resumes where its checkpoint stopped and, on a CPU, ends with the same record as an uninterrupted one.

How a run executes (memory format, compilation, the sparse head's dispatch) is
an Engine (repro.train.engine): choices that change speed, not results beyond float rounding, so
they come with the command's settings (repro.core.settings.EngineSwitches) and are
recorded, never hashed into the config. The run's data: repro.train.run_data; its routing as recorded:
repro.train.routing.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any, Callable, Iterable

import torch
import torch.nn.functional as F
from torch import nn

from repro.train.checkpoints import load_checkpoint, save_checkpoint
from repro.train.engine import (
    Engine,
    autocast_context,
    autocast_dtype,
    build_engine_model,
    compile_backbone,
    paths_ran,
    resolve_engine,
)
from repro.train.routing import RoutingTally, last_routing, router_shift, routing_modules
from repro.train.run_data import RunData, make_data
from repro.data.read_options import DataOptions
from repro.data.specs import get_dataset
from repro.core.settings import DEFAULT_CACHE, Settings
from repro.runtime import distributed, numerics
from repro.models.classifier import Classifier
from repro.plan.run_config import RunConfig
from repro.results.timings import Stopwatch

EpochCallback = Callable[[int, int, dict[str, Any]], None]  # (epoch done, epochs, history entry)


class NonFiniteLoss(RuntimeError):
    """The loss became NaN or infinite: the run stops instead of writing a meaningless record."""


def frozen_prefixes(model: Classifier, cfg: RunConfig) -> tuple[str, ...]:
    """The backbone's frozen_prefixes (Section 4.6), or all of it when the profile freezes it (lr scale 0)."""
    if cfg.backbone_lr_scale == 0:
        return ("",)
    return tuple(getattr(model.backbone, "frozen_prefixes", ()))


def freeze(model: Classifier, cfg: RunConfig) -> list[str]:
    """Freeze the backbone's frozen prefixes; returns the frozen parameter names."""
    prefixes = frozen_prefixes(model, cfg)
    names = []
    for name, p in model.backbone.named_parameters():
        if name.startswith(prefixes):
            p.requires_grad_(False)
            names.append(name)
    return names


def set_train_mode(model: Classifier, cfg: RunConfig) -> None:
    model.train()
    prefixes = tuple(p.rstrip(".") for p in frozen_prefixes(model, cfg))
    for name, module in model.backbone.named_modules():
        if name.startswith(prefixes):  # "" (the root) only when the whole backbone is frozen
            module.eval()  # frozen layers keep their pretrained BatchNorm statistics


def make_optimizer(cfg: RunConfig, model: Classifier) -> tuple[torch.optim.Optimizer, Any]:
    head = [p for p in model.head.parameters() if p.requires_grad]
    body = [p for p in model.backbone.parameters() if p.requires_grad]
    groups: list[dict[str, Any]] = [{"params": head, "lr": cfg.lr}]
    if body:
        groups.append({"params": body, "lr": cfg.lr * cfg.backbone_lr_scale})
    # fused: one kernel per step for every parameter, not one per tensor and operation. The update is the
    # same to float rounding, and on a CPU several times faster (docs/performance.md, "Fused Adam").
    if cfg.optimizer == "adam":
        opt: torch.optim.Optimizer = torch.optim.Adam(groups, lr=cfg.lr, fused=True)
    else:
        opt = torch.optim.SGD(groups, lr=cfg.lr, momentum=cfg.momentum, fused=True)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=cfg.epochs) if cfg.schedule == "cosine" else None
    return opt, sched


def evaluate(
    model: Classifier,
    batches: Iterable,
    num_classes: int,
    cfg: RunConfig,
    device: torch.device,
    engine: Engine | None = None,
    world: distributed.World = distributed.World(),
) -> dict:
    """Accuracy, loss, and for routed heads the expert usage per class (Fig. 4); on N processes `batches` is
    this rank's shard and the sums are all-reduced."""
    model.eval()
    hooks = [m for m in routing_modules(model) if m is model.head]
    correct = seen = 0
    loss_sum = 0.0
    usage = None  # (classes, E)
    with torch.no_grad(), autocast_context(cfg, device, engine):
        for x, y in batches:
            x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
            logits = model(x).float()
            loss_sum += F.cross_entropy(logits, y, reduction="sum").item()
            correct += (logits.argmax(-1) == y).sum().item()
            seen += len(y)
            stats = hooks[0].routing_stats() if hooks else {}
            if "probs" in stats:
                top1 = stats["probs"].argmax(-1)
                e = stats["probs"].shape[-1]
                if usage is None:
                    usage = torch.zeros(num_classes, e, dtype=torch.long, device=device)
                usage.index_put_((y, top1), torch.ones_like(y), accumulate=True)
    if world.distributed:
        sums = torch.tensor([loss_sum, correct, seen], dtype=torch.float64, device=device)  # exact up to 2^53
        distributed.all_sum(sums, *([usage] if usage is not None else []))
        loss_sum, correct, seen = sums[0].item(), int(sums[1].item()), int(sums[2].item())
    out: dict[str, Any] = {"accuracy": correct / seen, "loss": loss_sum / seen}
    if usage is not None:
        out["usage_by_class"] = usage.cpu().tolist()
    return out


def _flat(params: list[torch.Tensor]) -> torch.Tensor:
    return torch.cat([p.detach().flatten() for p in params]).clone()


def train_epoch(
    model: Classifier,
    data: RunData,
    opt: torch.optim.Optimizer,
    cfg: RunConfig,
    device: torch.device,
    epoch: int,
    engine: Engine | None = None,
    step_model: nn.Module | None = None,
    world: distributed.World = distributed.World(),
) -> dict:
    """One pass over the training data. Sums stay on the device: one host sync per epoch.
    On N processes, `step_model` (DDP around `model`) takes the steps and the epoch's sums are all-reduced."""
    step_model = step_model or model
    set_train_mode(model, cfg)
    hooks = routing_modules(model)
    names = {m: n for n, m in model.named_modules()}
    data.train.set_epoch(epoch)
    zero = lambda: torch.zeros((), device=device)  # noqa: E731
    loss_sum, aux_sum, correct, seen = zero(), zero(), zero(), 0
    tallies: dict[nn.Module, RoutingTally] = {m: RoutingTally() for m in hooks}
    routers = {m: _flat(m.router_parameters()) for m in hooks if m is not model.head and m.router_parameters()}
    steps, per_epoch = 0, len(data.train)
    for x, y in data.train:
        for m in hooks:  # a schedule stepped per training step (repro.models.schedules, reading "tau-step")
            m.on_step(steps, per_epoch)
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        with autocast_context(cfg, device, engine):
            logits = step_model(x)
            aux = sum((m.aux_loss() for m in hooks), zero())
            loss = F.cross_entropy(logits.float(), y) + aux.float()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        for m in hooks:
            m.after_backward()
        opt.step()
        steps += 1
        loss_sum += loss.detach() * len(y)
        aux_sum += aux.detach().float() * len(y)
        correct += (logits.argmax(-1) == y).sum()
        seen += len(y)
        for m in hooks:
            stats = m.routing_stats()
            if stats:
                tallies[m].add(stats)
    if steps == 0:
        raise RuntimeError(f"no training batch: {cfg.train_samples} samples with batch size {cfg.batch_size}")
    if world.distributed:
        seen_t = torch.tensor(seen, device=device, dtype=torch.int64)
        distributed.all_sum(loss_sum, aux_sum, correct, seen_t)
        seen = int(seen_t.item())
        for t in tallies.values():
            if t.steps:
                t.all_sum(world)
    mean_loss = (loss_sum / seen).item()
    if not math.isfinite(mean_loss):
        raise NonFiniteLoss(
            f"the training loss became {mean_loss} during epoch {epoch + 1} "
            f"(auxiliary part {(aux_sum / seen).item():.4g}); the run stops without a record"
        )
    entry: dict[str, Any] = {
        "train_loss": mean_loss,
        "train_accuracy": (correct / seen).item(),
        "aux_loss": (aux_sum / seen).item(),
    }
    head = tallies.get(model.head)
    if head is not None and head.steps:
        usage, dropped, forced, entropy_sum = head.sums()
        entry.update(
            expert_usage=usage.tolist(),
            dropped=int(dropped.item()),
            forced=int(forced.item()),
            routing_entropy=(entropy_sum / head.steps).item(),
        )
    layers = {names[m]: t.layer_summary() for m, t in tallies.items() if m is not model.head and t.steps}
    for m, before in routers.items():  # exactly 0 where the router got no gradient (Table 5's k = 1 gate)
        if names[m] in layers:
            layers[names[m]]["router_shift"] = router_shift(before, _flat(m.router_parameters()))
    if layers:
        entry["routing_layers"] = layers
    for m in hooks:  # the schedules in force this epoch; the head's at the top level (tau, k)
        state = m.schedule_state()
        if m is model.head:
            entry.update(state)
        elif state:
            entry.setdefault("schedules", {})[names[m]] = state
    return entry


def schedule_position(epoch: int, cfg: RunConfig) -> tuple[int, int]:
    """(epoch, epochs) on the paper's timeline: identical at the paper's epoch count, compressed when shorter."""
    total = cfg.schedule_epochs or cfg.epochs
    if cfg.epochs <= 1:
        return total - 1, total
    return epoch * (total - 1) // (cfg.epochs - 1), total  # first -> first, last -> last


def train_run(
    cfg: RunConfig,
    device: torch.device,
    data_dir: Path | None,
    checkpoint: Path,
    on_epoch: EpochCallback | None = None,
    data: DataOptions = DataOptions(),
    settings: Settings = Settings(),
) -> dict[str, Any]:
    """Train one run to completion (resuming from `checkpoint` if present); return its metrics and history,
    and under "reproducibility" the facts its numbers depend on (threads, deterministic mode, versions).
    `settings`: the command's (its engine switches, checkpoint interval, cache and weights folders).

    In a torchrun process group every rank calls this with the same `cfg` (repro.runtime.distributed): rank 0
    writes the checkpoints, the others wait for it; a failure on any rank ends the command (WorldBroken).
    """
    world = distributed.current()
    # The run's threads and deterministic mode, in whatever process trains it (repro.runtime.numerics).
    with numerics.run_numerics(cfg.threads, cfg.deterministic, device) as facts:
        if not world.distributed:
            out = _train(cfg, device, data_dir, checkpoint, on_epoch, world, data, settings)
        else:
            try:
                out = _train(cfg, device, data_dir, checkpoint, on_epoch, world, data, settings)
            except NonFiniteLoss:
                raise  # every rank reduced the same loss: rank 0 records the failure, all go on to the next run
            except Exception as exc:
                raise distributed.WorldBroken(
                    f"rank {world.rank} of {world.size}: {type(exc).__name__}: {exc}"
                ) from exc
    return {**out, "reproducibility": facts}


def _train(
    cfg: RunConfig,
    device: torch.device,
    data_dir: Path | None,
    checkpoint: Path,
    on_epoch: EpochCallback | None,
    world: distributed.World,
    options: DataOptions,
    settings: Settings,
) -> dict[str, Any]:
    watch = Stopwatch()
    torch.manual_seed(cfg.seed)
    spec = get_dataset(cfg.dataset)
    engine = resolve_engine(cfg, device, settings.engine)
    with watch.part("model building"):
        model = build_engine_model(cfg, engine, settings)
        frozen = freeze(model, cfg)
        model.to(device)
        opt, sched = make_optimizer(cfg, model)
    with watch.part("data preparation"):
        data = make_data(cfg, device, data_dir, engine.channels_last, world, options, settings)
    with watch.part("model building"):
        compile_error = compile_backbone(model, cfg, engine, device) if engine.compile else ""
    history: list[dict[str, Any]] = []
    start, elapsed = 0, 0.0
    resume = checkpoint.exists()
    if world.distributed:
        resume = distributed.broadcast(resume)  # rank 0's view of the shared directory decides
    if resume:
        with watch.part("checkpoints"):
            history, start, elapsed = load_checkpoint(checkpoint, model, opt, sched, device)
    hooks = routing_modules(model)
    step_model: nn.Module = model
    if world.distributed:  # routed modules may leave an expert without gradient in a step
        step_model = distributed.wrap(model, world, device, any(getattr(m, "routed", False) for m in hooks))
    every, since = settings.checkpoint_seconds, 0.0  # training seconds since the last checkpoint
    watch.start("epochs")
    for epoch in range(start, cfg.epochs):
        t0 = time.perf_counter()
        if world.rank > 0:
            torch.manual_seed(distributed.rank_seed(cfg.seed, epoch, world.rank))
        for m in hooks:
            m.on_epoch_start(*schedule_position(epoch, cfg))
        entry = {"epoch": epoch + 1, **train_epoch(model, data, opt, cfg, device, epoch, engine, step_model, world)}
        if sched is not None:
            sched.step()
        if world.distributed:
            distributed.sync_buffers(model)  # each rank's last step updated its own BatchNorm statistics
        evaluation = evaluate(model, data.test, spec.num_classes, cfg, device, engine, world)
        entry.update(
            test_accuracy=evaluation["accuracy"], test_loss=evaluation["loss"], seconds=time.perf_counter() - t0
        )
        if "usage_by_class" in evaluation:
            entry["test_usage_by_class"] = evaluation["usage_by_class"]
        history.append(entry)
        elapsed += entry["seconds"]
        since += entry["seconds"]
        # After the last epoch the record follows; a kill before it resumes from the last checkpoint.
        if world.main and epoch + 1 < cfg.epochs and since >= every:
            with watch.part("checkpoints"):
                save_checkpoint(checkpoint, cfg.hash, model, opt, sched, history, epoch + 1, elapsed, device)
            since = 0.0
        if world.distributed:
            distributed.barrier()
        if on_epoch is not None:
            on_epoch(epoch + 1, cfg.epochs, entry)
    watch.stop()
    dtype = autocast_dtype(cfg, device, engine)
    executed = {
        **asdict(engine),
        "compile": engine.compile and not compile_error,
        "compile_error": compile_error,
        "autocast": str(dtype).removeprefix("torch.") if dtype is not None else None,
        **world.describe(cfg.batch_size),
        **paths_ran(model),
    }
    chance = 1.0 / (data.classes or spec.num_classes)
    # Which input path fed the model (repro.data: tensor_<device>, pil, decode_cpu, decode_cuda).
    data_path = {"pipeline": getattr(data.train, "pipeline", None), "workers": getattr(data.train, "workers", None)}
    return {
        **_summary(cfg, history, data.source, frozen, elapsed, chance, settings.cache),
        "engine": executed,
        "input": data_path,
        "timings": watch.as_dict(),
    }


def _weights_text(cfg: RunConfig, cache: Path) -> str:
    if cfg.digit_weights:  # the file the model was built from
        from repro.train import digit_weights

        return digit_weights.describe(
            digit_weights.weights_path(cfg.backbone["name"], cfg.dataset, cfg.image_size, cache=cache)
        )
    return "pretrained torchvision weights" if cfg.pretrained else "random initialisation"


def _summary(
    cfg: RunConfig,
    history: list[dict],
    source: str,
    frozen: list[str],
    elapsed: float,
    chance: float,
    cache: Path = DEFAULT_CACHE,
) -> dict[str, Any]:
    accs = [h["test_accuracy"] for h in history]
    peak = max(range(len(accs)), key=accs.__getitem__)
    final = accs[-1]
    metric = final if cfg.metric == "final" else accs[peak]
    if not math.isfinite(metric):
        raise NonFiniteLoss(f"test accuracy is {metric}")
    last = history[-1]
    return {
        "metrics": {
            "accuracy": metric,
            "final_accuracy": final,
            "peak_accuracy": accs[peak],
            "peak_epoch": peak + 1,
            "protocol": cfg.metric,
            "chance": chance,
        },
        "history": history,
        "routing": last_routing(last),
        "data": source,
        "frozen_parameters": len(frozen),
        "train_seconds": elapsed,
        "weights": _weights_text(cfg, cache),
    }
