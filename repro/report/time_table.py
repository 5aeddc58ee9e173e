"""The report's "Where the time went": a command's phase timings (repro.results.timings) as a small table.

The report is written while its command still runs, so the table is written a second time when the command ends
(repro.results.timings.when_done), into report-detail.md and report.html: then it holds the whole command, from
the process's start to its last phase, the report's own rendering included.
"""

from __future__ import annotations

from pathlib import Path

from repro.core.fsutil import FolderWriter, encode_text
from repro.results.timings import load, phase_rows, report_entry, timings_path

TITLE = "Where the time went"


def render_timings(results_dir: Path, profile: str) -> str | None:
    """The phase table of the profile's timings.json (verify-all's entry, else the latest), or None without one."""
    from repro.report.render import environment

    entry = report_entry(load(timings_path(results_dir, profile)))
    if entry is None:
        return None
    return environment().get_template("timings.md.j2").render(entry=entry, rows=phase_rows(entry))


def rewrite_timings(results_dir: Path, profile: str, out_dir: Path) -> None:
    """The section of report-detail.md and report.html written again from timings.json as it is now."""
    from repro.report.html import _markdown
    from repro.report.render import DETAIL

    body = render_timings(results_dir, profile)
    if body is None:
        return
    pages = {
        out_dir / DETAIL: _replaced(out_dir / DETAIL, f"## {TITLE}\n\n", "\n## ", body + "\n"),
        out_dir / "report.html": _replaced(
            out_dir / "report.html", f"<h2>{TITLE}</h2>\n", "</section>", _markdown(out_dir).render(body) + "\n"
        ),
    }
    FolderWriter(results_dir).replace_set({path: encode_text(text) for path, text in pages.items() if text})


def _replaced(path: Path, start: str, end: str, new: str) -> str | None:
    """The page's text with what lies between `start` and the next `end` replaced by `new`; None without both."""
    text = path.read_text(encoding="utf-8")
    at = text.find(start)
    stop = text.find(end, at + len(start)) if at >= 0 else -1
    return text[: at + len(start)] + new + text[stop:] if stop >= 0 else None
