"""`repro bench estimates, speed, smoke, fixed-costs`: what commands cost, measured, beside what the cost model
estimates (repro.bench.estimates, repro.bench.speed, repro.bench.smoke, repro.bench.fixed_costs)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from repro.bench.speed import BENCH_RUNS, REPS
from repro.cli.common import console
from repro.cli.options import MANIFESTS, PROFILES, READ_RESULTS, READINGS, profile_option


def estimates_cmd(
    profile: Optional[str] = profile_option(
        "The profile whose measured times to check. Default: $REPRO_PROFILE or smoke."
    ),
    results_dir: Optional[Path] = READ_RESULTS,
    fit_on: str = typer.Option(
        "",
        "--fit-on",
        help="Fit on these tables of the profile only (comma-separated), holding its "
        "others out; default: every record (in-sample).",
    ),
    wall: Optional[float] = typer.Option(
        None,
        "--wall",
        min=0.0,
        help="The measured wall seconds of the verify-all that filled the "
        "folder, where it has no timings.json (e.g. from GNU time).",
    ),
    manifests_dir: Optional[Path] = MANIFESTS,
    profiles: Optional[Path] = PROFILES,
    readings: Optional[Path] = READINGS,
) -> None:
    """Estimate / measured time per table, per held-out run and for verify-all, from a results folder's records."""
    from repro.bench.estimates import GOAL, bench_estimates
    from repro.cli.common import load_every, settings
    from repro.cost.estimate import CostModel, seconds_text as duration
    from repro.plan.table_plan import plan_all

    own = settings()
    profile = profile or own.profile
    manifests = load_every(manifests_dir, profiles, readings=readings)
    ids = tuple(i for i in fit_on.split(",") if i)
    unknown = [i for i in ids if i not in {m.id for m in manifests}]
    if unknown:
        raise typer.BadParameter(f"no table {unknown[0]!r}", param_hint="--fit-on")
    r = bench_estimates(results_dir or own.results, profile, plan_all(manifests), ids, wall, CostModel.under(own))
    t = Table(
        "Table",
        "Estimated",
        "Measured",
        "Estimate / measured",
        "From",
        "Measured by",
        title=f"{profile}: fitted on {', '.join(ids) + ' and the other profiles' if ids else 'every record'}",
    )
    for c in r.tables:
        assert c.measured_s is not None  # bench_estimates keeps only the tables with a measured time
        held = "" if not ids or c.what in ids else " (held out)"
        t.add_row(
            c.what + held,
            duration(c.estimated_s),
            duration(c.measured_s),
            "-" if c.ratio is None else f"{c.ratio:.2f}",
            c.basis,
            c.source,
        )
    for total in (r.held_out, r.command):
        if total is not None:
            assert total.measured_s is not None  # the held-out tables' sum, or the command's wall time
            t.add_row(
                f"[bold]{total.what}[/]",
                duration(total.estimated_s),
                duration(total.measured_s),
                "-" if total.ratio is None else f"[bold]{total.ratio:.2f}[/]",
                total.basis,
                total.source,
            )
    console.print(t)
    if r.run_ratios:
        q = sorted(r.run_ratios)
        pick = lambda p: q[min(len(q) - 1, int(p * len(q)))]  # noqa: E731
        console.print(
            f"{'held-out' if ids else 'fitted'} runs: {len(q)}, predicted / measured seconds median "
            f"{pick(0.5):.2f}, 10-90% {pick(0.1):.2f}-{pick(0.9):.2f}",
            markup=False,
        )
    for line in r.fitted:
        console.print(f"[dim]{line}[/]", highlight=False)
    verdict = r.within_goal
    if verdict is not None:
        console.print(
            f"goal {GOAL[0]:.1f}-{GOAL[1]:.1f} ({'held-out tables and ' if ids else ''}verify-all): "
            f"{'met' if verdict else 'NOT met'}",
            markup=False,
        )


