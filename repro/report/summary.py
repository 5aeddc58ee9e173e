"""report.md from the decided results of a directory: the headline, the checklist, figures, sections.

Torch-free, and it decides nothing: its callers (verify-all, `repro report`) pass results whose claims
repro.claims.decided_results decided, with Holm over the report, the plans they built and what the cost
stage computed from them (repro.cost.taken.for_report). It never plans, fits, trains or counts.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any, Sequence

from repro.claims import count_verdicts
from repro.claims.headline import claim_counts, group_of, reproductions
from repro.core.fsutil import FolderWriter, encode_text
from repro.cost.fit import FolderFit
from repro.cost.taken import ComputeTaken
from repro.plan.manifest import Manifest
from repro.report.figures import render_figures
from repro.report.figures_extension import extension_section
from repro.report.html import render_report_html, rewrite_timings, write_trace_html
from repro.report.appendix import write_appendix
from repro.report.costs import compute_section
from repro.report.learning import is_functional, learning_checks, render_learning, summary_line
from repro.report.readings_section import (
    readings_cost,
    readings_entries,
    readings_summary,
    render_readings,
    trained_lines,
    trained_summary,
)
from repro.report.render import (
    DETAIL,
    TIME_TITLE,
    render_audit,
    render_figure_section,
    render_report,
    render_report_detail,
    render_timings,
    render_untested,
    write_manifest_outputs,
)
from repro.results.measurements import FlopCheck, ManifestResult, Status, profile_dir
from repro.results.timings import flush, phase, when_done


def _regenerated(entries: Sequence[tuple[Manifest, ManifestResult | None]], failures: dict[str, str]) -> int:
    return sum(1 for m, r in entries if r is not None and r.ok and m.id not in failures)


def summary_lines(
    entries: list[tuple[Manifest, ManifestResult | None]],
    check: FlopCheck | None,
    failures: dict[str, str],
    beyond: Sequence[tuple[Manifest, ManifestResult | None]] = (),
) -> dict[str, Any]:
    """The headline of the paper's tables (`entries`); `beyond`, the extension's tables, only counted beside them."""
    verdicts = [v for _, r in entries if r for v in r.verdicts]
    total_claims = sum(len(m.claims) for m, _ in entries)
    counts = count_verdicts(verdicts)
    not_in_results = sum(len(m.claims) for m, r in entries if r is None)  # tables never run: their claims
    reproduced, decided = reproductions(counts)  # self-tests of this artifact's code are no reproduction
    regenerated = _regenerated(entries, failures)
    lines = [
        f"Tables regenerated: {regenerated} / {len(entries)}"
        + (f" of the paper's, and {_regenerated(beyond, failures)} / {len(beyond)} beyond it" if beyond else ""),
        claim_counts({m.id: m for m, _ in [*entries, *beyond]}.values()).line(),
    ]
    unverified = dict.fromkeys(d for _, r in entries if r for c in r.data_checks() if (d := c.checksum_departure()))
    if unverified:  # first: every number below rests on it
        lines.insert(0, "UNVERIFIED data: " + "; ".join(unverified) + ". Every verdict decided on it says so.")
    # a verdict fewer than STABLE of its seeds' resamples give: counted with the solid ones, it read as solid
    unstable = Counter((group_of(v), v.status) for v in verdicts if v.unstable)
    for scope, c in counts.items():
        n = sum(c.values())
        if n:
            shaky = {status: k for (group, status), k in unstable.items() if group == scope}
            lines.append(f"{SCOPE_TITLES.get(scope, f'{scope} claims')} ({n}): " + _counted(c, shaky))
    if not_in_results:
        lines.append(f"Claims of tables not run into this folder: {not_in_results}")
    if check is not None:
        lines.append(
            f"FLOP checks passed: {check.passed} / {len(check.models)} distinct models "
            "(analytic = fvcore = torch/2, module by module)"
        )
    for manifest_id, why in failures.items():
        lines.append(f"FAILED {manifest_id}: {why}")
    return {
        "lines": lines,
        "reproduced": reproduced,
        "decided": decided,
        "total_claims": total_claims,
        "regenerated": regenerated,
        "tables": len(entries),
        "counts": counts,
        "per_table": [(m.id, count_verdicts(r.verdicts) if r else None, len(m.claims)) for m, r in entries],
    }


def _counted(counts: dict[Status, int], unstable: dict[Status, int] | None = None) -> str:
    """'reproduced 1, not reproduced 6': the verdicts a kind of claim got, those none got left out; 'reproduced 4
    (1 unstable under their seeds)' where some are unstable."""
    unstable = unstable or {}
    return ", ".join(
        f"{k} {v}" + (f" ({unstable[k]} unstable under their seeds)" if unstable.get(k) else "")
        for k, v in counts.items()
        if v
    )


