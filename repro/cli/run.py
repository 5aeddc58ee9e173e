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

from repro.cli.checklist import verdict_counts, verdicts_grid
from repro.cli.common import (
    ExitCode,
    CommandInterrupted,
    check_profile,
    check_results_dir,
    console,
    counts_line,
    err,
    fail,
    load_some,
    manifests_folder,
    print_grid,
    profiles_file,
    read_files,
    readings_file,
    recording,
    run_defaults,
    settings,
    show,
    write_failed,
)
from repro.cli.execution import (
    ExecutorOpt,
    GpusPerRunOpt,
    NoWaitOpt,
    RunsPerGpuOpt,
    SlurmAccountOpt,
    SlurmCpusPerTaskOpt,
    SlurmGpusPerTaskOpt,
    SlurmMaxParallelOpt,
    SlurmParamOpt,
    SlurmPartitionOpt,
    SlurmRunsPerTaskOpt,
    SlurmTimeOpt,
    StaleLockAfterOpt,
)
from repro.cli.options import (
    DATA,
    DETERMINISTIC,
    DEVICE,
    JOBS,
    MANIFESTS,
    PROFILE,
    PROFILES,
    READINGS,
    RESULTS,
    UNVERIFIED,
    VERBOSE,
    WORKERS,
)
from repro.cli.progress import Reporter
from repro.core.fsutil import WriteFailed
from repro.data.read_options import DataOptions
from repro.execution.options import ExecutorOptions, TableOptions, options_from_cli
from repro.execution.torchrun import TorchrunUsageError, ranks, relaunch
from repro.execution.workers import kept_workers
from repro.plan.table_plan import Plans, plan_all
from repro.runtime.interrupt import command_line

LOG_NAME = "repro.log"  # <results>/<profile>/repro.log: every line a table command printed or left behind -v


def _leading(options: TableOptions):
    """The torchrun context (repro.execution.torchrun): relaunched under torchrun when --gpus-per-run asks."""
    executor = options.executor or ExecutorOptions()
    code = relaunch(sys.argv[1:], executor.gpus_per_run, options.settings)
    if code is not None:
        raise typer.Exit(code)
    return ranks(
        options.device,
        options.results_dir,
        options.data_dir,
        executor.gpus_per_run,
        executor.executor,
        options.settings,
    )


def _reporter(results_dir: Path, profile: str, verbose: bool) -> Reporter:
    return Reporter(console, verbose, results_dir / profile / LOG_NAME, command_line(sys.argv), results_dir)


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
        lines.append(
            f"{manifest_id}: {runs} run{'' if runs == 1 else 's'} submitted as {where}; follow them with "
            f"`repro status {manifest_id} --profile {profile}`; rerun this command once they have ended "
            "to write the table"
        )
    return lines


def _runs(counts) -> str:
    """'24 runs: 20 reused, 3 trained here, 1 failed' (the parts that are not zero)."""
    parts = [
        (counts.trained, "trained here"),
        (counts.reused, "reused"),
        (counts.by_other, "trained by another process"),
        (counts.failed, "failed"),
    ]
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
    state = (
        Text("refused: " if out.needs_data else "failed: ", style="bold red")
        if out.problem and out.result is None
        else Text("")
    )
    return Text.assemble((out.manifest_id, "bold"), ": ", state, "; ".join(parts))


