"""`repro trace TABLE ROW [COLUMN]`: one number of a table back to its claims, run records, code, container and
data (repro.report.trace), as text at 80 columns or JSON."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer

from repro.cli.common import check_profile, fail, making, refuse_a_file, settings
from repro.cli.options import MANIFESTS, PROFILE, PROFILES, READ_RESULTS, READINGS


def trace(
    table: str = typer.Argument(..., help="The table's id, e.g. table1."),
    row: str = typer.Argument(
        ..., help="A row id (dw_h128_moe) or a comparison id (dw_h128); an unknown one lists the table's."
    ),
    column: Optional[str] = typer.Argument(
        None, help="One metric of the row (accuracy, rho, gap, total_macs...). Default: every metric stored for it."
    ),
    profile: Optional[str] = PROFILE,
    results_dir: Optional[Path] = READ_RESULTS,
    manifests_dir: Optional[Path] = MANIFESTS,
    profiles: Optional[Path] = PROFILES,
    readings: Optional[Path] = READINGS,
    as_json: bool = typer.Option(False, "--json", help="The trace as JSON, for scripts."),
) -> None:
    """One number of a table: its claims, run records, commit, container, data and the command that makes it."""
    import json

    from rich.text import Text

    from repro.claims.decide import decide_all
    from repro.cli.common import load_one, load_valid_or_fail, show
    from repro.report.trace import TraceError, trace as traced
    from repro.results.measurements import ManifestResult, ResultUnusable, load_result

    manifest = load_one(table, manifests_dir, profiles, readings=readings)
    given = results_dir  # the folder named on the command line: the hint below names it again
    profile = profile or settings().profile
    results_dir = results_dir or settings().results
    refuse_a_file(results_dir)  # read as a folder, its results.json "cannot be read"

    def stored(m) -> ManifestResult | None:
        try:
            return load_result(results_dir, profile, m.id)
        except ResultUnusable as exc:
            if m.id == manifest.id:
                fail(f"{exc}; `repro report` rebuilds it from the run records")
            return None  # another table's: only the claims that read it lose it, as they would with it not run

    # The claims decided on the stored measurements by the current manifests, as the report (and trace.html) decides
    # them: a status as results.json stores it may be one typed in, or one the manifests since changed.
    # Over the folder's valid manifests: one that is not costs only the claims that read it, as above.
    valid, _ = load_valid_or_fail(manifests_dir, profiles, readings)
    entries = [(manifest, stored(manifest))] + [(m, stored(m)) for m in valid if m.id != manifest.id]
    result = {m.id: r for m, r in decide_all(entries)}.get(manifest.id)
    if result is None:
        check_profile([manifest], profile)  # a misspelt name: the closest, not a command that repeats it
        make = making(["run", manifest.id], profile, given)
        fail(f"no results of {manifest.id} at profile '{profile}' in {results_dir}; run `{make}` first")
    try:
        found = traced(results_dir, manifest, result, row, column)
    except TraceError as exc:
        fail(str(exc))
    if as_json:
        sys.stdout.write(json.dumps(found.to_dict(), indent=1) + "\n")
        return
    from repro.cli.common import console
    from repro.core.terminal import wrap_words

    for heading, lines in found.items():
        show(Text(heading, style="bold"))
        for line in lines:  # a line that wraps goes on under its first word, so each stays one item
            if line == found.command:  # one line however wide, so that it pastes whole into a shell
                console.print(Text("  " + line), soft_wrap=True, highlight=False)
                continue
            for i, part in enumerate(wrap_words(Text(line), max(20, console.width - 4))):
                console.print(Text("  " if i == 0 else "    ") + part, soft_wrap=True, highlight=False)