def speed_cmd(
    runs: int = typer.Option(BENCH_RUNS, "--runs", min=1, help="Reference runs to train again."),
    reps: int = typer.Option(REPS, "--reps", min=1, help="Repetitions of each run."),
) -> None:
    """This CPU against the CPU reference's machine: a few of the reference's runs trained again here. A quiet
    measurement is kept, and `repro list` scales the reference's figures by it (docs/cost-model.md)."""
    from repro.cli.common import print_grid, settings, show
    from repro.core.terminal import Column, Grid, number_columns
    from repro.bench.speed import bench_runs, measure_speed
    from repro.cost.calibration import MAX_AGE_DAYS, keep, kept_speed, speed_path

    speed, rows = measure_speed(bench_runs(runs), reps)
    grid = Grid([Column("Reference run"), *number_columns("There CPU-s", "Here CPU-s", "Apart", "Ratio")])
    for r in rows:  # here: the least of the repetitions; apart: the most over the least
        grid.add(
            r.label.split(" (")[0],
            f"{r.reference_s:.3f}",
            f"{min(r.seconds):.3f}",
            f"{max(r.seconds) / min(r.seconds) - 1:.0%}",
            f"{r.ratio:.2f}",
        )
    print_grid(grid, f"{speed.machine} against the CPU reference's machine")
    show(speed.describe())
    cache = settings().cache
    if keep(speed, cache):
        show(
            f"kept in {speed_path(cache)} for {MAX_AGE_DAYS} days: estimates scale the CPU reference by "
            f"{speed.factor:.2f}"
        )
    else:
        kept = kept_speed(cache=cache)
        show(
            f"not kept: {speed.why_not_kept()}; estimates go on with "
            + (f"the kept factor {kept.factor:.2f}" if kept else "the CPU reference unscaled")
        )


def smoke_cmd(
    folder: Optional[Path] = typer.Option(
        None,
        "--folder",
        help="Where the run goes (results/, cache/, "
        "verify-all.log); it must not exist yet. "
        "Default: a new temporary folder.",
    ),
    history: Path = typer.Option(
        Path("results/bench/smoke.json"),
        "--history",
        help="The history file: each run is appended, the ratio is to the last of this machine.",
    ),
    warm_cache: Optional[Path] = typer.Option(
        None, "--cache", help="Use this cache instead of an empty one (the measurement is then not cold)."
    ),
    again: bool = typer.Option(
        False,
        "--again",
        help="Then verify-all once more into the same folder: every "
        "run reused (the target: at most 15 s on a quiet 2-core machine).",
    ),
) -> None:
    """The smoke profile end to end, cold: its phases, wall time, CPU seconds, and the ratio to last time here."""
    import tempfile

    from repro.bench.smoke import run_smoke
    from repro.cli.common import show

    if folder is not None and folder.exists():
        raise typer.BadParameter(
            f"{folder} exists; give a folder that does not, so the run starts fresh", param_hint="--folder"
        )
    folder = folder or Path(tempfile.mkdtemp(prefix="repro-bench-smoke-"))
    show(f"verify-all --profile smoke in {folder} ({'cache ' + str(warm_cache) if warm_cache else 'empty cache'})...")
    code = _smoke_result(run_smoke(folder, warm_cache), history, cold=warm_cache is None, reused=False)
    if again and not code:
        show("verify-all again into the same folder (every run reused)...")
        code = _smoke_result(run_smoke(folder, warm_cache, log="verify-all-again.log"), history, False, True)
    show(f"results in {folder / 'results'}; appended to {history}")
    raise typer.Exit(code)


