"""The "flops" measure: every row's per-sample FLOPs counted three ways, and its routed fraction rho.

Counting builds the model and traces it (repro.models.flops), so reports are kept per
process by model identity, and `flop_summary` keeps them on disk, keyed by the model and
a fingerprint of everything that decides a count: the code that builds, schedules and
counts it, the datasets' shapes, and the torch and fvcore versions. The same model under
the same fingerprint counts the same, so the FLOP check and the "flops" measure reuse it;
a changed model file, rule or library counts afresh. A batch-axis head (Expert Choice, Soft
MoE) is reported per image at its dataset's recipe batch (`counted_batch`), the batch it
trains with. The cost estimates of `repro list` need only the backbone's and head's
multiply-adds: `estimate_macs` reads a shipped model's from repro.measure.model_macs,
another's from that cache, or counts them from layer shapes in one forward pass
(repro.models.flops' analytic column, without the fvcore and torch cross-checks that make
a full count slow) and caches them.
"""

from __future__ import annotations

import hashlib
import json
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from repro.core.cache import cache_dir, read_json, write_json
from repro.core.package_data import shipped
from repro.core.settings import DEFAULT_CACHE
from repro.data.specs import get_dataset
from repro.plan.manifest import Row
from repro.plan.table_plan import TablePlan
from repro.measure.measurer import Context
from repro.measure.model_macs import model_key, shipped_macs
from repro.models import Component
from repro.results.measurements import FLOP_SUMMARY, Measured, Measuring

if TYPE_CHECKING:  # torch is imported only when a model is actually counted
    from repro.models.flops import FlopReport


def counted_batch(dataset: str) -> int:
    """The batch a batch-axis head's per-image FLOPs are reported at: the recipe's training batch (the paper
    states none for its FLOPs; the manifests showing these heads' rho declare it, assumption batch-axis-flops)."""
    from repro.spec.recipes import RECIPES

    return RECIPES[dataset].batch_size


def row_key(row: Row) -> str:
    return model_key(row.dataset, row.backbone, row.head)


def model_flops(dataset: str, backbone: Component, head: Component) -> FlopReport:
    """Per-sample FLOPs of a model at the paper's resolution, counted in this process once."""
    return _flops_for(model_key(dataset, backbone, head))


def row_flops(row: Row) -> FlopReport:
    return _flops_for(row_key(row))


@lru_cache(maxsize=None)
def _flops_for(key: str) -> FlopReport:
    from repro.models.flops import count_flops
    from repro.models import build_model
    from repro.models.zero_banks import built_for_counting
    from repro.spec.recipes import at_last_epoch

    import torch

    spec = json.loads(key)
    # A fixed seed: a head whose executed ops depend on its weights (the ReLU-routed gates open per input)
    # must count the same in every process, and the caller's random stream is left as it was. Expert banks
    # hold zeros (repro.models.zero_banks): no count reads them, and drawing them was half the check's time.
    with torch.random.fork_rng(devices=[]), built_for_counting():
        torch.manual_seed(0)
        model = build_model(spec["dataset"], Component(**spec["backbone"]), Component(**spec["head"]))
        # Count the model as it infers after training: schedules (the k warm-up) at their last epoch.
        dataset = spec["dataset"]
        return count_flops(at_last_epoch(model, dataset), get_dataset(dataset).input_shape, counted_batch(dataset))


def _code_fingerprint() -> str:
    """Hash of what decides a count: the models and their counter (models/), the schedules at the last epoch
    and the batch (spec/recipes.py: its epochs, batch sizes and at_last_epoch), the rule choosing that batch (this
    file's counted_batch), the input shapes (data/specs.py), and torch's and fvcore's versions."""
    import importlib.metadata

    package = shipped("repro")
    files = sorted((package / "models").glob("*.py"))
    files += [package / "spec" / "recipes.py", package / "measure" / "flop_check.py", package / "data" / "specs.py"]
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    for dist in ("torch", "fvcore"):
        try:
            digest.update(f"{dist}={importlib.metadata.version(dist)}".encode())
        except importlib.metadata.PackageNotFoundError:
            digest.update(f"{dist}=absent".encode())
    return digest.hexdigest()[:16]


def _summary_path(key: str, cache: Path) -> Path:
    name = hashlib.sha256(f"{_fingerprint()}|{key}".encode()).hexdigest()[:24]
    return cache_dir(cache, "flops") / f"{name}.json"


@lru_cache(maxsize=1)
def _fingerprint() -> str:
    return _code_fingerprint()


def flop_summary(dataset: str, backbone: Component, head: Component, cache: Path = DEFAULT_CACHE) -> dict[str, Any]:
    """`FlopReport.summary()` of a model, from the cache folder `cache` when the same code counted it before."""
    key = model_key(dataset, backbone, head)
    path = _summary_path(key, cache)
    cached = read_json(path)
    if isinstance(cached, dict) and cached.get("key") == key:
        return cached["summary"]
    summary = _flops_for(key).summary()
    write_json(path, {"key": key, "summary": summary})
    return summary


