"""Inference latency per batch and operator calls per forward (Table 7, Section 5): the latency measurer.

Legend: B batch, C image channels, H x W resolution, D backbone features, E experts.

A row that measures "latency" is timed three ways, in evaluation mode without
gradients, with the schedules (temperature, k warm-up) at their last epoch: its
head alone on (B, D) features at the paper's D, its backbone alone and the whole
model on (B, C, H, W) images, with the harness of repro.measure.timing (one
intra-op thread on a CPU by default). Operator calls are those of one head
forward at the paper-scale batch: Section 5 blames per-expert launches for the
loop's slowdown, so its count grows with E and the batched path's does not.

A row's measurement is kept in <results>/runs/latency/<key>.json, the key naming everything it depends on
(the model, the settings, the device, torch's version, the models' code): a later command on the same
device reuses it, as a run record is reused, unless asked to measure again (--remeasure-latency).

Nothing is registered on import: the pipeline's measurer table names
`measure_latency`, the cost model's estimator table `estimate_latency`.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import importlib.util
import json
import re
import sys
from dataclasses import asdict
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from repro.data.specs import get_dataset
from repro.core.devices import device_label
from repro.core.fsutil import FolderWriter
from repro.execution.files import read_json, runs_dir
from repro.plan.latency_settings import LatencySettings
from repro.plan.manifest import Row
from repro.plan.table_plan import TablePlan
from repro.results.measurements import Measured, Measuring, row_metric

if TYPE_CHECKING:  # torch is imported where a row is timed or counted: a kept measurement is read without it
    import torch
    from torch import nn

    from repro.measure.measurer import Context
    from repro.measure.timing import Timing
    from repro.models.classifier import Classifier

# What a failed row leaves missing; the metrics a measured row sets.
LATENCY_METRICS = ("latency_ms", "model_latency_ms", "backbone_latency_ms", "op_calls")
# Comparison ratios: (row metric, comparison metric), row over baseline.
RATIOS = (("latency_ms", "slowdown"), ("model_latency_ms", "model_slowdown"))


@lru_cache(maxsize=None)
def paper_features(dataset: str, backbone: str) -> int:
    """D of a backbone at the dataset's own resolution; backbone is a Component key as JSON."""
    from repro.models import BACKBONES

    spec, b = get_dataset(dataset), json.loads(backbone)
    shape = (spec.channels, spec.image_size, spec.image_size)
    return BACKBONES.get(b["name"]).builder(shape, **b["params"]).out_features


def row_head(row: Row, device: torch.device) -> tuple[nn.Module, int]:
    """The row's head and the paper's D; seeded, so rows that differ only in dispatch share weights."""
    import torch

    from repro.models import HEADS
    from repro.spec.recipes import at_last_epoch

    d = paper_features(row.dataset, json.dumps(row.backbone.key(), sort_keys=True))
    torch.manual_seed(0)
    head = HEADS.get(row.head.name).builder(d, get_dataset(row.dataset).num_classes, **row.head.params)
    return at_last_epoch(head, row.dataset).eval().to(device), d


def row_model(row: Row, image_size: int, device: torch.device) -> Classifier:
    import torch

    from repro.models import build_model
    from repro.spec.recipes import at_last_epoch

    torch.manual_seed(0)
    model = build_model(row.dataset, row.backbone, row.head, image_size=image_size)
    return at_last_epoch(model, row.dataset).eval().to(device)


def _inputs(shape: tuple[int, ...], device: torch.device) -> torch.Tensor:
    import torch

    return torch.randn(shape, generator=torch.Generator().manual_seed(1)).to(device)


def head_call(head: nn.Module, features: int, batch: int, device: torch.device) -> Callable[[], Any]:
    h = _inputs((batch, features), device)  # (B, D)
    return lambda: head(h)


def measure_head(row: Row, s: LatencySettings, device: torch.device) -> dict[str, Any]:
    """The head alone on (B, D) features: its timing and its operator count."""
    import torch

    from repro.measure.timing import compiled_or_eager, count_ops, cpu_threads, time_call

    head, d = row_head(row, device)
    compile_error = ""
    with torch.no_grad(), cpu_threads(device, s.threads):
        ops = count_ops(head_call(head, d, s.op_batch, device), device)
        timed = head
        if s.compile:
            timed, compile_error = compiled_or_eager(head, lambda m: head_call(m, d, s.batch, device)())
        timing = time_call(head_call(timed, d, s.batch, device), device, s)
    cfg = getattr(head, "cfg", None)
    return {
        "head": asdict(timing),
        "ops": asdict(ops),
        "head_features": d,
        "batch": s.batch,
        "compiled": s.compile and not compile_error,
        "compile_error": compile_error,
        "op_batch": s.op_batch,
        "num_experts": getattr(cfg, "num_experts", None),
        "dispatch": getattr(cfg, "dispatch", None),
    }