def _smoke_result(run, history: Path, cold: bool, reused: bool) -> int:
    """Print one run's phases and totals, append it to the history, and return its exit code."""
    from repro.bench.smoke import append_history, history_entry, previous, read_history
    from repro.cli.common import print_grid, show
    from repro.core.terminal import Column, Grid, number_columns
    from repro.results.timings import phase_rows

    entry = history_entry(run, cold=cold, reused=reused)
    before = previous(read_history(history), entry)
    kind = "every run reused" if reused else "cold" if cold else "warm cache"
    if run.timings is not None:
        grid = Grid(
            [
                Column("Phase"),
                *number_columns("Wall-s", "CPU-s"),
                Column("Covers", prose=True, drop=2),
                Column("Most CPU in", prose=True, drop=1),
            ]
        )
        for r in phase_rows(run.timings):
            grid.add(r.phase, "" if r.wall_s is None else f"{r.wall_s:.1f}", f"{r.cpu_s:.1f}", r.items, r.most)
        print_grid(grid, f"verify-all --profile smoke ({kind}), {entry['machine']['cpu']} x{entry['machine']['cores']}")
        show(
            f"timings.json accounts for {run.timings['wall_s']:.1f} s of its {run.wall_s:.1f} s wall (the rest: "
            "the action log and crate written after it, and the interpreter's start and exit)"
        )
    else:
        show(f"no timings.json: see {run.folder}")
    ratio = (
        f"; {run.cpu_s / before['cpu_s']:.2f}x the CPU-s of {before['time']} ({before['commit'][:12]}, "
        f"{before['cpu_s']:.0f} CPU-s)"
        if before
        else "; no earlier run of this machine"
    )
    show(
        f"{kind}: wall {run.wall_s:.1f} s, {run.cpu_s:.1f} CPU-s (user {run.user_s:.1f} + system {run.sys_s:.1f}, "
        f"every process), peak RSS {run.max_rss_mb:,.0f} MB, load {run.load[0]:.1f} -> {run.load[1]:.1f}{ratio}"
    )
    append_history(history, entry)
    if run.returncode:
        show(f"verify-all exited {run.returncode}: see the log in {run.folder}")
    return run.returncode


def fixed_costs_cmd(
    results_dir: Optional[Path] = READ_RESULTS,
    profile: Optional[str] = profile_option(
        "The profile the table trained at (the device check's: full_synthetic). Default: $REPRO_PROFILE or smoke."
    ),
    table: str = typer.Option("table2", "--table", help="The table whose `repro <id>` run to read."),
    out: Optional[Path] = typer.Option(None, "--out", help="Also write the rows as JSON here."),
) -> None:
    """Each run's fixed cost (data, model building) and first epoch against its steady state."""
    from repro.bench.fixed_costs import NoTimings, fixed_costs
    from repro.cli.common import fail, print_grid, settings, show
    from repro.core.fsutil import atomic_write_json
    from repro.core.terminal import Column, Grid, number_columns

    own = settings()
    profile = profile or own.profile
    try:
        rows = fixed_costs(results_dir or own.results, profile, f"run {table}")
    except NoTimings as exc:
        fail(str(exc))
    grid = Grid([Column("Run", prose=True), *number_columns("Data", "Build", "Epoch 1", "Later", "1 / later")])
    for r in rows:
        grid.add(
            r.label,
            f"{r.data_s:.1f}",
            f"{r.build_s:.1f}",
            f"{r.first_epoch_s:.1f}",
            "-" if r.steady_epoch_s is None else f"{r.steady_epoch_s:.1f}",
            "-" if r.first_over_steady is None else f"{r.first_over_steady:.1f}x",
        )
    print_grid(grid, f"`repro {table}` at {profile}: fixed costs and first epoch per run, in seconds")
    fixed, runs = sum(r.fixed_s for r in rows), sum(r.run_s for r in rows)
    show(
        f"fixed costs {fixed:.1f} s of {runs:.1f} s of runs ({fixed / runs:.0%}); data: making or loading it; "
        "build: the model and its compilation; later: the median of the later epochs (training and evaluation)"
    )
    if out is not None:
        atomic_write_json(out, {"profile": profile, "table": table, "runs": [r.to_dict() for r in rows]})
        show(f"wrote {out}")
