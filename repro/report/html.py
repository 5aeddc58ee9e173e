"""report.html beside report.md: the same results, figures and sections, laid out for a reader in a browser.

One self-contained file (figures inline as base64 PNG, styles inline, no script, no network
reference), opened from the results folder: a first screen with the headline per group of claims
and per table in colour; each claim one line (verdict, measured against reported) with its
evidence folded away below (<details>); numbers linked to the run records they came from
(relative links to ../runs/<hash>.json) and each claim to the figures that draw its rows. It reads
the data report.md is rendered from (repro.report.summary.write_report) and decides nothing. The
Markdown sections (learning check, statistics audit, compute) are converted with markdown-it, raw HTML
off; an image there is inlined only from the report's own figures/ folder (a PNG, not through a link),
so no text that reaches a section can embed another file of the machine. Torch-free.
"""

from __future__ import annotations

import base64
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from markupsafe import Markup, escape

from repro.claims.headline import STATUSES
from repro.core.fsutil import FolderWriter, encode_text
from repro.cost.plan import rows_read
from repro.plan.manifest import Manifest
from repro.report.figures import FigureFile, stamp_for
from repro.report.render import DETAIL, TIME_TITLE, render, render_timings
from repro.report.table_rows import Table, build_tables, reading_notes, verdict_counts
from repro.report.trace import row_ids, trace, value_text
from repro.report.trained_on import TrainedOn, trained_on
from repro.results.measurements import ManifestResult, Verdict

STATUS_CLASS = {"reproduced": "ok", "not reproduced": "bad", "inconclusive": "unsure", "not run": "skip"}
EXTENSION_TITLE = "Beyond the paper (extension)"


@dataclass(frozen=True)
class RunLink:
    label: str  # "seed 0"
    href: str  # relative to report.html
    short: str  # the hash's first 8 characters
    value: str = ""  # the number the run gave, where one is shown


@dataclass(frozen=True)
class RowRuns:
    row: str
    label: str
    runs: tuple[RunLink, ...]


@dataclass(frozen=True)
class ClaimView:
    anchor: str
    verdict: Verdict
    css: str
    figures: tuple[tuple[str, str], ...]  # (anchor, title) of each figure that draws the claim's rows
    rows: tuple[RowRuns, ...]  # the runs behind the claim's numbers
    measured: tuple[tuple[str, str], ...]  # (metric path, value as text)
    under: str = ""  # "reproduced under the alternative reading ...", where only an alternative reproduces it


@dataclass
class TableView:
    manifest: Manifest
    result: ManifestResult | None
    extension: bool
    claims: list[ClaimView] = field(default_factory=list)
    shown: list[ClaimView] = field(default_factory=list)  # decided in another table (Verdict.decided_in)
    tables: list[Table] = field(default_factory=list)
    trained: TrainedOn | None = None
    counts: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class FigureView:
    anchor: str
    title: str
    paper_ref: str
    caption: str
    src: str  # a data: URI, or "" when not drawn


def _runs_href(out_dir: Path, results_dir: Path) -> str:
    """The runs folder as seen from report.html (results/<profile>/ -> results/runs/)."""
    return Path(os.path.relpath(results_dir / "runs", out_dir)).as_posix()


FIGURES = "figures"  # <results>/<profile>/figures/: the only folder the page inlines images from
MAX_FIGURE_BYTES = 16 << 20  # a figure here is a few hundred KB


def data_uri(path: Path | None) -> str:
    """A PNG as a data: URI; "" when absent, not a regular file (a link, a FIFO) or larger than a figure is."""
    if path is None or path.suffix.lower() != ".png":
        return ""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return ""
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_FIGURE_BYTES:
            return ""
        return "data:image/png;base64," + base64.b64encode(fh.read()).decode("ascii")


def figure_file(out_dir: Path, src: str) -> Path | None:
    """The file an image source names, when it is one of the report's own figures (figures/<name>.png below
    out_dir, no '..', no folder of its own); else None."""
    parts = Path(src).parts
    if len(parts) != 2 or parts[0] != FIGURES or src.startswith(("/", "\\")) or ".." in parts or ":" in src:
        return None
    folder = out_dir / FIGURES
    if folder.is_symlink():
        return None
    return folder / parts[1]


def _claim_view(
    manifest: Manifest, result: ManifestResult, v: Verdict, figures: list[FigureFile], runs_href: str
) -> ClaimView:
    claim = next((c for c in manifest.claims if c.id == v.claim), None)
    rows = rows_read(manifest, claim) if claim is not None else ()
    linked = tuple(
        (f"fig-{f.id}", f.title) for f in figures if f.drawn and any((manifest.id, r) in f.shows for r in rows)
    )
    per_row = []
    for row_id in rows:
        runs = sorted(result.measured.runs(row_id), key=lambda r: r.seed)
        links = [
            RunLink(f"seed {r.seed}", f"{runs_href}/{r.hash}.json", r.hash[:8], f"{100 * r.accuracy:.2f}%")
            for r in runs
        ]
        if links:
            per_row.append(RowRuns(row_id, manifest.row(row_id).label, tuple(links)))
    measured = tuple((k, value_text(x, p="p = ", digits=4, seed="")) for k, x in v.measured.items())
    return ClaimView(
        f"claim-{manifest.id}-{v.claim}",
        v,
        STATUS_CLASS[v.status],
        linked,
        tuple(per_row),
        measured,
        reading_notes(result).get(v.claim, ""),
    )