def _run_all(run, plans: Plans, reporter: Reporter, announce: bool) -> list:
    """Run the tables' plans at the command's profile with `reporter` as their progress: one summary line per
    table, warnings kept for last. `announce`: a line before each table too, with its estimated cost (`repro run`;
    verify-all says less)."""
    from repro.cost.estimate import CostModel
    from repro.cost.fit import folder_estimate
    from repro.cost.wall_time import table_line

    started, mine = {}, plans.at(run.options.profile)
    tables = reporter.add_task("tables", total=len(mine)) if len(mine) > 1 else None
    estimates: list = []  # the folder's fit, made once: the estimate `repro list` gives (repro.cost.fit)
    earlier: set[str] = set()  # the runs of the tables this command started before

    def start(plan, ctx) -> None:
        manifest = plan.manifest
        reporter.table, started[manifest.id] = manifest.id, time.monotonic()
        if announce:
            if not estimates:
                estimates.append(folder_estimate(run.options.settings, run.options.results_dir, plans))
            folder = estimates[0]
            recorded = frozenset(folder.times.runs) | frozenset(earlier)
            earlier.update(plan.configs())  # trained before the next table starts
            kind = "gpu" if ctx.device.startswith("cuda") else "cpu"
            try:
                line = table_line(plan, folder.model, folder.rates, recorded, startup=len(mine) == 1)
                if folder.model.device(plan.profile).kind != kind:  # `repro list` prices it on another device
                    here = CostModel.under(
                        run.options.settings,
                        kind=kind,
                        fitted=folder.model.fitted,
                        exact_sizes=folder.model.exact_sizes,
                    )
                    line = (
                        f"{table_line(plan, here, folder.rates, recorded, startup=len(mine) == 1)} on this "
                        f"{kind.upper()}; on a {'GPU' if kind == 'cpu' else 'CPU'} as `repro list` prices it: "
                        f"{line}"
                    )
                price = f"estimated {line}"
            except (RuntimeError, MemoryError):  # a model too large to count here: the table's memory check says so
                price = "not priced: a model of it cannot be counted in this machine's memory"
            reporter.say(
                f"{manifest.id}: {manifest.title} — profile {run.options.profile}, device {ctx.device}; {price}"
            )

    def done(out) -> None:
        reporter.say(_summary(out, time.monotonic() - started.get(out.manifest_id, time.monotonic()), not announce))
        for line in submitted_lines(out.manifest_id, run.options.profile, out.submitted):
            reporter.say(line)
        if out.result is not None:
            for problem in out.result.measured.problems:
                reporter.warn("problem", problem)
        if out.needs_data or out.error:
            reporter.warn("error", out.needs_data or out.error, "bold red")
        reporter.end_table()
        if tables is not None:
            reporter.advance(tables)

    return run.run(mine, on_start=start, on_done=done)


def _print_claims(results: list, evidence: bool, quiet: bool = False, short: bool = False) -> None:
    groups = [(r.manifest_id, r.verdicts) for r in results if r.verdicts]
    notes, grid = verdicts_grid(groups, evidence, quiet, short)
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
    reporter.warnings_shown = True


def decidable_not_reproduced(outcomes: list, device: str) -> tuple[list[str], int]:
    """The claims the profile and device could decide that did not reproduce, and how many they could decide."""
    from repro.pipeline import decidable_claims

    decidable = decidable_claims([o.result for o in outcomes if o.result is not None], device)
    return [claim for claim, status in decidable.items() if status != "reproduced"], len(decidable)


def strict_line(failed: list[str], profile: str, decidable: int) -> str:
    """With --strict, the line that says whether the claims make the command exit 1, and why; `decidable`: how many
    claims the profile and device could decide (none: nothing was checked, which is not 'every claim reproduced')."""
    if not decidable:
        return f"--strict: no claim of these tables is decidable at {profile} here: no exit 1 for the claims"
    if not failed:
        return f"--strict: every claim decidable at {profile} here reproduced ({decidable}): no exit 1 for the claims"
    named = ", ".join(failed[:3]) + (f" and {len(failed) - 3} more" if len(failed) > 3 else "")
    return f"--strict: exit 1: {len(failed)} claim(s) decidable at {profile} here did not reproduce: {named}"


def _exit_code(outcomes: list) -> int:
    if any(o.needs_data for o in outcomes):
        return ExitCode.BAD_INPUT
    if any(o.problem for o in outcomes):
        return ExitCode.FAILED
    return ExitCode.SUBMITTED if any(o.submitted for o in outcomes) else ExitCode.OK


def _check_device(options: TableOptions) -> None:
    """A --device this machine lacks, or torch does not know, is refused before any work (it failed every table
    one by one, and verify-all rewrote report.md with none of them). Only where the runs train here: a Slurm task
    resolves it on its own node, and a login node has no GPU."""
    if options.device == "auto" or (options.executor or ExecutorOptions()).executor != "local":
        return
    from repro.core.devices import DeviceError, resolve_device

    try:
        resolve_device(options.device)
    except DeviceError as exc:
        fail(f"{exc}; nothing was run")


