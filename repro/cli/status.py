"""`repro status`: per table, runs done, running, failed, pending (read from the results folder alone)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from repro.cli.execution import stale_lock_after_option
from repro.cli.options import MANIFESTS, PROFILE, PROFILES, READ_RESULTS, READINGS, verbose_option
from repro.execution.status import STATES, table_status
from repro.runtime.locks import LockSettings, stale_after_problem


def status(
    ids: Optional[list[str]] = typer.Argument(None, help="Manifest ids (default: all)."),
    profile: Optional[str] = PROFILE,
    results_dir: Optional[Path] = READ_RESULTS,
    manifests_dir: Optional[Path] = MANIFESTS,
    profiles: Optional[Path] = PROFILES,
    readings: Optional[Path] = READINGS,
    stale_lock_after: float = stale_lock_after_option(
        "Seconds without a heartbeat after which a run counts as interrupted."
    ),
    verbose: bool = verbose_option("Also list the pending runs."),
) -> None:
    """Per table: runs done, running (who, for how long, last heartbeat), failed (with the error), pending."""
    from repro.cli.common import (
        CommandInterrupted,
        check_profile,
        fail,
        load_some,
        print_grid,
        refuse_a_file,
        settings as own,
        show,
    )
    from repro.core.terminal import Column, Grid
    from repro.plan.table_plan import build_plans
    from repro.results.measurements import broken_link

    if problem := stale_after_problem(stale_lock_after):
        fail(problem)
    profile = profile or own().profile
    results_dir = results_dir or own().results
    refuse_a_file(results_dir)  # read as an empty folder, it listed every run pending
    if (broken := broken_link(results_dir)) is not None:  # every run listed pending, or failed round a loop
        fail(broken)
    manifests = load_some(ids, manifests_dir, profiles, readings=readings)
    check_profile(manifests, profile)
    plans = build_plans(manifests, profile)
    table = Grid([Column("Table"), *(Column(s, right=True) for s in STATES)])
    lines: list[str] = []
    settings = LockSettings(stale_lock_after, job=own().launch.slurm)
    try:
        for plan in plans:
            runs = table_status(plan, results_dir, settings)
            if not runs.runs:
                continue
            table.add(plan.id, *(str(runs.count(s)) for s in STATES))
            for r in runs.runs:
                if r.state in ("running", "failed") or (verbose and r.state == "pending"):
                    lines.append(f"{r.state:8} {r.label} ({r.run_hash[:12]})" + (f": {r.detail}" if r.detail else ""))
    except KeyboardInterrupt as exc:
        raise CommandInterrupted(
            "status", None, exc, "status interrupted; it changes nothing in the results folder"
        ) from exc
    if not table.cells:  # an empty grid under its title read as "nothing found"
        left_out = [plan.id for plan in plans if plan.manifest.trained_datasets()]  # rows that train, none planned
        for ids, why in (
            (left_out, "training rows are left out by the profile"),
            (
                [plan.id for plan in plans if plan.id not in left_out],
                "numbers are counted, not trained (FLOPs, timings)",
            ),
        ):
            if ids:
                verb, its = ("trains", "its") if len(ids) == 1 else ("train", "their")
                show(f"{', '.join(ids)} {verb} no run at profile {profile}: {its} {why}")
        return
    missing = "" if results_dir.exists() else ": the folder does not exist (yet), so every run is pending"
    print_grid(table, f"runs in {results_dir} (profile {profile}){missing}")
    for line in lines:
        show(line)