def table_views(
    entries: list[tuple[Manifest, ManifestResult | None]],
    extension: set[str],
    figures: list[FigureFile],
    runs_href: str,
) -> list[TableView]:
    out = []
    for manifest, result in entries:
        view = TableView(manifest, result, manifest.id in extension)
        if result is not None:
            view.claims = [_claim_view(manifest, result, v, figures, runs_href) for v in result.verdicts]
            view.shown = [_claim_view(manifest, result, v, figures, runs_href) for v in result.shown]
            view.tables = build_tables(manifest, result)
            view.trained = trained_on(manifest, result)
            view.counts = verdict_counts(result.verdicts)
        out.append(view)
    return out


def _markdown(out_dir: Path):
    """Markdown to HTML (tables on, raw HTML off), with images read from out_dir and inlined."""
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": False}).enable("table")

    def image(self, tokens, idx, options, env):  # a render rule is bound to the renderer: self first
        token = tokens[idx]
        source = str(token.attrGet("src") or "")
        alt = escape(token.content)
        path = figure_file(out_dir, source)
        if path is None:
            return f"<em>{alt} (image {escape(source)} not shown: not one of this report's figures)</em>"
        src = data_uri(path)
        return f'<img src="{src}" alt="{alt}">' if src else f"<em>{alt} (figure file missing)</em>"

    md.add_render_rule("image", image)
    return md


def render_report_html(
    entries: list[tuple[Manifest, ManifestResult | None]],
    extension: set[str],
    summary: dict[str, Any],
    figures: list[FigureFile],
    sections: list[tuple[str, str]],
    titles: dict[str, str],
    out_dir: Path,
    results_dir: Path,
    appendix: list[str] | None = None,
) -> str:
    """The page. `summary` is write_report's (its headline counts, per-table counts and lines), `sections` the
    Markdown sections of report.md, `figures` every figure drawn (reproduction and extension), `titles` the
    headline's name for each group of claims, `appendix` the Artifact Appendix's files (relative to the page)."""
    md = _markdown(out_dir)
    groups = [(g, titles.get(g, g), c) for g, c in summary["counts"].items() if g != "extension" and sum(c.values())]
    if sum(summary.get("extension", {}).values()):
        groups.append(("extension", EXTENSION_TITLE, summary["extension"]))
    runs_href = _runs_href(out_dir, results_dir)
    views = table_views(entries, extension, figures, runs_href)
    stamp = stamp_for([(m, r) for m, r in entries if r is not None])
    return render(
        "report.html.j2",
        html=True,
        status_class=STATUS_CLASS,
        summary=summary,
        groups=groups,
        statuses=STATUSES,
        views=views,
        runs_href=runs_href,
        label=stamp.text,
        warn=stamp.warns,
        unverified=stamp.unverified,
        claims=sum(len(v.claims) for v in views),
        not_run=sum(c.verdict.status == "not run" for v in views for c in v.claims),
        pending=sum(len(v.manifest.claims) for v in views if v.result is None),
        figures=[
            FigureView(f"fig-{f.id}", f.title, f.paper_ref or "report figure", f.caption, data_uri(f.png))
            for f in figures
        ],
        sections=[(title, Markup(md.render(body))) for title, body in sections],
        appendix=appendix or [],
    )


def write_trace_html(
    entries: list[tuple[Manifest, ManifestResult | None]], profile: str, out_dir: Path, results_dir: Path
) -> Path:
    """results_dir/<profile>/trace.html: every row of every table traced (repro.report.trace), one section each,
    which report.html's rows link to."""
    from repro.results.actions import load_actions

    records: dict[str, Any] = {}  # a record read once, however many rows it is behind
    actions = load_actions(out_dir)
    traces = [
        trace(results_dir, m, r, row, records=records, actions=actions)
        for m, r in entries
        if r is not None
        for row in row_ids(m, r)
    ]
    path = out_dir / "trace.html"
    runs_href = _runs_href(out_dir, results_dir)
    FolderWriter(results_dir).write_text(
        path, render("trace.html.j2", html=True, traces=traces, profile=profile, runs_href=runs_href)
    )
    return path


def rewrite_timings(results_dir: Path, profile: str, out_dir: Path) -> None:
    """The time section of report-detail.md and report.html written again from timings.json as it is now."""
    body = render_timings(results_dir, profile)
    if body is None:
        return
    pages = {
        out_dir / DETAIL: _replaced(out_dir / DETAIL, f"## {TIME_TITLE}\n\n", "\n## ", body + "\n"),
        out_dir / "report.html": _replaced(
            out_dir / "report.html", f"<h2>{TIME_TITLE}</h2>\n", "</section>", _markdown(out_dir).render(body) + "\n"
        ),
    }
    FolderWriter(results_dir).replace_set({path: encode_text(text) for path, text in pages.items() if text})


def _replaced(path: Path, start: str, end: str, new: str) -> str | None:
    """The page's text with what lies between `start` and the next `end` replaced by `new`; None without both."""
    text = path.read_text(encoding="utf-8")
    at = text.find(start)
    stop = text.find(end, at + len(start)) if at >= 0 else -1
    return text[: at + len(start)] + new + text[stop:] if stop >= 0 else None
