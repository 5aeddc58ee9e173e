"""The `repro` command line: one command per manifest, FLOP checks, reports, verify-all."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.progress import (
    BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn,
)
from rich.markup import escape
from rich.table import Table

from repro.execution.interrupt import sigterm_as_interrupt
from repro.execution.options import ExecutorOptions, with_executor_options
from repro.manifest import (
    Manifest, default_profile, find_manifest, load_all, load_manifest, manifest_paths, user_profiles,
)
from repro.results import FlopCheck, default_results_dir, load_result
from repro.schema import SchemaError

# Heavy modules (torch through the models, matplotlib through the report) are imported inside the
# commands that need them, so `repro --help` and `repro report` start in well under a second.


def _flags_show_no_type() -> None:
    """A flag takes no value, so its help shows no type: as Typer's plain help does and its rich help did
    before 0.29, whose rich panel prints one beside every option ("--help  <bool>  Show this message")."""
    option = typer.core.TyperOption
    shown = getattr(option, "display_type_rich", None)  # absent before Typer 0.29: nothing to change
    if shown is None or getattr(shown, "flags_show_no_type", False):
        return

    def display_type_rich(self, ctx):
        return None if self.is_flag or self.count else shown(self, ctx)

    display_type_rich.flags_show_no_type = True
    option.display_type_rich = display_type_rich


_flags_show_no_type()
app = typer.Typer(
    help="Reproduce arXiv 2605.15484: run a paper table's manifest, check FLOPs, decide claims, render reports.",
    no_args_is_help=True, add_completion=False, rich_markup_mode="rich",
)
console = Console()
err = Console(stderr=True, soft_wrap=True)  # messages verbatim: paths and commands are not wrapped

ProfileOpt = typer.Option(None, "--profile", "-p", help="Profile to run: smoke (CPU, minutes) or full (the paper's protocol). Default: $REPRO_PROFILE or smoke.")
ResultsOpt = typer.Option(None, "--results-dir", "-o", help="Where results go. Default: $REPRO_RESULTS or ./results.")
DeviceOpt = typer.Option("auto", "--device", help="auto, cpu or cuda.")
JobsOpt = typer.Option(0, "--jobs", "-j", min=0, help="Runs trained in parallel processes; 0: one per CPU core on a CPU, 1 on a GPU.")
DataOpt = typer.Option(None, "--data-dir", help="Dataset root. Default: $REPRO_DATA or ./data.")
UnverifiedOpt = typer.Option(False, "--allow-unverified-data",
                             help="Train on dataset files that fail their published checksum (a re-packed copy); "
                                  "every run record and the report say so.")
WorkersOpt = typer.Option(None, "--workers", min=0, help="Loader worker processes per split for image folders "
                          "(ImageNet). Default: the CPUs this process may use, minus one.")
ManifestsOpt = typer.Option(None, "--manifests", help="Folder of manifests. "
                            "Default: $REPRO_MANIFESTS or the package's manifests/.")
ProfilesOpt = typer.Option(None, "--profiles", help="TOML file of profiles (tables named profiles.<name>) added to "
                           "every manifest, replacing one of the same name. Default: $REPRO_PROFILES, else none.")


def _progress() -> Progress:
    return Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TimeElapsedColumn(), TextColumn("eta"), TimeRemainingColumn(), console=console, transient=False)


def _fail(message: str, code: int = 2) -> None:
    err.print(f"[bold red]error:[/] {escape(message)}", highlight=False)
    raise typer.Exit(code)


def _message(exc: BaseException) -> str:
    """An exception's text as written (KeyError's str() adds quotes around it)."""
    return str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc)


def _load(manifest_id: str, manifests: Path | None = None, profiles: Path | None = None) -> Manifest:
    try:
        return find_manifest(manifest_id, manifests, profiles)
    except (KeyError, SchemaError) as exc:
        _fail(_message(exc))


def _run_ids(ids: list[str], profile: str | None, results_dir: Path | None, device: str, jobs: int = 1,
             data_dir: Path | None = None, manifests_dir: Path | None = None, profiles: Path | None = None,
             executor: ExecutorOptions | None = None) -> int:
    profile = profile or default_profile()
    results_dir = results_dir or default_results_dir()
    manifests = [_load(i, manifests_dir, profiles) for i in ids]
    _check_results_dir(results_dir)
    with _ranks(device, results_dir, data_dir, executor) as leader:
        return _run_manifests(manifests, profile, results_dir, device, jobs, data_dir, executor) if leader else 0


def _run_manifests(manifests: list[Manifest], profile: str, results_dir: Path, device: str, jobs: int,
                   data_dir: Path | None, executor: ExecutorOptions | None) -> int:
    from repro.data.layout import DatasetMissing
    from repro.cost.estimate import CostModel, estimate
    from repro.pipeline import execute, make_context
    from repro.weights import WeightsMissing

    status = 0
    for manifest in manifests:
        try:
            ctx = make_context(manifest, profile, results_dir, device, jobs=jobs, data_dir=data_dir, executor=executor)
        except (KeyError, RuntimeError) as exc:
            _fail(_message(exc))
        cost = estimate(manifest, profile, CostModel(kind="gpu" if ctx.device.startswith("cuda") else "cpu"))
        console.print(f"[bold]{manifest.id}[/]: {escape(manifest.title)} — profile [cyan]{escape(profile)}[/], "
                      f"device {ctx.device}; estimated {escape(cost)}")
        try:
            with sigterm_as_interrupt(), _progress() as progress:
                ctx.progress = progress
                result, files = execute(manifest, ctx)
        except (DatasetMissing, WeightsMissing) as exc:
            _fail(f"{manifest.id} needs data that is not here; nothing was trained.\n{exc}")
        except KeyboardInterrupt as exc:
            _interrupted(manifest.id, exc, results_dir)
        _print_verdicts(result.verdicts)
        for problem in result.measured.problems:
            err.print(f"[red]problem:[/] {escape(problem)}", highlight=False)
        console.print("wrote " + ", ".join(str(f) for f in files), markup=False)
        console.print(_counts_line(ctx), markup=False)
        status |= 0 if result.ok else 1
    return status


def _interrupted(manifest_id: str, exc: KeyboardInterrupt, results_dir: Path) -> None:
    """Ctrl-C or SIGTERM: release this process's locks, say what was kept and how to resume; exit 130."""
    import sys

    from repro.execution.interrupt import RunsInterrupted, command_line, release_own_locks
    from repro.execution.records import runs_dir

    release_own_locks(runs_dir(results_dir))

    command = command_line(sys.argv)
    if isinstance(exc, RunsInterrupted):
        message = f"{manifest_id} {exc.message(command)}"
    else:  # outside training (FLOP counts, tables): every finished record is on disk
        message = f"{manifest_id} interrupted; every finished run record is kept; rerun `{command}` to resume"
    err.print(f"[bold yellow]{escape(message)}[/]", highlight=False)
    raise typer.Exit(130)


