"""The commands that run tables: `repro run ID...`, `repro <id>` for every manifest, `repro verify-all`.

What they print, quiet by default: progress (bars in a terminal; nothing piped), one summary line per
table as it ends, the claims checklist, then warnings and errors. `-v` adds the detail (each FLOP
count, each latency, the claims' evidence); everything, with its time, is also written to
<results>/<profile>/repro.log.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Optional

import typer
from rich.text import Text

from repro.cli.common import (
    DataOpt, DeterministicOpt, DeviceOpt, ExitCode, JobsOpt, ManifestsOpt, ProfileOpt, ProfilesOpt, ResultsOpt,
    UnverifiedOpt, VerboseOpt, WorkersOpt, CommandInterrupted, check_profile, check_results_dir, console, counts_line,
    err, fail, load_every, load_one, print_grid, recording, set_data_env, set_numerics_env, show, write_failed,
)
from repro.core.fsutil import WriteFailed
from repro.cli.execution import with_executor_options
from repro.cli.progress import Reporter
from repro.cli.checklist import verdict_counts, verdicts_grid
from repro.execution.options import ExecutorOptions
from repro.execution.torchrun import TorchrunUsageError, ranks, relaunch
from repro.execution.workers import kept_workers
from repro.plan.manifest import Manifest, manifest_paths
from repro.spec.profiles import default_profile
from repro.results.measurements import default_results_dir
from repro.runtime.interrupt import command_line

LOG_NAME = "repro.log"  # <results>/<profile>/repro.log: every line a table command printed or left behind -v


def _leading(device: str, results_dir: Path, data_dir: Path | None, executor: ExecutorOptions | None):
    """The torchrun context (repro.execution.torchrun): relaunched under torchrun when --gpus-per-run asks."""
    executor = executor or ExecutorOptions()
    code = relaunch(sys.argv[1:], executor.gpus_per_run)
    if code is not None:
        raise typer.Exit(code)
    return ranks(device, results_dir, data_dir, executor.gpus_per_run, executor.executor)


def _reporter(results_dir: Path, profile: str, verbose: bool) -> Reporter:
    return Reporter(console, verbose, results_dir / profile / LOG_NAME, command_line(sys.argv))


def _ranges(tasks: list[int]) -> str:
    """[0, 1, 2, 5] -> '0-2,5'"""
    out, start = [], None
    for i, t in enumerate(tasks):
        start = t if start is None else start
        if i + 1 == len(tasks) or tasks[i + 1] != t + 1:
            out.append(str(start) if start == t else f"{start}-{t}")
            start = None
    return ",".join(out)


def submitted_lines(manifest_id: str, profile: str, submitted: dict[str, str]) -> list[str]:
    """One line per Slurm array job that holds runs of this table, submitted and not awaited (--no-wait)."""
    arrays: dict[str, list[int]] = {}
    for job in submitted.values():
        array, _, task = job.partition("_")
        arrays.setdefault(array, []).extend([int(task)] if task.isdigit() else [])
    lines = []
    for array, tasks in sorted(arrays.items()):
        runs = sum(1 for job in submitted.values() if job.partition("_")[0] == array)
        where = f"Slurm job {array}" + (f", tasks {_ranges(sorted(set(tasks)))}" if tasks else "")
        lines.append(f"{manifest_id}: {runs} run{'' if runs == 1 else 's'} submitted as {where}; follow them with "
                     f"`repro status {manifest_id} --profile {profile}`; rerun this command once they have ended "
                     "to write the table")
    return lines


def _runs(counts) -> str:
    """'24 runs: 20 reused, 4 trained here' (the parts that are not zero)."""
    parts = [(counts.trained, "trained here"), (counts.reused, "reused"), (counts.by_other, "trained by another process")]
    total = sum(n for n, _ in parts)
    return f"{total} run{'' if total == 1 else 's'}: " + ", ".join(f"{n} {what}" for n, what in parts if n)


def _summary(out, seconds: float, brief: bool) -> Text:
    """A table's one line: its claims by verdict, its runs, how long, where its files are (`brief`: the runs
    without the zeros, and not the folder: verify-all's report names it)."""
    parts = [verdict_counts(out.result.verdicts)] if out.result is not None else []
    if out.run_counts is not None:
        parts.append(_runs(out.run_counts) if brief else counts_line(out.run_counts))
    parts.append(f"{seconds:.0f} s" if seconds >= 10 else f"{seconds:.1f} s")
    if out.files and not brief:
        parts.append(f"wrote {out.files[0].parent}/")
    # refused: the data or weights it needs are missing or not the published ones, and nothing was trained
    state = Text("refused: " if out.needs_data else "failed: ", style="bold red") \
        if out.problem and out.result is None else Text("")
    return Text.assemble((out.manifest_id, "bold"), ": ", state, "; ".join(parts))


