"""`repro report`: re-render <results>/<profile>/report.md from whatever results the folder holds."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from repro.cli.common import (
    ManifestsOpt, ProfilesOpt, ResultsOpt, CommandInterrupted, check_profile, check_results_dir, console, fail,
    load_every, show, write_failed,
)
from repro.core.fsutil import WriteFailed
from repro.results.measurements import default_results_dir


def report(results_dir: Optional[Path] = ResultsOpt, manifests_dir: Optional[Path] = ManifestsOpt,
           profiles: Optional[Path] = ProfilesOpt,
           profile: Optional[str] = typer.Option(None, "--profile", "-p", help="Only this profile's report. Default: every profile with results.")) -> None:
    """Re-render <results>/<profile>/report.md and report.html from whatever results the directory holds."""
    import sys

    from repro.claims import decided_results
    from repro.cli.common import recording
    from repro.report.summary import write_report
    from repro.results.measurements import profiles_present
    from repro.runtime.interrupt import command_line, raise_pending

    results_dir = results_dir or default_results_dir()
    manifests = load_every(manifests_dir, profiles)  # bad input is reported before anything else
    if profile is not None:
        check_profile(manifests, profile)  # an unknown name is refused, naming the closest, before the folder
    if not results_dir.is_dir():
        fail(f"no results in {results_dir}: the folder does not exist; run a table or `repro verify-all` first")
    present = profiles_present(results_dir)
    if profile is not None and profile not in present:
        fail(f"no results of profile '{profile}' in {results_dir} (profiles with results: "
             f"{', '.join(present) or 'none'}); run a table at that profile first")
    names = [profile] if profile else present
    if not names:
        fail(f"no results in {results_dir}: run a table or `repro verify-all` first")
    for name in names:
        check_results_dir(results_dir, name)
    try:
        for name in names:
            with recording("report", results_dir, name, heavy=False):
                path, summary = write_report(decided_results(results_dir, name, manifests), results_dir, name)
            console.rule(name)
            for line in summary["lines"]:
                show(line)
            show(f"wrote {path} and {path.with_name('report.html')}")
        raise_pending()  # a Ctrl-C dropped in a finalizer while rendering still interrupts
    except KeyboardInterrupt as exc:
        # Each file is replaced whole, so none is half-written; the set of them may be part old, part new.
        text = (f"report interrupted: the run records and results are untouched; figures and report.md may be "
                f"partly re-rendered; rerun `{command_line(sys.argv)}` to render them all")
        raise CommandInterrupted("report", None, exc, text) from exc
    except WriteFailed as exc:
        write_failed(exc)