def _data_env(allow_unverified: bool, workers: int | None) -> None:
    """Data options reach every run, in this process, its workers and Slurm tasks, through the environment."""
    from repro.data.check import ALLOW_UNVERIFIED_ENV, WORKERS_ENV

    if allow_unverified:
        os.environ[ALLOW_UNVERIFIED_ENV] = "1"
    if workers is not None:
        os.environ[WORKERS_ENV] = str(workers)


@contextlib.contextmanager
def _ranks(device: str, results_dir: Path, data_dir: Path | None, executor: ExecutorOptions | None):
    """Under torchrun (one run on N processes, repro.execution.distributed): rank 0 leads (yields True) and releases
    the others at the end; a rank > 0 trains the runs rank 0 announces, then yields False. Else True.
    With --gpus-per-run N outside torchrun: runs this command under torchrun and exits with its status."""
    gpus = executor.gpus_per_run if executor is not None else 1
    if os.environ.get("WORLD_SIZE", "1") == "1" and gpus > 1:
        import subprocess
        import sys

        from repro.execution.distributed import torchrun_command

        raise typer.Exit(subprocess.call(torchrun_command(sys.argv[1:], gpus)))
    if os.environ.get("WORLD_SIZE", "1") == "1":
        yield True
        return
    from repro.execution import distributed
    from repro.devices import resolve_device

    if gpus not in (1, int(os.environ["WORLD_SIZE"])):
        _fail(f"--gpus-per-run {gpus} under torchrun with {os.environ['WORLD_SIZE']} processes: give one of them")
    if executor is not None and executor.executor != "local":
        _fail(f"under torchrun each run trains on the launched processes; --executor {executor.executor} "
              f"does not apply (use the local executor, or run torchrun inside the Slurm job)")
    device = resolve_device(device)
    world = distributed.init(device)
    if not world.main:
        from repro.execution.records import follow_runs

        follow_runs(results_dir, device, data_dir)
        distributed.finish()
        yield False
        return
    with distributed.leading():
        yield True
    distributed.finish()