def _run_all(run, manifests: list[Manifest], reporter: Reporter, announce: bool) -> list:
    """Run the tables with `reporter` as their progress: one summary line per table, warnings kept for last.
    `announce`: a line before each table too, with its estimated cost (`repro run`; verify-all says less)."""
    from repro.cost.wall_time import table_line
    from repro.cost.estimate import CostModel
    from repro.cost.fit import fit_folder

    started = {}
    tables = reporter.add_task("tables", total=len(manifests)) if len(manifests) > 1 else None
    models: dict[str, tuple] = {}

    def start(manifest: Manifest, ctx) -> None:
        reporter.table, started[manifest.id] = manifest.id, time.monotonic()
        if announce:
            kind = "gpu" if ctx.device.startswith("cuda") else "cpu"
            if kind not in models:  # fitted once to the records already here, from the caches (no counting)
                fitted = fit_folder(CostModel(kind=kind, cached_only=True), run.results_dir, manifests)
                models[kind] = (CostModel(kind=kind, fitted=fitted.model.fitted, exact_sizes=bool(fitted.fits)),
                                fitted.rates, frozenset(fitted.times.runs))
            model, rates, recorded = models[kind]
            reporter.say(f"{manifest.id}: {manifest.title} — profile {run.profile}, device {ctx.device}; "
                         f"estimated {table_line(manifest, run.profile, model, rates, recorded)}")

    def done(out) -> None:
        reporter.say(_summary(out, time.monotonic() - started.get(out.manifest_id, time.monotonic()), not announce))
        for line in submitted_lines(out.manifest_id, run.profile, out.submitted):
            reporter.say(line)
        if out.result is not None:
            for problem in out.result.measured.problems:
                reporter.warn("problem", problem)
        if out.needs_data or out.error:
            reporter.warn("error", out.needs_data or out.error, "bold red")
        reporter.end_table()
        if tables is not None:
            reporter.advance(tables)

    run.progress = reporter
    return run.run(manifests, on_start=start, on_done=done)


def _print_claims(results: list, evidence: bool, quiet: bool = False) -> None:
    groups = [(r.manifest_id, r.verdicts) for r in results if r.verdicts]
    notes, grid = verdicts_grid(groups, evidence, quiet)
    if not (notes or grid.rows):
        return
    console.rule("claims")
    for line in notes:
        show(line)
    if grid.rows:
        print_grid(grid)


def _finish(reporter: Reporter, lines: list[str]) -> None:
    """The lines after the tables, into the log too; then the warnings and errors, last."""
    for line in lines:
        reporter.record(line)
        show(line)
    for warning in reporter.warnings:
        show(warning, err)


def _exit_code(outcomes: list) -> int:
    if any(o.needs_data for o in outcomes):
        return ExitCode.BAD_INPUT
    if any(o.problem for o in outcomes):
        return ExitCode.FAILED
    return ExitCode.SUBMITTED if any(o.submitted for o in outcomes) else ExitCode.OK


def run_ids(ids: list[str], profile: str | None, results_dir: Path | None, device: str, jobs: int = 1,
            data_dir: Path | None = None, manifests_dir: Path | None = None, profiles: Path | None = None,
            executor: ExecutorOptions | None = None, verbose: bool = False,
            data_env: tuple[bool, int | None] = (False, None), deterministic: bool = False) -> int:
    profile = profile or default_profile()
    results_dir = results_dir or default_results_dir()
    manifests = [load_one(i, manifests_dir, profiles) for i in ids]
    check_profile(manifests, profile)
    check_results_dir(results_dir, profile, [m.id for m in manifests])
    set_data_env(*data_env)  # after every name is checked: the data layer imports torch
    set_numerics_env(deterministic)
    try:
        with _leading(device, results_dir, data_dir, executor) as leader:
            if not leader:
                return ExitCode.OK
            with recording(f"run {' '.join(ids)}", results_dir, profile), kept_workers():
                return _run_tables(manifests, profile, results_dir, device, jobs, data_dir, executor, verbose)
    except TorchrunUsageError as exc:
        fail(str(exc))


def _run_tables(manifests: list[Manifest], profile: str, results_dir: Path, device: str, jobs: int,
                data_dir: Path | None, executor: ExecutorOptions | None, verbose: bool) -> int:
    from repro.pipeline import TableRun

    run = TableRun(profile, results_dir, device, jobs, data_dir, executor)
    reporter = _reporter(results_dir, profile, verbose)
    try:
        with reporter:
            outcomes = _run_all(run, manifests, reporter, announce=True)
            _print_claims([o.result for o in outcomes if o.result is not None], evidence=True)
            _finish(reporter, [f"log: {reporter.log_path}"])
    except KeyboardInterrupt as exc:
        raise CommandInterrupted(run.current or "run", results_dir, exc) from exc
    except WriteFailed as exc:
        write_failed(exc)
    return _exit_code(outcomes)


@with_executor_options
def run(ids: list[str] = typer.Argument(..., help="Manifest ids, e.g. table6."), profile: Optional[str] = ProfileOpt,
        results_dir: Optional[Path] = ResultsOpt, device: str = DeviceOpt, jobs: int = JobsOpt,
        data_dir: Optional[Path] = DataOpt, manifests: Optional[Path] = ManifestsOpt,
        profiles: Optional[Path] = ProfilesOpt, allow_unverified_data: bool = UnverifiedOpt,
        workers: Optional[int] = WorkersOpt, deterministic: bool = DeterministicOpt, verbose: bool = VerboseOpt,
        executor: ExecutorOptions = None) -> None:
    """Run one or more manifests."""
    raise typer.Exit(run_ids(ids, profile, results_dir, device, jobs, data_dir, manifests, profiles, executor,
                             verbose, (allow_unverified_data, workers), deterministic))


