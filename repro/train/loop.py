"""Training one run with the paper's recipe (Section 4.1): data, model, optimiser, epochs, metrics.

Dense and MoE models go through exactly the same loop; the MoE heads add their
auxiliary losses (Section 3.4) and receive the temperature / k schedules through
their ``on_epoch_start`` hook. A checkpoint (repro.train.checkpoints) is written after an epoch once a minute of
training has passed since the last one, never after the last epoch (the record follows it), so an interrupted run
resumes where its checkpoint stopped and, on a CPU, ends with the same record as an uninterrupted one.

How a run executes (memory format, compilation, the sparse head's dispatch) is
an Engine: choices that change speed, not results beyond float rounding, so
they come with the command's settings (repro.core.settings.EngineSwitches) and are
recorded, never hashed into the config.
"""

from __future__ import annotations

import contextlib
import copy
import math
import time
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Protocol, TypeGuard

import torch
import torch.nn.functional as F
from torch import nn

from repro.train.checkpoints import load_checkpoint, save_checkpoint
from repro.data.read_options import DataOptions
from repro.data.specs import get_dataset
from repro.core.settings import DEFAULT_CACHE, EngineSwitches, Settings
from repro.runtime import distributed, numerics
from repro.runtime.locks import LockSettings
from repro.models import Component, build_model
from repro.models import small_maps
from repro.models.small_maps import to_channels_last
from repro.models.base import RoutingHooks, entropy
from repro.models.classifier import Classifier
from repro.plan.run_config import RunConfig
from repro.results.timings import Stopwatch

EpochCallback = Callable[[int, int, dict[str, Any]], None]  # (epoch done, epochs, history entry)

if TYPE_CHECKING:

    class RoutedModule(RoutingHooks, nn.Module):
        """What routing_modules finds: a module with the engine hooks (a sparse head, MoEConv2d), as one type."""


class NonFiniteLoss(RuntimeError):
    """The loss became NaN or infinite: the run stops instead of writing a meaningless record."""


class EpochBatches(Protocol):
    """The training batches: len() of them per epoch, and set_epoch(e) replays epoch e's order (a resume)."""

    def __iter__(self) -> Iterator[tuple[torch.Tensor, torch.Tensor]]: ...
    def __len__(self) -> int: ...
    def set_epoch(self, epoch: int) -> None: ...


@dataclass
class RunData:
    train: EpochBatches
    test: Iterable
    source: str  # what was loaded, for the record
    classes: int | None = None  # distinct labels trained on (None: the dataset's); chance is 1 / classes


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
            with _autocast(cfg, device, engine):
                out = trial(x)
            if out.requires_grad:
                out.float().sum().backward()
    except Exception as exc:  # any compiler failure: train eagerly, as without compilation
        lines = [line for line in str(exc).splitlines() if line.strip()][:2]  # dynamo puts the cause second
        return f"{type(exc).__name__}: {' '.join(lines)}"
    model.backbone.compile(backend=backend)  # in place: parameter names, and so checkpoints, are unchanged
    return ""


def _resize(images: torch.Tensor, size: int) -> torch.Tensor:
    if images.shape[-1] == size:
        return images
    x = F.interpolate(images.float(), size=(size, size), mode="bilinear", antialias=True, align_corners=False)
    return x.round().clamp(0, 255).to(torch.uint8)


