"""The one orchestrator: manifest -> measurements -> metrics -> claims -> tables on disk.

Each measure a row can ask for ("flops", "accuracy", "latency") has a measurer in
repro.measure.MEASURERS; comparisons derive metrics from pairs of rows; claims are
decided on the result (repro.claims). Everything a table shows is saved in
results.json next to it, with its provenance. `flop_check` counts every distinct
model of every manifest three ways; repro.report.summary writes report.md.
"""

from __future__ import annotations

import os
import traceback
from dataclasses import asdict
from pathlib import Path

from repro.devices import resolve_device
from repro.manifest import Manifest
from repro.measure import MEASURERS
from repro.measure.base import Context
from repro.measure.flops import row_flops, row_key
from repro.provenance import provenance
from repro.report.render import write_manifest_outputs
from repro.report.summary import decide
from repro.results import FlopCheck, ManifestResult, Measured, comparison_metric, row_metric, save_result
from repro.timings import phase

def make_context(manifest: Manifest, profile: str, results_dir: Path, device: str, jobs: int = 0, **kw) -> Context:
    if profile not in manifest.profiles:
        raise KeyError(f"{manifest.path}: no profile '{profile}'; this manifest has: {', '.join(manifest.profiles)}")
    device = resolve_device(device)
    jobs = jobs or (1 if device.startswith("cuda") else os.cpu_count() or 1)
    return Context(profile, manifest.profiles[profile], results_dir, device, jobs=jobs, **kw)


def comparison_metrics(manifest: Manifest, measured: Measured) -> None:
    """Metrics of each comparison that can be derived from its two rows' metrics."""
    for comp in manifest.comparisons:
        rho = measured.row(comp.row, "rho")
        if rho is not None:
            measured.set_comparison(comp.id, "rho", rho)
        total, base = measured.row(comp.row, "total_macs"), measured.row(comp.baseline, "total_macs")
        if total is not None and base is not None:
            measured.set_comparison(comp.id, "flops_ratio", total / base)
            measured.set_comparison(comp.id, "flops_reduction", 1 - total / base)


def run_manifest(manifest: Manifest, ctx: Context) -> ManifestResult:
    measured = Measured()
    for measure in sorted(manifest.measures()):
        measured.update(MEASURERS.get(measure).builder(manifest, ctx))
    comparison_metrics(manifest, measured)
    result = ManifestResult(manifest.id, manifest.title, manifest.paper_ref, manifest.paper_table,
                            ctx.profile_name, measured, [], provenance(ctx.device), asdict(ctx.profile))
    with phase("claims", manifest.id):
        return decide(manifest, result)


def execute(manifest: Manifest, ctx: Context) -> tuple[ManifestResult, list[Path]]:
    """Run one manifest and write its results.json, tables and claims."""
    result = run_manifest(manifest, ctx)
    with phase("tables", manifest.id):
        save_result(result, ctx.results_dir)
        files = write_manifest_outputs(manifest, result, ctx.results_dir)
    return result, files


def flop_check(manifests: list[Manifest], progress=None) -> FlopCheck:
    """Count every distinct model three ways; any disagreement or unsupported op fails it."""
    check, seen = FlopCheck(), set()
    rows = [(m.id, r) for m in manifests for r in m.rows]
    task = progress.add_task("FLOP checks", total=len(rows)) if progress else None
    with phase("FLOP check"):
        for manifest_id, row in rows:
            key = row_key(row)
            if key not in seen:
                seen.add(key)
                check.add(manifest_id, row.id, row_flops(row).problems)
            if progress:
                progress.advance(task)
    return check


def describe_exception(exc: BaseException) -> str:
    tb = traceback.extract_tb(exc.__traceback__)
    where = f" (at {Path(tb[-1].filename).name}:{tb[-1].lineno})" if tb else ""
    return f"{type(exc).__name__}: {exc}{where}"


__all__ = ["Context", "comparison_metric", "execute", "flop_check", "make_context", "row_metric", "run_manifest"]