def manifest_command(path: Path):
    """`repro <id>`: the same as `repro run <id>`."""
    @with_executor_options
    def command(profile: Optional[str] = ProfileOpt, results_dir: Optional[Path] = ResultsOpt,
                device: str = DeviceOpt, jobs: int = JobsOpt, data_dir: Optional[Path] = DataOpt,
                manifests: Optional[Path] = ManifestsOpt, profiles: Optional[Path] = ProfilesOpt,
                allow_unverified_data: bool = UnverifiedOpt, workers: Optional[int] = WorkersOpt,
                deterministic: bool = DeterministicOpt, verbose: bool = VerboseOpt,
                executor: ExecutorOptions = None) -> None:
        raise typer.Exit(run_ids([path.stem], profile, results_dir, device, jobs, data_dir, manifests, profiles,
                                 executor, verbose, (allow_unverified_data, workers), deterministic))

    command.__doc__ = f"Run manifests/{path.name} (the same as `repro run {path.stem}`)."
    return command


def register_manifest_commands(app: typer.Typer) -> None:
    for path in manifest_paths():
        app.command(path.stem, rich_help_panel="Paper tables")(manifest_command(path))


@with_executor_options
def verify_all(profile: Optional[str] = ProfileOpt, results_dir: Optional[Path] = ResultsOpt,
               device: str = DeviceOpt, jobs: int = JobsOpt, data_dir: Optional[Path] = DataOpt,
               strict: bool = typer.Option(False, "--strict", help="Also exit 1 when a decidable claim did not reproduce."),
               manifests_dir: Optional[Path] = ManifestsOpt, profiles: Optional[Path] = ProfilesOpt,
               allow_unverified_data: bool = UnverifiedOpt, workers: Optional[int] = WorkersOpt,
               deterministic: bool = DeterministicOpt, verbose: bool = VerboseOpt,
               executor: ExecutorOptions = None) -> None:
    """Every manifest, every FLOP check, every claim: one report and an exit code to trust."""
    profile = profile or default_profile()
    results_dir = results_dir or default_results_dir()
    manifests = load_every(manifests_dir, profiles)
    check_profile(manifests, profile)
    check_results_dir(results_dir, profile, [m.id for m in manifests])
    set_data_env(allow_unverified_data, workers)  # after every name is checked: the data layer imports torch
    set_numerics_env(deterministic)
    try:
        with _leading(device, results_dir, data_dir, executor) as leader:
            if leader:
                with recording("verify-all", results_dir, profile), kept_workers():
                    status = _verify_all(manifests, profile, results_dir, device, jobs, data_dir, strict, executor,
                                         verbose)
                raise typer.Exit(status)
    except TorchrunUsageError as exc:
        fail(str(exc))


def _verify_all(manifests: list[Manifest], profile: str, results_dir: Path, device: str, jobs: int,
                data_dir: Path | None, strict: bool, executor: ExecutorOptions | None, verbose: bool) -> int:
    from repro.claims import decided_results
    from repro.pipeline import TableRun, decidable_not_reproduced, flop_check
    from repro.report.summary import write_report

    run = TableRun(profile, results_dir, device, jobs, data_dir, executor)
    run.current = "verify-all"
    reporter = _reporter(results_dir, profile, verbose)
    try:
        with reporter:
            reporter.say(f"verify-all: {len(manifests)} tables at profile {profile}")
            check = flop_check(manifests, reporter)
            reporter.say(f"FLOP checks: {check.passed} of {len(check.models)} distinct models agree (analytic = "
                         "fvcore = torch/2)")
            for problem in check.problems:
                reporter.warn("FLOP check failed", problem)
            outcomes = _run_all(run, manifests, reporter, announce=False)
            failures = {o.manifest_id: o.problem for o in outcomes if o.problem}
            entries = decided_results(results_dir, profile, manifests)  # every table's claims, Holm over the report
            path, summary = write_report(entries, results_dir, profile, check, failures)
            _print_claims([r for _, r in entries if r], evidence=verbose, quiet=not verbose)
            console.rule("summary")
            _finish(reporter, [*summary["lines"], f"report: {path} (in a browser: {path.with_name('report.html')})",
                               f"log: {reporter.log_path}"])
    except KeyboardInterrupt as exc:
        raise CommandInterrupted(run.current or "verify-all", results_dir, exc) from exc
    except WriteFailed as exc:
        write_failed(exc)
    # A functional profile exists to show that the methods learn: a dense or sparse-MoE row that did not fails it.
    status = ExitCode.FAILED if failures or check.problems or summary.get("learning_failures") else _exit_code(outcomes)
    if strict and decidable_not_reproduced([o.result for o in outcomes if o.result is not None], device):
        status = ExitCode.FAILED
    return status