def make_data(
    cfg: RunConfig,
    device: torch.device,
    data_dir: Path | None,
    channels_last: bool = False,
    world: distributed.World = distributed.World(),
    options: DataOptions = DataOptions(),
    settings: Settings = Settings(),
) -> RunData:
    """The run's loaders; on N processes, rank r's shard of every epoch in batches of batch_size // N. From the
    command's `settings`: the cache folder, where a decoded dataset is kept (repro.data.tensors), and the ranks
    on this host, which share its CPUs for loader processes."""
    cache = settings.cache
    from repro.data import digits, loader, synthetic, tensors

    spec = get_dataset(cfg.dataset)
    batch, shard = distributed.local_batch(cfg.batch_size, world), (world.rank, world.size)
    flip = True
    if cfg.data == "digits":
        xtr, ytr = digits.digits_tensors(cfg.dataset, cfg.train_samples, cfg.image_size, "train")
        xte, yte = digits.digits_tensors(cfg.dataset, cfg.test_samples, cfg.image_size, "test")
        flip = False  # a mirrored digit is not a digit
        source = (
            f"real handwritten digits (scikit-learn) standing in for {spec.title}: {spec.num_classes} classes of "
            f"{digits.digits_per_image(spec.num_classes)}-digit numbers, {len(ytr)} train / {len(yte)} test "
            f"images at {cfg.image_size}px from disjoint scans"
        )
    elif cfg.data == "synthetic":
        n_train, n_test = cfg.train_samples or 2048, cfg.test_samples or 512
        # The data set is fixed (seed 0) like a real one; the run seed sets init and order.
        xtr, ytr = synthetic.synthetic_tensors(cfg.dataset, n_train, 0, cfg.image_size, "train", cache)
        xte, yte = synthetic.synthetic_tensors(cfg.dataset, n_test, 0, cfg.image_size, "test", cache)
        source = f"synthetic {spec.title}-shaped data: {n_train} train / {n_test} test images at {cfg.image_size}px"
    elif get_dataset(cfg.dataset).in_memory:
        allow = options.allow_unverified
        xtr, ytr = tensors.load_tensors(cfg.dataset, data_dir, "train", cache=cache, allow_unverified=allow)
        xte, yte = tensors.load_tensors(cfg.dataset, data_dir, "test", cache=cache, allow_unverified=allow)
        xtr, ytr = loader.subset(xtr, ytr, cfg.train_samples)
        xte, yte = loader.subset(xte, yte, cfg.test_samples)
        xtr, xte = _resize(xtr, cfg.image_size), _resize(xte, cfg.image_size)
        source = f"{spec.title}: {len(ytr)} train / {len(yte)} test images from {data_dir or 'the data root'}"
    else:
        from repro.data import imagenet

        train_folders, test_folders = imagenet.image_folder_loaders(
            cfg.dataset,
            data_dir,
            batch,
            cfg.image_size,
            seed=cfg.seed,
            train_samples=cfg.train_samples,
            test_samples=cfg.test_samples,
            device=device,
            channels_last=channels_last,
            shard=shard,
            workers=options.workers
            if options.workers is not None
            else imagenet.default_workers(settings.launch.local_world_size),
        )
        return RunData(
            train_folders,
            test_folders,
            f"{spec.title} image folders under {data_dir or 'the data root'}",
            len(train_folders.dataset.classes),
        )
    train = loader.TensorLoader.for_dataset(
        cfg.dataset,
        xtr,
        ytr,
        batch,
        train=True,
        seed=cfg.seed,
        device=device,
        channels_last=channels_last,
        flip=flip,
        shard=shard,
    )
    test = loader.TensorLoader.for_dataset(
        cfg.dataset, xte, yte, batch, train=False, device=device, channels_last=channels_last, shard=shard
    )
    return RunData(train, test, source, int(ytr.unique().numel()))


def _has_hooks(module: nn.Module) -> TypeGuard[RoutedModule]:
    return isinstance(module, RoutingHooks)


def routing_modules(model: nn.Module) -> list[RoutedModule]:
    """The head and any routed backbone layers: every module with the engine hooks."""
    return [m for m in model.modules() if m is not model and _has_hooks(m)]


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


def autocast_dtype(cfg: RunConfig, device: torch.device, engine: Engine | None = None) -> torch.dtype | None:
    """bfloat16 where the recipe asks for it and the device runs it (CUDA; the CPU with engine.bf16_cpu)."""
    on = device.type == "cuda" or (device.type == "cpu" and engine is not None and engine.bf16_cpu)
    return torch.bfloat16 if cfg.bf16 and on else None


