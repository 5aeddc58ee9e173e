"""`repro status`: per table, runs done, running, failed, pending (read from the results folder alone)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from repro.cli.common import ManifestsOpt, ProfilesOpt
from repro.execution.status import STATES, table_status
from repro.runtime.interrupt import sigterm_as_interrupt
from repro.runtime.locks import DEFAULT_STALE_AFTER_S, LockSettings


def status(ids: list[str] = typer.Argument(None, help="Manifest ids (default: all)."),
           profile: Optional[str] = typer.Option(None, "--profile", "-p", help="Default: $REPRO_PROFILE or smoke."),
           results_dir: Optional[Path] = typer.Option(None, "--results-dir", "-o",
                                                      help="Default: $REPRO_RESULTS or ./results."),
           manifests_dir: Optional[Path] = ManifestsOpt, profiles: Optional[Path] = ProfilesOpt,
           stale_lock_after: float = typer.Option(DEFAULT_STALE_AFTER_S, "--stale-lock-after",
                                                  help="Seconds without a heartbeat after which a run counts as interrupted."),
           verbose: bool = typer.Option(False, "--verbose", "-v", help="Also list the pending runs.")) -> None:
    """Per table: runs done, running (who, for how long, last heartbeat), failed (with the error), pending."""
    from rich.table import Table

    from repro.cli.common import check_profile, console, err, load_some
    from repro.profiles import default_profile
    from repro.results import default_results_dir

    profile = profile or default_profile()
    results_dir = results_dir or default_results_dir()
    manifests = load_some(ids, manifests_dir, profiles)
    check_profile(manifests, profile)
    table = Table("Table", *STATES, title=f"runs in {results_dir} (profile {profile})")
    lines: list[str] = []
    settings = LockSettings(stale_lock_after)
    try:
        with sigterm_as_interrupt():
            for m in manifests:
                runs = table_status(m, profile, results_dir, settings)
                if not runs.runs:
                    continue
                table.add_row(m.id, *(str(runs.count(s)) for s in STATES))
                for r in runs.runs:
                    if r.state in ("running", "failed") or (verbose and r.state == "pending"):
                        lines.append(f"{r.state:8} {r.label} ({r.run_hash[:12]}): {r.detail}")
    except KeyboardInterrupt:
        err.print("[bold yellow]status interrupted; it changes nothing in the results folder[/]", highlight=False)
        raise typer.Exit(130)
    console.print(table)
    for line in lines:
        console.print(line, highlight=False, markup=False)
