"""Inference latency per batch and operator calls per forward (Table 7, Section 5).

Legend: B batch, C image channels, H x W resolution, D backbone features, E experts.

A row that measures "latency" is timed three ways, in evaluation mode without
gradients, with the schedules (temperature, k warm-up) at their last epoch: its
head alone on (B, D) features at the paper's D, its backbone alone and the whole
model on (B, C, H, W) images. Each timing runs warm-up calls, then repetitions
until a count and a time budget are met, and keeps the median and quartiles.
On CUDA each call is bracketed by CUDA events after a synchronisation; on a CPU
by time.perf_counter on a fixed number of intra-op threads (one by default: on a
shared machine a second thread waits for descheduled peers and times noise).

Operator calls are device-independent: the non-view aten operators one head
forward executes (counted below autograd with a TorchDispatchMode), of which
host synchronisations (nonzero, item) are counted apart. On CUDA the profiler's
kernel launches are added. Section 5 blames per-expert launches for the loop's
slowdown: its count grows with E, the batched path's does not.
"""

from __future__ import annotations

import json
import platform
import statistics
import time
from collections import Counter
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace
from functools import lru_cache
from typing import Any, Callable, Iterator

import torch
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode

from repro.data.specs import get_dataset
from repro.manifest import Manifest, Profile, Row
from repro.models import BACKBONES, HEADS, build_model
from repro.measure.base import Context
from repro.results import Measured
from repro.recipes import at_last_epoch

HOST_SYNC_OPS = {"nonzero", "_local_scalar_dense", "item", "masked_select", "unique", "_unique2"}
LAUNCH_EVENTS = {"cudaLaunchKernel", "cuLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernelEx"}


@dataclass(frozen=True)
class LatencySettings:
    batch: int = 256  # the text gives no latency batch: ImageNet's training batch (Section 4.1)
    warmup: int = 10
    min_reps: int = 20
    max_reps: int = 200
    budget_s: float = 5.0  # repetitions stop past this time, once min_reps are done
    threads: int = 1  # CPU intra-op threads
    image_size: int | None = None  # cap on the whole-model resolution; heads keep the paper's D
    op_batch: int = 256  # operator counts always at the paper-scale batch
    compile: bool = False  # time heads under torch.compile (operator counts stay eager)


QUICK = LatencySettings(warmup=1, min_reps=3, max_reps=5, budget_s=0.1)


def settings_for(profile: Profile, paper_scale: bool) -> LatencySettings:
    base = LatencySettings() if paper_scale else QUICK
    return replace(base, batch=profile.batch_size or base.batch, image_size=profile.max_image_size)


@contextmanager
def cpu_threads(device: torch.device, threads: int) -> Iterator[None]:
    if device.type != "cpu" or threads <= 0:
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(before)


# --------------------------------------------------------------------------- timing
@dataclass(frozen=True)
class Timing:
    median_ms: float
    p25_ms: float
    p75_ms: float
    min_ms: float
    reps: int


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def time_call(fn: Callable[[], Any], device: torch.device, s: LatencySettings) -> Timing:
    """Milliseconds per call of fn: warm-up, then repetitions; median and quartiles."""
    for _ in range(s.warmup):
        fn()
    _sync(device)
    times: list[float] = []
    start = time.perf_counter()
    while len(times) < s.max_reps and (len(times) < s.min_reps or time.perf_counter() - start < s.budget_s):
        if device.type == "cuda":
            _sync(device)
            begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            begin.record()
            fn()
            end.record()
            end.synchronize()
            times.append(begin.elapsed_time(end))
        else:
            t0 = time.perf_counter()
            fn()
            times.append(1e3 * (time.perf_counter() - t0))
    q1, q2, q3 = statistics.quantiles(times, n=4, method="inclusive") if len(times) > 1 else times * 3
    return Timing(q2, q1, q3, min(times), len(times))


