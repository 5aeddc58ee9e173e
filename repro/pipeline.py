"""Manifest -> measurements -> metrics -> claims -> rendered tables.

Each measure a row can ask for ("flops", "accuracy", "latency") has a measurer
that fills metric paths; comparisons derive metrics from pairs of rows; claims
are decided on the result. Everything a table shows is saved in results.json
next to it, with its provenance.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable

from repro.claims import Evidence, evaluate
from repro.flops import FlopReport, count_flops
from repro.manifest import Manifest, Profile, Row
from repro.models import Component, build_model
from repro.data.specs import get_dataset
from repro.provenance import provenance
from repro.results import ManifestResult, Measured, load_result, save_result  # noqa: F401  (re-exported)
from repro.recipes import at_last_epoch


@dataclass
class Context:
    """How a manifest is being run."""

    profile_name: str
    profile: Profile
    results_dir: Path
    device: str = "cpu"
    jobs: int = 1
    data_dir: Path | None = None
    progress: Any = None  # a rich Progress, or None
    executor: Any = None  # repro.executors.ExecutorOptions: who trains the runs; None: local
    run_counts: Any = None  # repro.runs.RunCounts of this table's runs, set by the accuracy measurer

    @property
    def paper_scale(self) -> bool:
        return self.profile.evidence == "paper"


# --------------------------------------------------------------------------- FLOPs
def model_key(dataset: str, backbone: Component, head: Component) -> str:
    """A model's identity, independent of row ids and of the manifest it sits in."""
    return json.dumps({"dataset": dataset, "backbone": backbone.key(), "head": head.key()}, sort_keys=True)


def row_key(row: Row) -> str:
    return model_key(row.dataset, row.backbone, row.head)


def model_flops(dataset: str, backbone: Component, head: Component) -> FlopReport:
    """Per-sample FLOPs of a model at the paper's resolution (cached)."""
    return _flops_for(model_key(dataset, backbone, head))


@lru_cache(maxsize=None)
def _flops_for(key: str) -> FlopReport:
    spec = json.loads(key)
    model = build_model(spec["dataset"], Component(**spec["backbone"]), Component(**spec["head"]))
    # Count the model as it infers after training: schedules (the k warm-up) at their last epoch.
    return count_flops(at_last_epoch(model, spec["dataset"]), get_dataset(spec["dataset"]).input_shape)


def row_flops(row: Row) -> FlopReport:
    return _flops_for(row_key(row))


def measure_flops(manifest: Manifest, ctx: Context) -> Measured:
    out = Measured()
    for row in manifest.rows:
        if "flops" not in row.measures:
            continue
        report = row_flops(row)
        prefix = f"rows.{row.id}"
        summary = report.summary()
        for name in ("total_macs", "backbone_macs", "head_macs", "routed_macs", "rho", "rho_all_ops", "head_share"):
            out.metrics[f"{prefix}.{name}"] = summary[name]
        out.details.setdefault("flops", {})[row.id] = summary
        out.problems += [f"{manifest.id}/{row.id}: {p}" for p in report.problems]
        if ctx.progress is not None:
            ctx.progress.log(f"[dim]{manifest.id}/{row.id}: {report.total / 1e6:,.2f} MMAC, rho {report.rho:.3%}")
    return out


# --------------------------------------------------------------------------- measurers
MEASURERS: dict[str, Callable[[Manifest, Context], Measured]] = {"flops": measure_flops}


def register_measurer(measure: str, fn: Callable[[Manifest, Context], Measured]) -> None:
    MEASURERS[measure] = fn


def comparison_metrics(manifest: Manifest, measured: Measured) -> None:
    """Metrics of each comparison that can be derived from its two rows' metrics."""
    m = measured.metrics
    for comp in manifest.comparisons:
        row, base = f"rows.{comp.row}", f"rows.{comp.baseline}"
        prefix = f"comparisons.{comp.id}"
        if f"{row}.rho" in m:
            m[f"{prefix}.rho"] = m[f"{row}.rho"]
        if f"{row}.total_macs" in m and f"{base}.total_macs" in m:
            ratio = m[f"{row}.total_macs"] / m[f"{base}.total_macs"]
            m[f"{prefix}.flops_ratio"] = ratio
            m[f"{prefix}.flops_reduction"] = 1 - ratio


def run_manifest(manifest: Manifest, ctx: Context) -> ManifestResult:
    measured = Measured()
    for measure in sorted(manifest.measures()):
        if measure not in MEASURERS:
            for row in manifest.rows:
                if measure in row.measures:
                    measured.missing[f"rows.{row.id}.{measure}"] = f"no measurer for '{measure}' in this version"
            continue
        measured.update(MEASURERS[measure](manifest, ctx))
    comparison_metrics(manifest, measured)
    result = ManifestResult(manifest.id, manifest.title, manifest.paper_ref, manifest.paper_table,
                            ctx.profile_name, measured, [], provenance(ctx.device))
    return decide(manifest, result)


def decide(manifest: Manifest, result: ManifestResult) -> ManifestResult:
    """(Re)decide the manifest's claims on the result's measurements, with the current rules."""
    device = "cuda" if str(result.provenance.get("device", "")).startswith("cuda") else "cpu"
    evidence = Evidence(
        manifest_id=manifest.id, paper_table=manifest.paper_table, profile=result.profile,
        metrics=result.measured.metrics, missing=result.measured.missing, device=device,
        paper_scale=result.profile == "full",
    )
    result.verdicts = [evaluate(claim, evidence) for claim in manifest.claims]
    return result


__all__ = ["Context", "Measured", "ManifestResult", "run_manifest", "save_result", "load_result", "row_flops",
           "register_measurer"]