def _counts_line(ctx) -> str:
    from repro.execution.runs import RunCounts

    return (ctx.run_counts or RunCounts()).line()


def _print_verdicts(verdicts) -> None:
    colours = {"reproduced": "green", "not reproduced": "red", "inconclusive": "yellow", "not run": "dim"}
    table = Table("Claim", "Verdict", "Evidence", show_lines=False)
    for v in verdicts:
        table.add_row(v.claim, f"[{colours[v.status]}]{v.status}[/]", escape(v.evidence + (f" — {v.note}" if v.note else "")))
    if verdicts:
        console.print(table)


ExecutorOpt = typer.Option("local", "--executor", help="local or slurm: how the runs would be spread (wall time).")
GpusOpt = typer.Option(1, "--gpus", min=1, help="GPUs the local executor spreads runs over.")
RunsPerGpuOpt = typer.Option(1, "--runs-per-gpu", min=1, help="Runs sharing one GPU under the local executor.")
SlurmParallelOpt = typer.Option(0, "--slurm-max-parallel", min=0, help="Slurm array tasks at once; 0: no limit.")
CalibrationOpt = typer.Option(None, "--calibration", help="GPU calibration JSON from `repro bench gpu` (default: $REPRO_GPU_CALIBRATION); without it, GPU figures are a reference, not measured.")
ReferenceGpuOpt = typer.Option(None, "--reference-gpu", help="The GPU of the reference figures: A100 (default), H100, H200, L40S, L4, A10, V100; default: this host's GPU if it has one.")


def _cost_model(executor: str, gpus: int, runs_per_gpu: int, slurm_max_parallel: int, data_dir: Path | None,
                calibration: Path | None, reference_gpu: str | None):
    from repro.cost.estimate import CostModel, Executor

    try:
        return CostModel(Executor(executor, gpus, runs_per_gpu, slurm_max_parallel), data_dir, calibration, reference_gpu)
    except ValueError as exc:
        _fail(str(exc))


def _manifests_with(manifests_dir: Path | None, profiles: Path | None) -> tuple[list[Manifest], dict[str, str]]:
    """Every valid manifest (with the profiles file's profiles added) and, by id, why the others are invalid."""
    extra = _user_profiles(profiles)
    manifests, invalid = [], {}
    for path in manifest_paths(manifests_dir):
        try:
            manifests.append(load_manifest(path, extra))
        except SchemaError as exc:
            invalid[path.stem] = exc.problems[0]
    return manifests, invalid