def estimate_macs(
    dataset: str, backbone: Component, head: Component, count: bool = True, cache: Path = DEFAULT_CACHE
) -> dict[str, int] | None:
    """{"backbone_macs", "head_macs"} per sample at the paper's resolution, for cost estimates: a shipped
    model's from repro.measure.model_macs, another's from the caches or counted (None when not cached and
    `count` is False: torch-free callers such as the report)."""
    key = model_key(dataset, backbone, head)
    if (shipped := shipped_macs(key)) is not None:
        return shipped
    full = read_json(_summary_path(key, cache))
    if isinstance(full, dict) and full.get("key") == key:
        return {k: full["summary"][k] for k in ("backbone_macs", "head_macs")}
    path = cache_dir(cache, "macs") / _summary_path(key, cache).name
    cached = read_json(path)
    if isinstance(cached, dict) and cached.get("key") == key:
        return cached["macs"]
    if not count:
        return None
    macs = _shape_macs(key)
    write_json(path, {"key": key, "macs": macs})
    return macs


def _shape_macs(key: str) -> dict[str, int]:
    """Multiply-adds of convolutions and matrix products (and modules' own formulas) from one forward pass."""
    from repro.core.devices import cpu_threads

    with cpu_threads("cpu", 1):  # batch-1 passes: threads only contend (docs/measurements.md)
        return _count_from_shapes(json.loads(key))


def _shape_model(spec: dict[str, Any], image_size: int | None = None):
    """The model `spec` names, at `image_size` (built for it, as a run builds it) or the dataset's own, on the
    meta device (no weight initialisation, the slow part), then given plain values: a per-sample count
    depends on shapes and on how many experts a sample runs, never on weight values."""
    import torch

    from repro.models.flops import plain_values
    from repro.models import build_model
    from repro.spec.recipes import at_last_epoch

    with torch.device("meta"):
        model = build_model(
            spec["dataset"],
            Component(**spec["backbone"]),
            Component(**spec["head"]),
            image_size=image_size or None,
        )
    return plain_values(at_last_epoch(model.to_empty(device="cpu"), spec["dataset"]).eval())


def analytic_summary(dataset: str, backbone: Component, head: Component) -> dict[str, Any]:
    """The FLOP_SUMMARY metrics of a model from the analytic column alone (repro.models.flops.count_analytic), counted
    once per process: for models only compared with ones the FLOP check counted three ways (the readings)."""
    return _analytic_for(model_key(dataset, backbone, head))


@lru_cache(maxsize=None)
def _analytic_for(key: str) -> dict[str, Any]:
    from repro.core.devices import cpu_threads
    from repro.models.flops import count_analytic

    spec = json.loads(key)
    with cpu_threads("cpu", 1):
        dataset = spec["dataset"]
        summary = count_analytic(_shape_model(spec), get_dataset(dataset).input_shape, counted_batch(dataset)).summary()
    return {name: summary[name] for name in FLOP_SUMMARY}


def _count_from_shapes(spec: dict[str, Any], image_size: int | None = None) -> dict[str, int]:
    """Per-sample multiply-adds of the model `spec` names, at `image_size` or the dataset's own: the analytic
    column of repro.models.flops (a ReLU-routed head at its mean experts a sample, a batch-axis head at the recipe's
    batch, as the FLOP check reports them)."""
    from repro.models.flops import count_analytic

    channels, *size = get_dataset(spec["dataset"]).input_shape
    shape = (channels, *([image_size] * 2 if image_size else size))
    report = count_analytic(_shape_model(spec, image_size), shape, counted_batch(spec["dataset"]))
    return {"backbone_macs": report.backbone, "head_macs": report.head}


def row_summary(row: Row, cache: Path = DEFAULT_CACHE) -> dict[str, Any]:
    """`FlopReport.summary()` of the row's model, problems included: from the cache folder when counted before."""
    return flop_summary(row.dataset, row.backbone, row.head, cache)


def measure_flops(plan: TablePlan, ctx: Context) -> Measured:
    """Every FLOP row of the plan counted three ways (or its kept count reused from the command's cache folder)."""
    out = Measuring()
    for row in plan.flop_rows:
        summary = row_summary(row, ctx.settings.cache)
        for name in FLOP_SUMMARY:
            out.set_row(row.id, name, summary[name])
        out.details.setdefault("flops", {})[row.id] = summary
        out.problems += [f"{plan.id}/{row.id}: {p}" for p in summary["problems"]]
        if ctx.progress is not None:
            ctx.progress.log(f"{plan.id}/{row.id}: {summary['total_macs'] / 1e6:,.2f} MMAC, rho {summary['rho']:.3%}")
    return out.done()
