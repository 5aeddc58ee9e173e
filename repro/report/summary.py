"""report.md from whatever results a directory holds: claims re-decided, the headline, figures.

Torch-free: `repro report` reads results.json files and renders; it never trains or counts.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

from repro.claims import Evidence, count_verdicts, evaluate, holm_adjust
from repro.fsutil import atomic_write_text
from repro.manifest import Manifest, Profile, load_all
from repro.report.figures import render_figures
from repro.report.figures_extension import extension_section, is_extension
from repro.report.learning import learning_checks, render_learning, summary_line
from repro.report.render import render_audit, render_figure_section, render_report
from repro.report.time_table import render_timings
from repro.results import FlopCheck, ManifestResult, load_result, profile_dir
from repro.timings import flush, phase


def decide(manifest: Manifest, result: ManifestResult) -> ManifestResult:
    """(Re)decide the manifest's claims on the result's measurements, with the current rules.

    What the measurements can decide follows the profile they were made under, as stored with
    them; a result from before that was stored falls back to the manifest's profile of that name.
    """
    settings = result.profile_settings or _settings(manifest.profiles.get(result.profile))
    kind = settings.get("evidence", "pipeline")
    evidence = Evidence(
        manifest_id=manifest.id, paper_table=manifest.paper_table, profile=result.profile,
        metrics=result.measured.metrics, missing=result.measured.missing, device=result.device_type,
        paper_scale=kind == "paper", kind=kind, seeds=settings.get("seeds"), epochs=settings.get("epochs"),
        comparison_rows={c.id: (c.row, c.baseline) for c in manifest.comparisons},
    )
    result.verdicts = [evaluate(claim, evidence) for claim in manifest.claims]
    return result


def _settings(profile: Profile | None) -> dict[str, Any]:
    return asdict(profile) if profile is not None else {}


def summary_lines(entries: list[tuple[Manifest, ManifestResult | None]], check: FlopCheck | None,
                  failures: dict[str, str]) -> dict[str, Any]:
    verdicts = [v for _, r in entries if r for v in r.verdicts]
    total_claims = sum(len(m.claims) for m, _ in entries)
    counts = count_verdicts(verdicts)
    not_in_results = sum(len(m.claims) for m, r in entries if r is None)  # tables never run: their claims
    reproduced = sum(c["reproduced"] for c in counts.values())
    decided = sum(c["reproduced"] + c["not reproduced"] for c in counts.values())
    regenerated = sum(1 for m, r in entries if r is not None and r.ok and m.id not in failures)
    lines = [f"Tables regenerated: {regenerated} / {len(entries)}"]
    for scope, c in counts.items():
        n = sum(c.values())
        if n:
            lines.append(f"{SCOPE_TITLES.get(scope, scope)} claims ({n}): " + ", ".join(f"{k} {v}" for k, v in c.items()))
    if not_in_results:
        lines.append(f"Claims of tables not run into this folder: {not_in_results}")
    if check is not None:
        lines.append(f"FLOP checks passed: {check.passed} / {len(check.models)} distinct models "
                     "(analytic = fvcore = torch/2, module by module)")
    for manifest_id, why in failures.items():
        lines.append(f"FAILED {manifest_id}: {why}")
    return {"lines": lines, "reproduced": reproduced, "decided": decided, "total_claims": total_claims,
            "regenerated": regenerated, "tables": len(entries), "counts": counts,
            "per_table": [(m.id, count_verdicts(r.verdicts) if r else None, len(m.claims)) for m, r in entries]}


SCOPE_TITLES = {"analytic": "Analytic (FLOP counts)", "empirical": "Empirical (training)", "gpu": "GPU-scoped (latency)"}


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
    with phase("report"):
        return _write_report(results_dir, profile, manifests, check, failures)


def _write_report(results_dir: Path, profile: str, manifests: list[Manifest] | None,
                  check: FlopCheck | None, failures: dict[str, str] | None) -> tuple[Path, dict[str, Any]]:
    manifests = manifests if manifests is not None else load_all()
    out = profile_dir(results_dir, profile)
    entries = decided_results(results_dir, profile, manifests)
    # The reproduction is what the paper claims; extension manifests (other routers) are reported
    # in a section of their own and counted apart.
    reproduction = [(m, r) for m, r in entries if not is_extension(m)]
    # Family-wise error over every significance-tested empirical claim of this report.
    holm_adjust([v for _, r in reproduction if r for v in r.verdicts])
    summary = summary_lines(reproduction, check, failures or {})
    extension = count_verdicts(v for m, r in entries if is_extension(m) and r for v in r.verdicts)["extension"]
    if sum(extension.values()):
        summary["lines"].append(f"Beyond the paper, extension claims ({sum(extension.values())}): "
                                + ", ".join(f"{k} {v}" for k, v in extension.items()))
    with phase("figures"):
        figures = render_figure_section(render_figures(reproduction, out / "figures"), out)
    sections = [("Statistics audit of the paper's reported numbers", render_audit()),
                ("Compute per claim and table", _compute_section(results_dir, profile, manifests))]
    flush()  # the phases so far, for the table below
    if (times := render_timings(results_dir, profile)) is not None:
        sections.append(("Where the time went", times))
    with phase("figures"):  # the extension's section draws its own figures
        beyond = extension_section(entries, out / "figures", out)
    if beyond is not None:
        sections.insert(0, beyond)
    checks = learning_checks(entries)  # functional results only
    if checks:
        summary["lines"].append(summary_line(checks))
        summary["learning_failures"] = [c.rows[0] for c in checks if c.failed]
        sections.insert(0, ("Does every method learn real images? (functional)", render_learning(checks)))
    path = out / "report.md"
    atomic_write_text(path, render_report(reproduction, summary, sections, figures))
    return path, summary


def _compute_section(results_dir: Path, profile: str, manifests: list[Manifest]) -> str:
    from repro.cost.estimate import CostModel
    from repro.report.costs import compute_by_claim, render_compute

    model = CostModel(cached_only=True)  # the report counts nothing: estimates from the caches `repro list` fills
    lines = compute_by_claim(results_dir, profile, manifests, model)
    source = "; ".join(sorted({model.device(m.profiles[profile]).source for m in manifests if profile in m.profiles}))
    return render_compute(lines, profile, source) if lines else "No training runs at this profile."
