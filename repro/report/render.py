"""Jinja rendering of tables (Markdown, LaTeX booktabs), claim checklists and report.md.

Text reaches the templates through a filter for its medium: `tex` (repro.core.latex) for LaTeX, `md` for
Markdown, which keeps raw HTML out of every Markdown file written here.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined

from repro.core.fsutil import FolderWriter
from repro.core.latex import latex_escape
from repro.plan.manifest import Manifest
from repro.results.measurements import ManifestResult, profile_dir
from repro.results.timings import load, phase_rows, report_entry, timings_path
from repro.report.latex_columns import tex_columns
from repro.report.table_rows import Table, build_tables, verdict_counts
from repro.report.trained_on import CHECKSUMS_SUFFIX, TrainedOn, trained_on

DETAIL = "report-detail.md"  # beside report.md: every table, the other sections, the provenance
TIME_TITLE = "Where the time went"


def md_anchor(heading: str) -> str:
    """The anchor GitHub gives a Markdown heading: lower case, punctuation but hyphens dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", str(heading).strip().lower()).replace(" ", "-")


def md_escape(text: Any) -> str:
    """Text for a Markdown file: one line, a table cell's `|` escaped, and `<` and `![` escaped so that no text
    (a label, a record's field) becomes raw HTML or an image where the file is rendered (a forge's preview, an
    editor's)."""
    return str(text).replace("|", r"\|").replace("<", r"\<").replace("![", r"!\[").replace("\r", " ").replace("\n", " ")


def code_span(text: Any) -> str:
    """Text for inside a Markdown code span (`...`), where nothing is markup but a backtick, which would end it."""
    return str(text).replace("`", "'").replace("\r", " ").replace("\n", " ")