@app.command("list")
def list_manifests(executor: str = ExecutorOpt, gpus: int = GpusOpt, runs_per_gpu: int = RunsPerGpuOpt,
                   slurm_max_parallel: int = SlurmParallelOpt, manifests_dir: Optional[Path] = ManifestsOpt,
                   profiles: Optional[Path] = ProfilesOpt, data_dir: Optional[Path] = DataOpt,
                   calibration: Optional[Path] = CalibrationOpt, reference_gpu: Optional[str] = ReferenceGpuOpt) -> None:
    """Manifests, what each reproduces, and what each profile costs: runs, epochs, device-hours, wall time."""
    from repro.cost.tables import list_table, unknown_includes

    model = _cost_model(executor, gpus, runs_per_gpu, slurm_max_parallel, data_dir, calibration, reference_gpu)
    manifests, invalid = _manifests_with(manifests_dir, profiles)
    for problem in unknown_includes(manifests):
        err.print(f"[yellow]warning:[/] {escape(str(profiles))}: {escape(problem)}", highlight=False)
    table, totals, sources = list_table(manifests, model, invalid)
    console.print(table)
    console.print(totals)
    console.print(f"[dim]Device-h: GPU-hours for profiles that run on a GPU, CPU-hours for those pinned to the CPU; "
                  f"wall time on {escape(model.executor.describe('gpu'))} (CPU profiles: this CPU). A run shared by rows "
                  "or tables counts once; runs already recorded are not counted out. Figures from:[/]")
    for source in sorted(sources):
        console.print(f"[dim]  {escape(source)}[/]", highlight=False)


@app.command("plan")
def plan(ids: list[str] = typer.Argument(None, help="Manifest ids (default: all)."),
         gpu_hours: float = typer.Option(..., "--gpu-hours", min=0.0, help="The GPU budget the plan must fit."),
         gpus: int = GpusOpt, runs_per_gpu: int = RunsPerGpuOpt, executor: str = ExecutorOpt,
         slurm_max_parallel: int = SlurmParallelOpt,
         out: Optional[Path] = typer.Option(None, "--out", help="Write the plan's profiles file here (TOML)."),
         data_dir: Optional[Path] = DataOpt, calibration: Optional[Path] = CalibrationOpt,
         reference_gpu: Optional[str] = ReferenceGpuOpt, manifests_dir: Optional[Path] = ManifestsOpt) -> None:
    """Per empirical claim: rows, seeds for 80% power, runs and GPU-hours; the claims a budget decides, as profiles."""
    from repro.cost.tables import needs_table
    from repro.cost.estimate import duration, hours
    from repro.cost.plan import claim_needs, make_plan, protocol_cost, write_plan

    model = _cost_model(executor, gpus, runs_per_gpu, slurm_max_parallel, data_dir, calibration, reference_gpu)
    manifests = [_load(i, manifests_dir) for i in ids] if ids else _load_all(manifests_dir)
    needs = claim_needs(manifests, model)
    result = make_plan(needs, gpu_hours, model)
    console.print(needs_table(needs, result))
    whole = protocol_cost(needs)
    console.print(f"plan: {len(result.chosen)} claims (weight {result.weight:g} of "
                  f"{sum(n.weight for n in needs if not n.problem):g}), {result.runs} distinct runs, "
                  f"{hours(result.gpu_seconds)} of {gpu_hours:g} GPU-hours, wall {duration(result.wall_seconds)} on "
                  f"{model.executor.describe('gpu')}; every plannable claim: {hours(whole.device_seconds)} GPU-hours, "
                  f"{whole.runs} runs", markup=False)
    for source in result.sources:
        console.print(f"[dim]GPU figures: {escape(source)}[/]", highlight=False)
    if out is not None:
        profiles = write_plan(out, result, manifests)
        console.print(f"wrote {out}: profiles {', '.join(profiles) or '(none: nothing fits)'}", markup=False)
        for name in profiles:
            console.print(f"  repro verify-all --profiles {out} --profile {name}", markup=False)