def _autocast(cfg: RunConfig, device: torch.device, engine: Engine | None = None):
    dtype = autocast_dtype(cfg, device, engine)
    return torch.autocast(device.type, dtype=dtype) if dtype is not None else contextlib.nullcontext()


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
    with torch.no_grad(), _autocast(cfg, device, engine):
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


class RoutingTally:
    """Sums of one routed module's per-step routing statistics over an epoch, on the device."""

    def __init__(self) -> None:
        self.steps = 0
        # Summed over the steps added; None until the first.
        self.usage: torch.Tensor | None = None
        self.dropped: torch.Tensor | None = None
        self.forced: torch.Tensor | None = None
        self.entropy: torch.Tensor | None = None

    def add(self, stats: dict) -> None:
        self.steps += 1
        for name, key in (
            ("usage", "expert_counts"),
            ("dropped", "dropped"),
            ("forced", "forced"),
            ("entropy", "entropy"),
        ):
            value = stats[key].float() if key == "entropy" else stats[key]
            old = getattr(self, name)
            setattr(self, name, value if old is None else old + value)

    def sums(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """(usage, dropped, forced, entropy); asked for only once a step was added."""
        assert self.usage is not None and self.dropped is not None
        assert self.forced is not None and self.entropy is not None
        return self.usage, self.dropped, self.forced, self.entropy

    def layer_summary(self) -> dict[str, Any]:
        """A backbone MoE layer's epoch (Table 5): expert usage counts, mean H(p_bar), H of the usage."""
        counts, _, _, entropy_sum = self.sums()
        usage = counts.float()
        return {
            "expert_usage": counts.tolist(),
            "entropy": (entropy_sum / self.steps).item(),
            "usage_entropy": entropy(usage / usage.sum().clamp_min(1)).item(),
        }

    def all_sum(self, world: distributed.World) -> None:
        """Sums over the ranks; `steps` counts every rank's steps, so means stay means over steps."""
        distributed.all_sum(*self.sums())
        self.steps *= world.size


def _flat(params: list[torch.Tensor]) -> torch.Tensor:
    return torch.cat([p.detach().flatten() for p in params]).clone()


def router_shift(before: torch.Tensor, after: torch.Tensor) -> float:
    """How far a router moved over an epoch: ||W_after - W_before|| / ||W_before||, 0.0 when it did not."""
    return ((after - before).norm() / before.norm().clamp_min(torch.finfo(before.dtype).tiny)).item()


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
        with _autocast(cfg, device, engine):
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


def paths_ran(model: nn.Module) -> dict[str, Any]:
    """{"moe_conv_paths": {layer: {input shape "BxCxHxW": the exact path its last call of that shape ran}}} for a
    model with MoEConv2d layers (repro.models.moe_conv_choice), else {}: which rounding a run's numbers carry."""
    ran = {
        name: {"x".join(map(str, shape)): path for shape, path in m.paths_ran.items()}
        for name, m in model.named_modules()
        if isinstance(getattr(m, "paths_ran", None), dict)
    }
    return {"moe_conv_paths": ran} if ran else {}


def _routing(last: dict[str, Any]) -> dict[str, Any]:
    """The last epoch's routing: the head's (expert_usage, test_usage_by_class, routing_entropy) and, under
    "layers", each backbone MoE layer's {"expert_usage": [E counts], "entropy": H(p_bar), "usage_entropy": ...,
    "router_shift": how far its router moved that epoch}."""
    out: dict[str, Any] = {k: last[k] for k in ("expert_usage", "test_usage_by_class", "routing_entropy") if k in last}
    if "routing_layers" in last:
        out["layers"] = last["routing_layers"]
    return out


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
        "routing": _routing(last),
        "data": source,
        "frozen_parameters": len(frozen),
        "train_seconds": elapsed,
        "weights": _weights_text(cfg, cache),
    }
