"""The report's "Where the time went": a command's phase timings (repro.results.timings) as a small table."""

from __future__ import annotations

from pathlib import Path

from repro.results.timings import load, phase_rows, report_entry, timings_path


def render_timings(results_dir: Path, profile: str) -> str | None:
    """The phase table of the profile's timings.json (verify-all's entry, else the latest), or None without one."""
    from repro.report.render import environment

    entry = report_entry(load(timings_path(results_dir, profile)))
    if entry is None:
        return None
    return environment().get_template("timings.md.j2").render(entry=entry, rows=phase_rows(entry))
