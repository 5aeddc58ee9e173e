"""The commands that run tables: `repro run ID...`, `repro <id>` for every manifest, `repro verify-all`."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer
from rich.markup import escape

from repro.cli.common import (
    DataOpt, DeviceOpt, JobsOpt, ManifestsOpt, ProfileOpt, ProfilesOpt, ResultsOpt, UnverifiedOpt, WorkersOpt,
    check_profile, check_results_dir, console, counts_line, err, fail, interrupted, load_every, load_one,
    print_verdicts, progress_bar, set_data_env,
)
from repro.cli.execution import with_executor_options
from repro.execution.options import ExecutorOptions
from repro.execution.torchrun import TorchrunUsageError, ranks, relaunch
from repro.manifest import Manifest, manifest_paths
from repro.profiles import default_profile
from repro.results import default_results_dir, load_result
from repro.runtime.interrupt import sigterm_as_interrupt


def _leading(device: str, results_dir: Path, data_dir: Path | None, executor: ExecutorOptions | None):
    """The torchrun context (repro.execution.torchrun): relaunched under torchrun when --gpus-per-run asks."""
    executor = executor or ExecutorOptions()
    code = relaunch(sys.argv[1:], executor.gpus_per_run)
    if code is not None:
        raise typer.Exit(code)
    return ranks(device, results_dir, data_dir, executor.gpus_per_run, executor.executor)


def run_ids(ids: list[str], profile: str | None, results_dir: Path | None, device: str, jobs: int = 1,
            data_dir: Path | None = None, manifests_dir: Path | None = None, profiles: Path | None = None,
            executor: ExecutorOptions | None = None) -> int:
    profile = profile or default_profile()
    results_dir = results_dir or default_results_dir()
    manifests = [load_one(i, manifests_dir, profiles) for i in ids]
    check_profile(manifests, profile)
    check_results_dir(results_dir)
    try:
        with _leading(device, results_dir, data_dir, executor) as leader:
            return _run_tables(manifests, profile, results_dir, device, jobs, data_dir, executor) if leader else 0
    except TorchrunUsageError as exc:
        fail(str(exc))


def _run_tables(manifests: list[Manifest], profile: str, results_dir: Path, device: str, jobs: int,
                data_dir: Path | None, executor: ExecutorOptions | None) -> int:
    from repro.cost.command import table_line
    from repro.cost.estimate import CostModel
    from repro.cost.fit import fit_folder
    from repro.pipeline import TableRun

    models: dict[str, tuple] = {}

    def start(manifest: Manifest, ctx) -> None:
        kind = "gpu" if ctx.device.startswith("cuda") else "cpu"
        if kind not in models:  # fitted once to the records already here, from the caches (no counting)
            fitted = fit_folder(CostModel(kind=kind, cached_only=True), results_dir, manifests)
            models[kind] = (CostModel(kind=kind, fitted=fitted.model.fitted, exact_sizes=bool(fitted.fits)),
                            fitted.rates, frozenset(fitted.times.runs))
        model, rates, recorded = models[kind]
        cost = table_line(manifest, profile, model, rates, recorded)
        console.print(f"[bold]{manifest.id}[/]: {escape(manifest.title)} — profile [cyan]{escape(profile)}[/], "
                      f"device {ctx.device}; estimated {escape(cost)}")

    def done(out) -> None:
        if out.result is not None:
            print_verdicts(out.result.verdicts)
            for problem in out.result.measured.problems:
                err.print(f"[red]problem:[/] {escape(problem)}", highlight=False)
            console.print("wrote " + ", ".join(str(f) for f in out.files), markup=False)
            console.print(counts_line(out.run_counts), markup=False)
        elif out.needs_data or out.error:
            err.print(f"[bold red]error:[/] {escape(out.needs_data or out.error)}", highlight=False)

    run = TableRun(profile, results_dir, device, jobs, data_dir, executor)
    try:
        with sigterm_as_interrupt(), progress_bar() as progress:
            run.progress = progress
            outcomes = run.run(manifests, on_start=start, on_done=done)
    except KeyboardInterrupt as exc:
        interrupted(run.current or "run", exc, results_dir)
    if any(o.needs_data for o in outcomes):
        return 2
    return 1 if any(o.problem for o in outcomes) else 0


@with_executor_options
def run(ids: list[str] = typer.Argument(..., help="Manifest ids, e.g. table6."), profile: Optional[str] = ProfileOpt,
        results_dir: Optional[Path] = ResultsOpt, device: str = DeviceOpt, jobs: int = JobsOpt,
        data_dir: Optional[Path] = DataOpt, manifests: Optional[Path] = ManifestsOpt,
        profiles: Optional[Path] = ProfilesOpt, allow_unverified_data: bool = UnverifiedOpt,
        workers: Optional[int] = WorkersOpt, executor: ExecutorOptions = None) -> None:
    """Run one or more manifests."""
    set_data_env(allow_unverified_data, workers)
    raise typer.Exit(run_ids(ids, profile, results_dir, device, jobs, data_dir, manifests, profiles, executor))


def manifest_command(path: Path):
    """`repro <id>`: the same as `repro run <id>`."""
    @with_executor_options
    def command(profile: Optional[str] = ProfileOpt, results_dir: Optional[Path] = ResultsOpt,
                device: str = DeviceOpt, jobs: int = JobsOpt, data_dir: Optional[Path] = DataOpt,
                manifests: Optional[Path] = ManifestsOpt, profiles: Optional[Path] = ProfilesOpt,
                allow_unverified_data: bool = UnverifiedOpt, workers: Optional[int] = WorkersOpt,
                executor: ExecutorOptions = None) -> None:
        set_data_env(allow_unverified_data, workers)
        raise typer.Exit(run_ids([path.stem], profile, results_dir, device, jobs, data_dir, manifests, profiles,
                                 executor))

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
               executor: ExecutorOptions = None) -> None:
    """Every manifest, every FLOP check, every claim: one report and an exit code to trust."""
    set_data_env(allow_unverified_data, workers)
    profile = profile or default_profile()
    results_dir = results_dir or default_results_dir()
    manifests = load_every(manifests_dir, profiles)
    check_profile(manifests, profile)
    check_results_dir(results_dir)
    try:
        with _leading(device, results_dir, data_dir, executor) as leader:
            if leader:
                _verify_all(manifests, profile, results_dir, device, jobs, data_dir, strict, executor)
    except TorchrunUsageError as exc:
        fail(str(exc))


def _verify_all(manifests: list[Manifest], profile: str, results_dir: Path, device: str, jobs: int,
                data_dir: Path | None, strict: bool, executor: ExecutorOptions | None) -> None:
    from repro.pipeline import TableRun, decidable_not_reproduced, flop_check
    from repro.report.summary import write_report

    run = TableRun(profile, results_dir, device, jobs, data_dir, executor)
    try:
        with sigterm_as_interrupt(), progress_bar() as progress:
            run.progress = progress
            run.current = "verify-all"
            check = flop_check(manifests, progress)
            task = progress.add_task(f"manifests ({profile})", total=len(manifests))

            def start(manifest: Manifest, ctx) -> None:
                progress.update(task, description=f"{manifest.id} ({profile})")

            def done(out) -> None:
                if out.result is not None:
                    progress.log(escape(f"{out.manifest_id}: {counts_line(out.run_counts)}"))
                progress.advance(task)

            outcomes = run.run(manifests, on_start=start, on_done=done)
    except KeyboardInterrupt as exc:
        interrupted(run.current or "verify-all", exc, results_dir)
    failures = {o.manifest_id: o.problem for o in outcomes if o.problem}
    path, summary = write_report(results_dir, profile, manifests, check, failures)
    print_verdicts([v for m in manifests if (r := load_result(results_dir, profile, m.id)) for v in r.verdicts])
    console.rule("summary")
    for line in summary["lines"]:
        console.print(line, markup=False)
    console.print(f"report: {path}", markup=False)
    # A functional profile exists to show that the methods learn: a dense or sparse-MoE row that did not fails it.
    status = 1 if failures or check.problems or summary.get("learning_failures") else 0
    if strict and decidable_not_reproduced([o.result for o in outcomes if o.result is not None], device):
        status = 1
    raise typer.Exit(status)