@app.command("run")
@with_executor_options
def run(ids: list[str] = typer.Argument(..., help="Manifest ids, e.g. table6."), profile: Optional[str] = ProfileOpt,
        results_dir: Optional[Path] = ResultsOpt, device: str = DeviceOpt, jobs: int = JobsOpt,
        data_dir: Optional[Path] = DataOpt, manifests: Optional[Path] = ManifestsOpt,
        profiles: Optional[Path] = ProfilesOpt, allow_unverified_data: bool = UnverifiedOpt,
        workers: Optional[int] = WorkersOpt, executor: ExecutorOptions = None) -> None:
    """Run one or more manifests."""
    _data_env(allow_unverified_data, workers)
    raise typer.Exit(_run_ids(ids, profile, results_dir, device, jobs, data_dir, manifests, profiles, executor))


@app.command("flops")
def flops(ids: list[str] = typer.Argument(None, help="Manifest ids (default: all)."),
          verbose: bool = typer.Option(False, "--verbose", "-v", help="Show every module's three counts."),
          manifests_dir: Optional[Path] = ManifestsOpt) -> None:
    """Count FLOPs of every row three ways (analytic, fvcore, torch/2); exit 1 on any disagreement."""
    from repro.pipeline import flop_check

    manifests = [_load(i, manifests_dir) for i in ids] if ids else _load_all(manifests_dir)
    with _progress() as progress:
        check = flop_check(manifests, progress)
    _print_flops(manifests, check, verbose)
    if check.problems:
        for p in check.problems:
            err.print(f"[red]FLOP check failed:[/] {escape(p)}", highlight=False)
        raise typer.Exit(1)
    console.print(f"[green]all {len(check.models)} models: analytic = fvcore = torch/2 for every module[/]")


def _print_flops(manifests: list[Manifest], check: FlopCheck, verbose: bool) -> None:
    from repro.measure.flops import row_flops

    by_id = {m.id: m for m in manifests}
    table = Table("Manifest/row", "Total MMAC", "Routed MMAC", "ρ", "ρ all ops", "Modules", "Agree")
    for manifest_id, row_id in check.models:
        row = by_id[manifest_id].row(row_id)
        r = row_flops(row)
        table.add_row(f"{manifest_id}/{row_id}", f"{r.total / 1e6:,.3f}", f"{r.routed / 1e6:,.3f}", f"{r.rho:.4%}",
                      f"{r.rho_all_ops:.4%}", str(len(r.modules)), "[green]yes[/]" if r.ok else "[red]NO[/]")
        if verbose:
            for mc in r.modules:
                table.add_row(f"  [dim]{mc.name or '<model>'} ({mc.kind})[/]", f"{mc.analytic / 1e6:,.6f}",
                              f"fvcore {mc.fvcore / 1e6:,.6f}", f"torch/2 {mc.torch / 2e6:,.6f}", "", "",
                              "yes" if mc.agrees else "[red]NO[/]")
    console.print(table)


@app.command("data")
def data(data_dir: Optional[Path] = DataOpt, manifests_dir: Optional[Path] = ManifestsOpt) -> None:
    """Which datasets and pretrained weights are present, where, and what each manifest still needs."""
    from repro.data.layout import data_root, data_status
    from repro.weights import WEIGHTS, weights_status

    manifests = _load_all(manifests_dir)
    statuses = {s.name: s for s in data_status(data_dir)}
    table = Table("Dataset", "Status", "Path", "Needed by (full profile)")
    for name, s in statuses.items():
        users = [m.id for m in manifests if any(r.dataset == name and "accuracy" in r.measures for r in m.rows)]
        state = "[green]present[/]" if s.present else "[red]missing[/]: " + escape(", ".join(s.missing[:3]))
        table.add_row(s.title, state, escape(str(s.path)), ", ".join(users))
    files: dict[str, tuple[object, list[str]]] = {}  # one weights file can serve several backbones
    for backbone in sorted(WEIGHTS):
        w = weights_status(backbone)
        files.setdefault(w.file_name, (w, []))[1].append(backbone)
    for w, backbones in files.values():
        users = [m.id for m in manifests if any(r.backbone.name in backbones and "accuracy" in r.measures for r in m.rows)]
        state = ("[green]present[/]" if w.present else f"[red]refused[/]: {escape(w.problem)}" if w.found
                 else "[red]missing[/]")
        table.add_row(f"{', '.join(backbones)} weights", state, escape(str(w.path)), ", ".join(users))
    console.print(f"data root: {data_root(data_dir).absolute()}", markup=False)
    console.print(table)
    for s in statuses.values():
        if not s.present:
            console.print(f"[dim]{escape(f'{s.title}: {s.how_to_fill}')}[/]", highlight=False)
    console.print("[dim]The smoke profiles use synthetic data and random weights: they need none of these.[/]")


