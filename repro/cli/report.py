"""`repro report`: re-render <results>/<profile>/report.md from whatever results the folder holds."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from repro.cli.common import (
    ManifestsOpt, ProfilesOpt, ResultsOpt, check_profile, check_results_dir, console, fail, load_every, show,
)
from repro.results import default_results_dir


def report(results_dir: Optional[Path] = ResultsOpt, manifests_dir: Optional[Path] = ManifestsOpt,
           profiles: Optional[Path] = ProfilesOpt,
           profile: Optional[str] = typer.Option(None, "--profile", "-p", help="Only this profile's report. Default: every profile with results.")) -> None:
    """Re-render <results>/<profile>/report.md from whatever results the directory holds."""
    from repro.claims import decided_results
    from repro.report.summary import write_report
    from repro.results import profiles_present

    results_dir = results_dir or default_results_dir()
    manifests = load_every(manifests_dir, profiles)  # bad input is reported before anything else
    present = profiles_present(results_dir)
    if profile and profile not in present:
        check_profile(manifests, profile)  # an unknown name is refused, naming the closest
    names = [profile] if profile else present
    check_results_dir(results_dir)
    if not names:
        fail(f"no results in {results_dir}: run a table or `repro verify-all` first")
    for name in names:
        path, summary = write_report(decided_results(results_dir, name, manifests), results_dir, name)
        console.rule(name)
        for line in summary["lines"]:
            show(line)
        show(f"wrote {path}")