def environment(html: bool = False) -> Environment:
    """The report's templates, with a filter for each medium; `html`: autoescaped (report.html, trace.html)."""
    from repro.cost.estimate import device_time, seconds_text

    env = Environment(
        loader=PackageLoader("repro.report", "templates"),
        undefined=StrictUndefined,
        autoescape=html,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.globals["tex_columns"] = tex_columns
    env.filters.update(
        tex=latex_escape,
        tex_lenient=lambda text: latex_escape(text, strict=False),
        md=md_escape,
        md_anchor=md_anchor,
        code=code_span,
        device_time=device_time,
        seconds=lambda s: "" if s is None or s != s else seconds_text(s),
    )
    return env


def render(template: str, html: bool = False, **context: Any) -> str:
    """One of the report's templates rendered (`html`: autoescaped)."""
    return environment(html).get_template(template).render(**context)


def render_tables_md(manifest: Manifest, tables: list[Table], result: ManifestResult) -> str:
    return render("tables.md.j2", manifest=manifest, tables=tables, result=result, trained=trained_on(manifest, result))


def render_tables_tex(manifest: Manifest, tables: list[Table], trained: TrainedOn) -> str:
    return render("tables.tex.j2", manifest=manifest, tables=tables, trained=trained)


def render_standalone_tex(manifest: Manifest, tables: list[Table], trained: TrainedOn) -> str:
    """The same tables as a document of their own: `pdflatex <id>_standalone.tex`, from any folder."""
    return render("standalone.tex.j2", manifest=manifest, body=render_tables_tex(manifest, tables, trained))


def alternative_only(result: ManifestResult) -> dict[str, list[dict[str, str]]]:
    """Claim id -> the lines the checklist shows under the claim's row, one per alternative reading that matters
    (repro.claims.under_readings): each alternative under which a claim the chosen readings do not reproduce is
    reproduced, and, for a claim decided on trained rows or under a reading of what it measures, each one that
    changes its verdict (Table 5's reversal under the Switch gate)."""
    out: dict[str, list[dict[str, str]]] = {}
    for entry in result.readings:
        if entry.only_under():
            reproduced = [o for o in entry.alternatives if o.status == "reproduced"]
            lines = [(o, "reproduced only under an alternative reading") for o in reproduced]
        else:
            verdict = f"under this alternative reading (chosen: {entry.chosen.status})"
            lines = [(o, f"{o.status} {verdict}") for o in entry.changed_under()]
        for o, verdict in lines:
            line = {
                "label": o.label,
                "reading": o.reading,
                "value": o.value,
                "evidence": o.evidence,
                "verdict": verdict,
            }
            out.setdefault(entry.claim, []).append(line)
    return out


def render_claims_md(manifest: Manifest, result: ManifestResult) -> str:
    return render(
        "claims.md.j2",
        manifest=manifest,
        result=result,
        counts=verdict_counts(result.verdicts),
        trained=trained_on(manifest, result),
        alternative_only=alternative_only(result),
    )


def write_manifest_outputs(
    manifest: Manifest, result: ManifestResult, results_dir: Path, tables: bool = True
) -> list[Path]:
    """Write <id>.md, <id>.tex (table environments to \\input), <id>_standalone.tex (a document) and claims.md
    into results_dir/<profile>/<id>/, and <id>_unverified_checksums.txt where files failed their checksums (the
    captions name it); return their paths. `tables` False: claims.md alone (the tables, which show no verdict,
    were written from these results already: verify-all's report decides the claims again, with the others)."""
    out = profile_dir(results_dir, result.profile) / manifest.id
    files = {out / "claims.md": render_claims_md(manifest, result)}
    writer = FolderWriter(results_dir)
    if tables:
        built, trained = build_tables(manifest, result), trained_on(manifest, result)
        files = {
            out / f"{manifest.id}.md": render_tables_md(manifest, built, result),
            out / f"{manifest.id}.tex": render_tables_tex(manifest, built, trained),
            out / f"{manifest.id}_standalone.tex": render_standalone_tex(manifest, built, trained),
            **files,
        }
        if trained.checksums_file:
            files[out / trained.checksums_file] = trained.checksums_text()
        else:  # an earlier run's, on data that now passes its checksums
            writer.remove(out / f"{manifest.id}{CHECKSUMS_SUFFIX}")
    for path, text in files.items():
        writer.write_text(path, text)
    return list(files)


def render_audit() -> str:
    """The statistics audit and the power plan over every value in paper_tables/."""
    from repro.spec.paper import paper_tables
    from repro.claims.stats_audit import audit, power_plan

    rows, power = [], []
    for name, table in paper_tables().items():
        rows += [{"table": name, **r.to_dict()} for r in audit(table.values)]
        power += [{"table": name, **r.to_dict()} for r in power_plan(table.values)]
    return render("audit.md.j2", audit=rows, power=power)


def render_untested() -> str:
    """The findings of the paper's text that no claim tests, each with why (repro/spec/untested.toml)."""
    from repro.spec.untested import shipped_untested

    head = "Every finding of the paper's text that no claim decides, with the section it comes from and why"
    lines = [
        f"- Section {md_escape(f.section)}: {md_escape(f.finding)}. Not tested: {md_escape(f.why)}."
        for f in shipped_untested()
    ]
    return f"{head} (repro/spec/untested.toml):\n\n" + "\n".join(lines)


def render_figure_section(figures: list, results_dir: Path) -> str:
    lines = []
    for f in figures:
        title, ref, caption = md_escape(f.title), md_escape(f.paper_ref or "report figure"), md_escape(f.caption)
        if f.png is None:
            lines.append(f"- **{title}** ({ref}): {caption}")
            continue
        rel = f.png.relative_to(results_dir) if f.png.is_relative_to(results_dir) else f.png
        alt = title.replace("[", "(").replace("]", ")")
        lines.append(f"**{title}** ({ref})\n\n![{alt}]({rel})\n\n{caption}\n")
    return "\n".join(lines) if lines else "No figure could be drawn from these results."


def _report_context(entries: list[tuple[Manifest, ManifestResult | None]], tables: bool) -> dict[str, Any]:
    """What both report files show: each table's block (`tables`: its rendered tables too) and the profile's label
    (the figures' stamp)."""
    from repro.report.figures import stamp_for

    stamp = stamp_for([(m, r) for m, r in entries if r is not None])
    blocks = [
        {
            "manifest": m,
            "result": r,
            "tables": build_tables(m, r) if r and tables else [],
            "alternative_only": alternative_only(r) if r else {},
        }
        for m, r in entries
    ]
    return {"blocks": blocks, "label": stamp.text, "unverified": stamp.unverified, "detail": DETAIL}


def render_report(
    entries: list[tuple[Manifest, ManifestResult | None]],
    summary: dict[str, Any],
    extra_sections: list[tuple[str, str]] | None = None,
    figures: str = "",
    appendix: list[str] | None = None,
) -> str:
    """report.md: the profile's label, the summary, the claims checklist and the figures, then links to each
    section of report-detail.md (render_report_detail); `appendix`: the Artifact Appendix's files, relative to it."""
    return render(
        "report.md.j2",
        **_report_context(entries, tables=False),
        summary=summary,
        extra_sections=extra_sections or [],
        figures=figures,
        appendix=appendix or [],
    )


def render_report_detail(
    entries: list[tuple[Manifest, ManifestResult | None]], extra_sections: list[tuple[str, str]] | None = None
) -> str:
    """report-detail.md: every table beside the paper's numbers with its assumptions and readings, the report's
    other sections (readings, audit, compute, time) and the provenance."""
    context = _report_context(entries, tables=True)
    return render("report_detail.md.j2", **context, extra_sections=extra_sections or [])


def render_timings(results_dir: Path, profile: str) -> str | None:
    """The "Where the time went" section: the phase table of the profile's timings.json (verify-all's entry, else
    the latest), or None without one. The report is written while its command still runs, so the section is
    written a second time when the command ends (repro.report.html.rewrite_timings): then it holds the whole
    command."""
    entry = report_entry(load(timings_path(results_dir, profile)))
    return None if entry is None else render("timings.md.j2", entry=entry, rows=phase_rows(entry))
