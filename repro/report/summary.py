"""report.md from whatever results a directory holds: claims re-decided, the headline, figures.

Torch-free: `repro report` reads results.json files and renders; it never trains or counts.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from repro.claims import Evidence, evaluate
from repro.fsutil import atomic_write_text
from repro.manifest import Manifest, load_all
from repro.report.figures import render_figures
from repro.report.render import render_audit, render_figure_section, render_report
from repro.results import FlopCheck, ManifestResult, load_result, profile_dir


def decide(manifest: Manifest, result: ManifestResult) -> ManifestResult:
    """(Re)decide the manifest's claims on the result's measurements, with the current rules."""
    profile = manifest.profiles.get(result.profile)
    evidence = Evidence(
        manifest_id=manifest.id, paper_table=manifest.paper_table, profile=result.profile,
        metrics=result.measured.metrics, missing=result.measured.missing, device=result.device_type,
        paper_scale=profile is not None and profile.evidence == "paper",
    )
    result.verdicts = [evaluate(claim, evidence) for claim in manifest.claims]
    return result


def summary_lines(entries: list[tuple[Manifest, ManifestResult | None]], check: FlopCheck | None,
                  failures: dict[str, str]) -> dict[str, Any]:
    verdicts = [v for _, r in entries if r for v in r.verdicts]
    total_claims = sum(len(m.claims) for m, _ in entries)
    reproduced = sum(v.status == "reproduced" for v in verdicts)
    decided = sum(v.status in ("reproduced", "not reproduced") for v in verdicts)
    regenerated = sum(1 for m, r in entries if r is not None and r.ok and m.id not in failures)
    lines = [
        f"Tables regenerated: {regenerated} / {len(entries)}",
        f"Claims reproduced: {reproduced} / decided {decided} / total {total_claims}",
    ]
    if check is not None:
        lines.append(f"FLOP checks passed: {check.passed} / {len(check.models)} distinct models "
                     "(analytic = fvcore = torch/2, module by module)")
    for manifest_id, why in failures.items():
        lines.append(f"FAILED {manifest_id}: {why}")
    return {"lines": lines, "reproduced": reproduced, "decided": decided, "total_claims": total_claims,
            "regenerated": regenerated, "tables": len(entries)}


def decided_results(results_dir: Path, profile: str,
                    manifests: list[Manifest]) -> list[tuple[Manifest, ManifestResult | None]]:
    """Each manifest with its stored result, claims decided again by the current rules and manifest."""
    out = []
    for m in manifests:
        result = load_result(results_dir, profile, m.id)
        out.append((m, decide(m, result) if result is not None else None))
    return out


def write_report(results_dir: Path, profile: str, manifests: list[Manifest] | None = None,
                 check: FlopCheck | None = None, failures: dict[str, str] | None = None) -> tuple[Path, dict[str, Any]]:
    """results_dir/<profile>/report.md from the results of that profile."""
    manifests = manifests if manifests is not None else load_all()
    out = profile_dir(results_dir, profile)
    entries = decided_results(results_dir, profile, manifests)
    summary = summary_lines(entries, check, failures or {})
    figures = render_figure_section(render_figures(entries, out / "figures"), out)
    sections = [("Statistics audit of the paper's reported numbers", render_audit()),
                ("Compute per claim and table", _compute_section(results_dir, profile, manifests))]
    path = out / "report.md"
    atomic_write_text(path, render_report(entries, summary, sections, figures))
    return path, summary


def _compute_section(results_dir: Path, profile: str, manifests: list[Manifest]) -> str:
    from repro.estimate import CostModel
    from repro.report.costs import compute_by_claim, render_compute

    model = CostModel(cached_only=True)  # the report counts nothing: estimates from the caches `repro list` fills
    lines = compute_by_claim(results_dir, profile, manifests, model)
    source = "; ".join(sorted({model.device(m.profiles[profile]).source for m in manifests if profile in m.profiles}))
    return render_compute(lines, profile, source) if lines else "No training runs at this profile."