def _start(options: TableOptions) -> None:
    """Before CUDA starts in this process or any it spawns: cuBLAS's fixed workspace, in deterministic mode."""
    if options.defaults.deterministic:
        from repro.runtime.numerics import deterministic_environment

        deterministic_environment()


def _run_tables(plans: Plans, options: TableOptions) -> int:
    from repro.pipeline import TableRun

    reporter = _reporter(options.results_dir, options.profile, options.verbose)
    run = TableRun(options, reporter)
    try:
        with reporter:
            outcomes = _run_all(run, plans, reporter, announce=True)
            _print_claims(
                [o.result for o in outcomes if o.result is not None], evidence=True, short=not options.verbose
            )
            failed, decidable = decidable_not_reproduced(outcomes, options.device)
            strict = [strict_line(failed, options.profile, decidable)] if options.strict else []
            _finish(reporter, [*strict, f"log: {reporter.log_path}"])
    except KeyboardInterrupt as exc:
        raise CommandInterrupted(run.current or "run", options.results_dir, exc) from exc
    except WriteFailed as exc:
        write_failed(exc)
    status = _exit_code(outcomes)
    if options.strict and failed:
        status = ExitCode.FAILED
    return status


def _verify_all(plans: Plans, options: TableOptions) -> int:
    from repro.claims import decided_results
    from repro.cost.estimate import CostModel
    from repro.cost.taken import for_report
    from repro.pipeline import TableRun, flop_check
    from repro.report.summary import write_report
    from repro.results.timings import phase

    manifests = list(plans.manifests)
    reporter = _reporter(options.results_dir, options.profile, options.verbose)
    run = TableRun(options, reporter, current="verify-all")
    try:
        with reporter:
            reporter.say(f"verify-all: {len(manifests)} tables at profile {options.profile}")
            check = flop_check(manifests, reporter, options.settings.cache)
            reporter.say(
                f"FLOP checks: {check.passed} of {len(check.models)} distinct models agree (analytic = "
                "fvcore = torch/2)"
            )
            for problem in check.problems:
                reporter.warn("FLOP check failed", problem)
            outcomes = _run_all(run, plans, reporter, announce=False)
            failures = {o.manifest_id: o.problem for o in outcomes if o.problem}
            with phase("claims"):  # every table's claims, Holm over the report
                entries = decided_results(options.results_dir, options.profile, manifests)
            with phase("report"):  # the caches alone: the report counts nothing
                costs = for_report(
                    options.results_dir, options.profile, plans, CostModel.under(options.settings, cached_only=True)
                )
            written = frozenset(o.manifest_id for o in outcomes if o.files)  # their tables, from these results
            path, summary = write_report(
                entries, options.results_dir, options.profile, costs, check, failures, tables_written=written
            )
            _print_claims([r for _, r in entries if r], evidence=options.verbose, quiet=not options.verbose)
            console.rule("summary")
            failed, decidable = decidable_not_reproduced(outcomes, options.device)
            strict = [strict_line(failed, options.profile, decidable)] if options.strict else []
            _finish(
                reporter,
                [
                    *summary["lines"],
                    *strict,
                    f"report: {path} (in a browser: {path.with_name('report.html')})",
                    f"log: {reporter.log_path}",
                ],
            )
    except KeyboardInterrupt as exc:
        raise CommandInterrupted(run.current or "verify-all", options.results_dir, exc) from exc
    except WriteFailed as exc:
        write_failed(exc)
    # A functional profile exists to show that the methods learn: a dense or sparse-MoE row that did not fails it.
    status = ExitCode.FAILED if failures or check.problems or summary.get("learning_failures") else _exit_code(outcomes)
    if options.strict and failed:
        status = ExitCode.FAILED
    return status


def _trains(plans: Plans, options: TableOptions) -> bool:
    """Whether a planned run of the command has no record yet: then it trains, and torch's import is start-up. A
    command that reuses every run imports torch only where something is counted or timed afresh."""
    from repro.execution.files import record_path

    return any(
        not record_path(options.results_dir, p.cfg).is_file() for plan in plans.at(options.profile) for p in plan.runs
    )