SCOPE_TITLES = {
    "analytic": "Analytic claims: numbers the paper prints, matched by FLOP counts",
    "property": "Analytic claims: bounds and properties of the paper's architecture",
    "self-test": "Self-tests of this artifact's code (shown, not counted as reproductions)",
    "empirical": "Empirical (training) claims",
    "gpu": "GPU-scoped (latency) claims",
    "explainer": "Claims from the explainer, not the paper's text (any scope; counted apart)",
    "prediction": "Predictions of this artifact, not the paper's (not counted)",
    "derived": "Claims another claim implies (counted there)",
}


@phase("report")
def write_report(
    entries: list[tuple[Manifest, ManifestResult | None]],
    results_dir: Path,
    profile: str,
    costs: tuple[FolderFit, ComputeTaken],
    check: FlopCheck | None = None,
    failures: dict[str, str] | None = None,
    tables_written: frozenset[str] = frozenset(),
) -> tuple[Path, dict[str, Any]]:
    """results_dir/<profile>/report.md from the decided results of that profile (repro.claims.decided_results);
    `costs`: the fitted cost model, with the plans it priced, and the compute section (repro.cost.taken.for_report);
    `tables_written`: the tables whose files the command wrote from these results already (only their claims.md is
    written again). Timed as the command's "report" phase."""
    manifests = [m for m, _ in entries]
    folder, taken = costs
    out = profile_dir(results_dir, profile)
    # The reproduction is what the paper claims; extension manifests (other routers) are reported
    # in a section of their own and counted apart.
    reproduction = [(m, r) for m, r in entries if not m.is_extension()]
    summary = summary_lines(reproduction, check, failures or {}, [(m, r) for m, r in entries if m.is_extension()])
    beyond_paper = [v for m, r in entries if m.is_extension() and r for v in r.verdicts]
    extension = count_verdicts(beyond_paper)["extension"]
    summary["extension"] = extension
    if sum(extension.values()):
        shaky = Counter(v.status for v in beyond_paper if v.unstable)
        summary["lines"].append(
            f"Beyond the paper, extension claims ({sum(extension.values())}): " + _counted(extension, dict(shaky))
        )
    with phase("figures"):
        drawn = render_figures(reproduction, out / "figures", folder.plans, results_dir)
    figures = render_figure_section(drawn, out)
    sections = [
        ("Findings not tested", render_untested()),
        ("Statistics audit of the paper's reported numbers", render_audit()),
        ("Compute per claim and table", compute_section(taken, profile)),
    ]
    readings = readings_entries(reproduction)
    if readings:
        cost = readings_cost(reproduction)
        if any(c.kind != "trained" for c in readings):
            summary["lines"].append(readings_summary(readings, *cost))
        if trained := trained_summary(readings):
            summary["lines"].append(trained)
        title = "Readings the text leaves open: which verdicts depend on them"
        sections.insert(0, (title, render_readings(readings, *cost, manifests)))
    flush()  # the phases so far, for the table below; written again, whole, when the command ends
    if (times := render_timings(results_dir, profile)) is not None:
        sections.append((TIME_TITLE, times))
        when_done(lambda: rewrite_timings(results_dir, profile, out))
    with phase("figures"):  # the extension's section draws its own figures
        beyond = extension_section(entries, out / "figures", out, drawn, results_dir)
    if beyond is not None:
        sections.insert(0, beyond)
    checks = learning_checks(entries)  # functional results only
    if checks:
        summary["lines"].append(summary_line(checks))
        summary["learning_failures"] = [c.rows[0] for c in checks if c.failed]
        signs = trained_lines([c for c in readings if c.manifest in {m.id for m, r in entries if is_functional(r)}])
        sections.insert(0, ("Does every method learn real images? (functional)", render_learning(checks, signs)))
    # The Artifact Appendix of these results (every claim, the extension's too), which both reports link.
    written = write_appendix(entries, results_dir, profile, folder.plans, folder)
    appendix = [p.relative_to(out).as_posix() for p in written]
    path = out / "report.md"
    # report.html: the same data; the extension manifests' figures and claims sit among the others there. The
    # pages are rendered before any is written, and replaced as a set: none is left stale beside the others.
    pages = {
        path: render_report(reproduction, summary, sections, figures, appendix),
        out / DETAIL: render_report_detail(reproduction, sections),
        out / "report.html": render_report_html(
            entries,
            {m.id for m, _ in entries if m.is_extension()},
            summary,
            drawn,
            [s for s in sections if s is not beyond],
            SCOPE_TITLES,
            out,
            results_dir,
            appendix,
        ),
    }
    for manifest, result in entries:  # each table's claims.md as decided with the others (repro.claims.across)
        if result is not None:
            write_manifest_outputs(manifest, result, results_dir, tables=manifest.id not in tables_written)
    FolderWriter(results_dir).replace_set({p: encode_text(text) for p, text in pages.items()})
    write_trace_html(entries, profile, out, results_dir)
    return path, summary