@app.command("report")
def report(results_dir: Optional[Path] = ResultsOpt, manifests_dir: Optional[Path] = ManifestsOpt,
           profiles: Optional[Path] = ProfilesOpt,
           profile: Optional[str] = typer.Option(None, "--profile", "-p", help="Only this profile's report. Default: every profile with results.")) -> None:
    """Re-render <results>/<profile>/report.md from whatever results the directory holds."""
    from repro.report.summary import write_report
    from repro.results import profiles_present

    results_dir = results_dir or default_results_dir()
    manifests = _load_all(manifests_dir, profiles)  # bad input is reported before anything else
    names = [profile] if profile else profiles_present(results_dir)
    _check_results_dir(results_dir)
    if not names:
        _fail(f"no results in {results_dir}: run a table or `repro verify-all` first")
    for name in names:
        path, summary = write_report(results_dir, name, manifests)
        console.rule(name)
        for line in summary["lines"]:
            console.print(line, markup=False)
        console.print(f"wrote {path}", markup=False)


@app.command("verify-all")
@with_executor_options
def verify_all(profile: Optional[str] = ProfileOpt, results_dir: Optional[Path] = ResultsOpt,
               device: str = DeviceOpt, jobs: int = JobsOpt, data_dir: Optional[Path] = DataOpt,
               strict: bool = typer.Option(False, "--strict", help="Also exit 1 when a decidable claim did not reproduce."),
               manifests_dir: Optional[Path] = ManifestsOpt, profiles: Optional[Path] = ProfilesOpt,
               allow_unverified_data: bool = UnverifiedOpt, workers: Optional[int] = WorkersOpt,
               executor: ExecutorOptions = None) -> None:
    """Every manifest, every FLOP check, every claim: one report and an exit code to trust."""
    _data_env(allow_unverified_data, workers)
    profile = profile or default_profile()
    results_dir = results_dir or default_results_dir()
    manifests = _load_all(manifests_dir, profiles)
    _check_results_dir(results_dir)
    with _ranks(device, results_dir, data_dir, executor) as leader:
        if leader:
            _verify_all(manifests, profile, results_dir, device, jobs, data_dir, strict, executor)