def run_tables(ids: list[str] | None, options: TableOptions, report: bool) -> int:
    """Run the manifests `ids` (every one when None) under `options`; `report`: verify-all's FLOP check of every
    model and report.md over them. Checks every name and folder before any work."""
    manifests = load_some(ids, options.manifests_dir, options.profiles_file, options.defaults, options.readings_file)
    check_profile(manifests, options.profile)
    _check_device(options)
    check_results_dir(options.results_dir, options.profile, [m.id for m in manifests])  # makes the folders
    plans = plan_all(manifests)  # once, before any work: every stage of the command reads them
    _start(options)
    command = "verify-all" if report else f"run {' '.join(ids or [])}"
    try:
        with _leading(options) as leader:
            if not leader:
                return ExitCode.OK
            with (
                recording(
                    command,
                    options.results_dir,
                    options.profile,
                    heavy=_trains(plans, options),
                    reads=read_files(manifests, options.profiles_file),
                ),
                kept_workers(),
            ):
                return (_verify_all if report else _run_tables)(plans, options)
    except TorchrunUsageError as exc:
        fail(str(exc))


# The options of every table command, declared once. `repro run`, `repro verify-all` and `repro <id>` (an alias of
# `repro run <id>`, resolved by the command group: repro.cli._Group) are this one function.
def tables(
    ctx: typer.Context,
    ids: Optional[list[str]] = typer.Argument(
        None, help="Table ids; verify-all: every one by default.", show_default=False
    ),
    profile: Optional[str] = PROFILE,
    results_dir: Optional[Path] = RESULTS,
    device: str = DEVICE,
    jobs: int = JOBS,
    data_dir: Optional[Path] = DATA,
    manifests: Optional[Path] = MANIFESTS,
    profiles: Optional[Path] = PROFILES,
    readings: Optional[Path] = READINGS,
    allow_unverified_data: bool = UNVERIFIED,
    workers: Optional[int] = WORKERS,
    deterministic: bool = DETERMINISTIC,
    strict: bool = typer.Option(False, "--strict", help="Exit 1 also if a decidable claim failed."),
    remeasure_latency: bool = typer.Option(False, "--remeasure-latency", help="Time latency rows again."),
    verbose: bool = VERBOSE,
    executor: str = ExecutorOpt,
    runs_per_gpu: int = RunsPerGpuOpt,
    gpus_per_run: int = GpusPerRunOpt,
    no_wait: bool = NoWaitOpt,
    stale_lock_after: float = StaleLockAfterOpt,
    slurm_partition: Optional[str] = SlurmPartitionOpt,
    slurm_gpus_per_task: Optional[int] = SlurmGpusPerTaskOpt,
    slurm_cpus_per_task: Optional[int] = SlurmCpusPerTaskOpt,
    slurm_time: str = SlurmTimeOpt,
    slurm_max_parallel: int = SlurmMaxParallelOpt,
    slurm_account: Optional[str] = SlurmAccountOpt,
    slurm_runs_per_task: int = SlurmRunsPerTaskOpt,
    slurm_param: list[str] = SlurmParamOpt,
) -> None:
    report = ctx.info_name == "verify-all"
    if not report and not ids:
        fail("name at least one manifest, e.g. `repro run table6`; `repro list` shows them all")
    try:
        execution = options_from_cli(
            executor,
            runs_per_gpu,
            no_wait,
            stale_lock_after,
            slurm_partition,
            slurm_gpus_per_task,
            slurm_cpus_per_task,
            slurm_time,
            slurm_max_parallel,
            slurm_account,
            slurm_runs_per_task,
            slurm_param,
            gpus_per_run,
        )
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None
    own = settings()  # an option the user gave replaces its variable here, once
    options = TableOptions(
        profile=profile or own.profile,
        results_dir=results_dir or own.results,
        device=device,
        jobs=jobs,
        data_dir=data_dir or own.data,
        manifests_dir=manifests_folder(manifests),
        profiles_file=profiles_file(profiles),
        readings_file=readings_file(readings),
        data=DataOptions(allow_unverified_data, workers),
        defaults=run_defaults(deterministic),
        executor=execution,
        verbose=verbose,
        strict=strict,
        remeasure_latency=remeasure_latency,
        settings=own,
    )
    raise typer.Exit(run_tables(ids, options, report))


RUN_HELP = "Run one or more manifests: FLOPs, training runs, claims, tables."
VERIFY_ALL_HELP = "Every table, FLOP check and claim: one report and an exit code to trust."