# --------------------------------------------------------------------------- operator counts
class _OpCounter(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.ops: Counter[str] = Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if not func.is_view:  # views (t, select, expand, detach) launch nothing
            self.ops[func.overloadpacket.__name__] += 1
        return func(*args, **(kwargs or {}))


@dataclass(frozen=True)
class OpCount:
    ops: int  # non-view aten operators executed
    host_syncs: int  # among them, those that read device values on the host
    by_name: dict[str, int]
    kernel_launches: int | None = None  # CUDA only


def count_ops(fn: Callable[[], Any], device: torch.device) -> OpCount:
    with torch.no_grad(), _OpCounter() as counter:
        fn()
    launches = None
    if device.type == "cuda":
        from torch.profiler import ProfilerActivity, profile

        with torch.no_grad(), profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            fn()
            _sync(device)
        launches = sum(e.name in LAUNCH_EVENTS for e in prof.events())
    ops = dict(counter.ops.most_common())
    return OpCount(sum(ops.values()), sum(n for k, n in ops.items() if k in HOST_SYNC_OPS), ops, launches)


# --------------------------------------------------------------------------- models
@lru_cache(maxsize=None)
def paper_features(dataset: str, backbone: str) -> int:
    """D of a backbone at the dataset's own resolution; backbone is a Component key as JSON."""
    spec, b = get_dataset(dataset), json.loads(backbone)
    shape = (spec.channels, spec.image_size, spec.image_size)
    return BACKBONES.get(b["name"]).builder(shape, **b["params"]).out_features


def row_head(row: Row, device: torch.device) -> tuple[nn.Module, int]:
    """The row's head and the paper's D; seeded, so rows that differ only in dispatch share weights."""
    d = paper_features(row.dataset, json.dumps(row.backbone.key(), sort_keys=True))
    torch.manual_seed(0)
    head = HEADS.get(row.head.name).builder(d, get_dataset(row.dataset).num_classes, **row.head.params)
    return at_last_epoch(head, row.dataset).eval().to(device), d


def row_model(row: Row, image_size: int, device: torch.device) -> nn.Module:
    torch.manual_seed(0)
    model = build_model(row.dataset, row.backbone, row.head, image_size=image_size)
    return at_last_epoch(model, row.dataset).eval().to(device)


def _inputs(shape: tuple[int, ...], device: torch.device) -> torch.Tensor:
    return torch.randn(shape, generator=torch.Generator().manual_seed(1)).to(device)


def head_call(head: nn.Module, features: int, batch: int, device: torch.device) -> Callable[[], Any]:
    h = _inputs((batch, features), device)  # (B, D)
    return lambda: head(h)


def compiled_or_eager(module: nn.Module, call: Callable[[nn.Module], Any]) -> tuple[nn.Module, str]:
    """torch.compile(module) if one call through it succeeds; else the module and why not."""
    compiled = torch.compile(module)
    try:
        call(compiled)
    except Exception as exc:  # a compiler failure times the eager module instead
        lines = [line for line in str(exc).splitlines() if line.strip()][:2]
        return module, f"{type(exc).__name__}: {' '.join(lines)}"
    return compiled, ""


def measure_head(row: Row, s: LatencySettings, device: torch.device) -> dict[str, Any]:
    """The head alone on (B, D) features: its timing and its operator count."""
    head, d = row_head(row, device)
    compile_error = ""
    with torch.no_grad(), cpu_threads(device, s.threads):
        ops = count_ops(head_call(head, d, s.op_batch, device), device)
        timed = head
        if s.compile:
            timed, compile_error = compiled_or_eager(head, lambda m: head_call(m, d, s.batch, device)())
        timing = time_call(head_call(timed, d, s.batch, device), device, s)
    cfg = getattr(head, "cfg", None)
    return {"head": asdict(timing), "ops": asdict(ops), "head_features": d, "batch": s.batch,
            "compiled": s.compile and not compile_error, "compile_error": compile_error,
            "op_batch": s.op_batch, "num_experts": getattr(cfg, "num_experts", None),
            "dispatch": getattr(cfg, "dispatch", None)}


def measure_row(row: Row, s: LatencySettings, device: torch.device, backbones: dict[str, Timing]) -> dict[str, Any]:
    """measure_head, plus the whole model and its backbone alone on (B, C, H, W) images."""
    spec = get_dataset(row.dataset)
    size = min(spec.image_size, s.image_size or spec.image_size)
    out = measure_head(row, s, device)
    model = row_model(row, size, device)
    x = _inputs((s.batch, spec.channels, size, size), device)  # (B, C, H, W)
    with torch.no_grad(), cpu_threads(device, s.threads):
        whole = time_call(lambda: model(x), device, s)
        key = f"{row.dataset}/{row.backbone.key()}/{size}"
        if key not in backbones:
            backbones[key] = time_call(lambda: model.backbone(x), device, s)
    return {**out, "model": asdict(whole), "backbone": asdict(backbones[key]), "image_size": size}


def device_label(device: torch.device, threads: int) -> str:
    if device.type == "cuda":
        return f"cuda: {torch.cuda.get_device_name(device)}"
    return f"cpu: {platform.processor() or platform.machine()}, {threads} intra-op thread(s)"


def measure_latency(manifest: Manifest, ctx: Context) -> Measured:
    out = Measured()
    device = torch.device(ctx.device)
    s = settings_for(ctx.profile, ctx.paper_scale)
    out.details["latency_setup"] = {"device": device_label(device, s.threads), "profile": ctx.profile_name,
                                    **asdict(s)}
    backbones: dict[str, Timing] = {}
    for row in manifest.rows:
        if "latency" not in row.measures:
            continue
        prefix = f"rows.{row.id}"
        try:
            r = measure_row(row, s, device, backbones)
        except Exception as exc:  # one failing row must not hide the others
            out.problems.append(f"{manifest.id}/{row.id}: latency failed: {type(exc).__name__}: {exc}")
            for metric in ("latency_ms", "model_latency_ms", "backbone_latency_ms", "op_calls"):
                out.missing[f"{prefix}.{metric}"] = f"latency measurement failed: {type(exc).__name__}: {exc}"
            continue
        out.details.setdefault("latency", {})[row.id] = r
        m = out.metrics
        m[f"{prefix}.latency_ms"] = r["head"]["median_ms"]
        m[f"{prefix}.model_latency_ms"] = r["model"]["median_ms"]
        m[f"{prefix}.backbone_latency_ms"] = r["backbone"]["median_ms"]
        m[f"{prefix}.op_calls"] = r["ops"]["ops"]
        m[f"{prefix}.host_syncs"] = r["ops"]["host_syncs"]
        if r["ops"]["kernel_launches"] is not None:
            m[f"{prefix}.kernel_launches"] = r["ops"]["kernel_launches"]
        if r["num_experts"] is not None:
            m[f"{prefix}.num_experts"] = r["num_experts"]
        if ctx.progress is not None:
            ctx.progress.log(f"[dim]{manifest.id}/{row.id}: head {r['head']['median_ms']:.3g} ms, "
                             f"model {r['model']['median_ms']:.3g} ms, {r['ops']['ops']} ops")
    for comp in manifest.comparisons:
        for metric, ratio in (("latency_ms", "slowdown"), ("model_latency_ms", "model_slowdown")):
            a, b = out.metrics.get(f"rows.{comp.row}.{metric}"), out.metrics.get(f"rows.{comp.baseline}.{metric}")
            if a is not None and b:
                out.metrics[f"comparisons.{comp.id}.{ratio}"] = a / b
    return out