def operator_counts(row: Row) -> dict[str, Any]:
    """The row metrics an operator count gives (op_calls, host_syncs, num_experts), on the CPU at the paper-scale
    batch, without timing anything: what the readings table recounts for a row under another reading."""
    import torch

    from repro.measure.timing import count_ops, cpu_threads

    device = torch.device("cpu")
    head, d = row_head(row, device)
    with torch.no_grad(), cpu_threads(device, 1):
        ops = count_ops(head_call(head, d, LatencySettings().op_batch, device), device)
    out = {"op_calls": ops.ops, "host_syncs": ops.host_syncs}
    if (experts := getattr(getattr(head, "cfg", None), "num_experts", None)) is not None:
        out["num_experts"] = experts
    return out


def measure_row(row: Row, s: LatencySettings, device: torch.device, backbones: dict[str, Timing]) -> dict[str, Any]:
    """measure_head, plus the whole model and its backbone alone on (B, C, H, W) images."""
    import torch

    from repro.measure.timing import cpu_threads, time_call

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


def latency_path(results_dir: Path, row: Row, s: LatencySettings, label: str) -> Path:
    """Where a row's measurement under settings `s` on the device `label` is kept."""
    from repro.measure.flop_check import _fingerprint, row_key

    blob = json.dumps(
        {
            "model": row_key(row),
            "settings": asdict(s),
            "device": label,
            "torch": torch_version(),
            "code": _fingerprint(),
        },
        sort_keys=True,
    )
    return runs_dir(results_dir) / "latency" / f"{hashlib.sha256(blob.encode()).hexdigest()[:16]}.json"


def torch_version() -> str:
    """torch.__version__, read from its version.py where torch is not imported yet (its import takes seconds)."""
    if "torch" not in sys.modules and (spec := importlib.util.find_spec("torch")) and spec.submodule_search_locations:
        path = Path(next(iter(spec.submodule_search_locations))) / "version.py"
        found = re.search(r"^__version__\s*=\s*['\"]([^'\"]+)['\"]", path.read_text(), re.M) if path.is_file() else None
        if found:
            return found.group(1)
    import torch

    return torch.__version__


def _kept(path: Path) -> dict[str, Any] | None:
    """A kept measurement, None if absent or not one (a damaged file is measured again and overwritten)."""
    data = read_json(path)
    keys = ("head", "ops", "model", "backbone", "measured_at")
    return data if isinstance(data, dict) and all(k in data for k in keys) else None


# --------------------------------------------------------------------------- measurer and estimator
def measure_latency(plan: TablePlan, ctx: Context) -> Measured:
    """Every latency row of the plan timed at its settings and its operators counted (or its kept measurement
    reused); comparisons get head and model slowdowns."""
    out, manifest = Measuring(), plan.manifest
    s = plan.latency
    label = device_label(ctx.device, s.threads)
    out.details["latency_setup"] = {"device": label, "profile": plan.profile_name, **asdict(s)}
    backbones: dict[str, Timing] = {}
    for row in plan.latency_rows:
        path = latency_path(ctx.results_dir, row, s, label)
        try:
            r = None if ctx.remeasure_latency else _kept(path)
            if r is None:
                import torch

                r = {
                    **measure_row(row, s, torch.device(ctx.device), backbones),
                    "measured_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
                }
                FolderWriter(ctx.results_dir).write_json(path, r)
        except Exception as exc:  # one failing row must not hide the others
            out.problems.append(f"{manifest.id}/{row.id}: latency failed: {type(exc).__name__}: {exc}")
            for metric in LATENCY_METRICS:
                out.missing[row_metric(row.id, metric)] = f"latency measurement failed: {type(exc).__name__}: {exc}"
            continue
        out.details.setdefault("latency", {})[row.id] = r
        out.set_row(row.id, "latency_ms", r["head"]["median_ms"])
        out.set_row(row.id, "model_latency_ms", r["model"]["median_ms"])
        out.set_row(row.id, "backbone_latency_ms", r["backbone"]["median_ms"])
        out.set_row(row.id, "op_calls", r["ops"]["ops"])
        out.set_row(row.id, "host_syncs", r["ops"]["host_syncs"])
        if r["ops"]["kernel_launches"] is not None:
            out.set_row(row.id, "kernel_launches", r["ops"]["kernel_launches"])
        if r["num_experts"] is not None:
            out.set_row(row.id, "num_experts", r["num_experts"])
        if ctx.progress is not None:
            ctx.progress.log(
                f"[dim]{manifest.id}/{row.id}: head {r['head']['median_ms']:.3g} ms, "
                f"model {r['model']['median_ms']:.3g} ms, {r['ops']['ops']} ops"
            )
    for comp in manifest.comparisons:
        for metric, ratio in RATIOS:
            a, b = out.row(comp.row, metric), out.row(comp.baseline, metric)
            if a is not None and b:
                out.set_comparison(comp.id, ratio, a / b)
    return out.done()