def _verify_all(manifests: list[Manifest], profile: str, results_dir: Path, device: str, jobs: int,
                data_dir: Path | None, strict: bool, executor: ExecutorOptions | None) -> None:
    from repro.pipeline import describe_exception, execute, flop_check, make_context
    from repro.report.summary import write_report

    failures: dict[str, str] = {}
    current = "verify-all"
    try:
        with sigterm_as_interrupt(), _progress() as progress:
            check = flop_check(manifests, progress)
            task = progress.add_task(f"manifests ({profile})", total=len(manifests))
            for manifest in manifests:
                current = manifest.id
                progress.update(task, description=f"{manifest.id} ({profile})")
                try:
                    ctx = make_context(manifest, profile, results_dir, device, jobs=jobs, data_dir=data_dir,
                                       executor=executor)
                    ctx.progress = progress
                    result, _ = execute(manifest, ctx)
                    progress.log(escape(f"{manifest.id}: {_counts_line(ctx)}"))
                    if not result.ok:
                        failures[manifest.id] = f"{len(result.measured.problems)} problem(s), first: {result.measured.problems[0]}"
                except Exception as exc:  # one broken table must not hide the others
                    failures[manifest.id] = describe_exception(exc)
                progress.advance(task)
    except KeyboardInterrupt as exc:
        _interrupted(current, exc, results_dir)
    path, summary = write_report(results_dir, profile, manifests, check, failures)
    _print_checklist(results_dir, profile, manifests)
    console.rule("summary")
    for line in summary["lines"]:
        console.print(line, markup=False)
    console.print(f"report: {path}", markup=False)
    # A functional profile exists to show that the methods learn: a dense or sparse-MoE row that did not fails it.
    status = 1 if failures or check.problems or summary.get("learning_failures") else 0
    if strict and _undecided_or_failed(results_dir, profile, manifests, device):
        status = 1
    raise typer.Exit(status)


def _print_checklist(results_dir: Path, profile: str, manifests: list[Manifest]) -> None:
    verdicts = [v for m in manifests if (r := load_result(results_dir, profile, m.id)) for v in r.verdicts]
    _print_verdicts(verdicts)


def _undecided_or_failed(results_dir: Path, profile: str, manifests: list[Manifest], device: str) -> bool:
    """--strict: a claim this profile and device could decide that did not come out reproduced."""
    for m in manifests:
        result = load_result(results_dir, profile, m.id)
        kind = result.profile_settings.get("evidence", "pipeline") if result else "pipeline"
        for v in result.verdicts if result else []:
            undecidable = (v.scope != "analytic" and kind not in ("reduced", "paper")) or (
                v.scope == "gpu" and not device.startswith("cuda"))
            if v.status != "reproduced" and not (v.status == "not run" and undecidable):
                return True
    return False


def _check_results_dir(results_dir: Path) -> None:
    from repro.results import ResultsDirError, check_results_dir

    try:
        check_results_dir(results_dir)
    except ResultsDirError as exc:
        _fail(f"{exc}; nothing was run")


def _load_all(manifests: Path | None = None, profiles: Path | None = None) -> list[Manifest]:
    try:
        return load_all(manifests, profiles)
    except SchemaError as exc:
        _fail(str(exc))


def _user_profiles(profiles: Path | None) -> dict:
    try:
        return user_profiles(profiles)
    except SchemaError as exc:
        _fail(str(exc))


def _register_manifest_commands() -> None:
    """`repro <id>` for every manifest file: the same as `repro run <id>`."""
    for path in manifest_paths():
        app.command(path.stem, rich_help_panel="Paper tables")(_manifest_command(path))


def _manifest_command(path: Path):
    @with_executor_options
    def command(profile: Optional[str] = ProfileOpt, results_dir: Optional[Path] = ResultsOpt,
                device: str = DeviceOpt, jobs: int = JobsOpt, data_dir: Optional[Path] = DataOpt,
                manifests: Optional[Path] = ManifestsOpt, profiles: Optional[Path] = ProfilesOpt,
                allow_unverified_data: bool = UnverifiedOpt, workers: Optional[int] = WorkersOpt,
                executor: ExecutorOptions = None) -> None:
        _data_env(allow_unverified_data, workers)
        raise typer.Exit(_run_ids([path.stem], profile, results_dir, device, jobs, data_dir, manifests, profiles,
                                  executor))

    command.__doc__ = f"Run manifests/{path.name} (the same as `repro run {path.stem}`)."
    return command


from repro.bench import bench_app  # noqa: E402
from repro.execution.status import status_command  # noqa: E402
from repro.rho.command import rho_command  # noqa: E402

app.command("status")(status_command)
app.command("rho")(rho_command)

app.add_typer(bench_app, name="bench", help="Benchmarks: latency per head, data path, training, capacity assignment.")
_register_manifest_commands()

