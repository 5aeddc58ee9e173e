"""Running manifests end to end, the FLOP check over every row, and the combined report."""

from __future__ import annotations

import os
import traceback
from dataclasses import dataclass, field
from pathlib import Path

import repro.experiments  # noqa: F401  (registers the "accuracy" measure)
import repro.report.latency_tables  # noqa: F401  (registers the latency tables)
from repro.cost import register_estimator
from repro.devices import resolve_device
from repro.measure.latency import estimate_latency, measure_latency
from repro.results import Verdict
from repro.fsutil import atomic_write_text
from repro.manifest import Manifest, Row, load_all
from repro.pipeline import (
    Context, ManifestResult, decide, load_result, register_measurer, row_flops, row_key, run_manifest, save_result,
)
from repro.report.figures import render_figures
from repro.report.render import render_audit, render_figure_section, render_report, write_manifest_outputs

PROFILE_ENV, RESULTS_ENV = "REPRO_PROFILE", "REPRO_RESULTS"

register_measurer("latency", measure_latency)  # until repro.measure's explicit table replaces these calls
register_estimator("latency", estimate_latency)


def default_profile() -> str:
    return os.environ.get(PROFILE_ENV, "smoke")


def default_results_dir() -> Path:
    return Path(os.environ.get(RESULTS_ENV, "results"))


def make_context(manifest: Manifest, profile: str, results_dir: Path, device: str, jobs: int = 0, **kw) -> Context:
    if profile not in manifest.profiles:
        raise KeyError(f"{manifest.path}: no profile '{profile}'; this manifest has: {', '.join(manifest.profiles)}")
    device = resolve_device(device)
    jobs = jobs or (1 if device.startswith("cuda") else os.cpu_count() or 1)
    return Context(profile, manifest.profiles[profile], results_dir, device, jobs=jobs, **kw)


def execute(manifest: Manifest, ctx: Context) -> tuple[ManifestResult, list[Path]]:
    """Run one manifest and write its results.json, tables and claims."""
    result = run_manifest(manifest, ctx)
    save_result(result, ctx.results_dir)
    files = write_manifest_outputs(manifest, result, ctx.results_dir)
    return result, files


@dataclass
class FlopCheck:
    rows: list[tuple[str, Row]] = field(default_factory=list)  # (manifest id, row), unique models first seen
    problems: list[str] = field(default_factory=list)

    @property
    def passed(self) -> int:
        failed = {p.split(":")[0] for p in self.problems}
        return sum(f"{m}/{r.id}" not in failed for m, r in self.rows)


def flop_check(manifests: list[Manifest], progress=None) -> FlopCheck:
    """Count every row of every manifest three ways; any disagreement or unsupported op is a problem."""
    check, seen = FlopCheck(), set()
    rows = [(m.id, r) for m in manifests for r in m.rows]
    task = progress.add_task("FLOP checks", total=len(rows)) if progress else None
    for manifest_id, row in rows:
        key = row_key(row)
        if key not in seen:
            seen.add(key)
            check.rows.append((manifest_id, row))
            check.problems += [f"{manifest_id}/{row.id}: {p}" for p in row_flops(row).problems]
        if progress:
            progress.advance(task)
    return check


def summary_lines(entries: list[tuple[Manifest, ManifestResult | None]], check: FlopCheck | None,
                  failures: dict[str, str]) -> dict:
    verdicts: list[Verdict] = [v for _, r in entries if r for v in r.verdicts]
    total_claims = sum(len(m.claims) for m, _ in entries)
    reproduced = sum(v.status == "reproduced" for v in verdicts)
    decided = sum(v.status in ("reproduced", "not reproduced") for v in verdicts)
    regenerated = sum(1 for m, r in entries if r is not None and r.ok and m.id not in failures)
    lines = [
        f"Tables regenerated: {regenerated} / {len(entries)}",
        f"Claims reproduced: {reproduced} / decided {decided} / total {total_claims}",
    ]
    if check is not None:
        lines.append(f"FLOP checks passed: {check.passed} / {len(check.rows)} distinct models "
                     "(analytic = fvcore = torch/2, module by module)")
    for manifest_id, why in failures.items():
        lines.append(f"FAILED {manifest_id}: {why}")
    return {"lines": lines, "reproduced": reproduced, "decided": decided, "total_claims": total_claims,
            "regenerated": regenerated, "tables": len(entries)}


def write_report(results_dir: Path, manifests: list[Manifest] | None = None, check: FlopCheck | None = None,
                 failures: dict[str, str] | None = None, extra_sections=None) -> tuple[Path, dict]:
    manifests = manifests if manifests is not None else load_all()
    entries = [(m, _decided(results_dir, m)) for m in manifests]
    summary = summary_lines(entries, check, failures or {})
    figures = render_figure_section(render_figures(entries, results_dir / "figures"), results_dir)
    sections = list(extra_sections or []) + [("Statistics audit of the paper's reported numbers", render_audit())]
    path = results_dir / "report.md"
    atomic_write_text(path, render_report(entries, summary, sections, figures))
    return path, summary


def _decided(results_dir: Path, manifest: Manifest) -> ManifestResult | None:
    """A stored result with its claims decided again by the current rules and manifest."""
    result = load_result(results_dir, manifest.id)
    return decide(manifest, result) if result is not None else None


def describe_exception(exc: BaseException) -> str:
    tb = traceback.extract_tb(exc.__traceback__)
    where = f" (at {Path(tb[-1].filename).name}:{tb[-1].lineno})" if tb else ""
    return f"{type(exc).__name__}: {exc}{where}"
