"""The `repro` command line: one command per manifest, FLOP checks, reports, verify-all."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.progress import (
    BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn,
)
from rich.table import Table

from repro.cost import estimate
from repro.data.layout import DatasetMissing
from repro.executors.options import ExecutorOptions, with_executor_options
from repro.weights import WeightsMissing
from repro.manifest import Manifest, find_manifest, load_all, manifest_paths
from repro.schema import SchemaError
from repro.verify import (
    FlopCheck, default_profile, default_results_dir, describe_exception, execute, flop_check, make_context,
    write_report,
)

app = typer.Typer(
    help="Reproduce arXiv 2605.15484: run a paper table's manifest, check FLOPs, decide claims, render reports.",
    no_args_is_help=True, add_completion=False, rich_markup_mode="rich",
)
console = Console()
err = Console(stderr=True)

ProfileOpt = typer.Option(None, "--profile", "-p", help="Profile to run: smoke (CPU, minutes) or full (the paper's protocol). Default: $REPRO_PROFILE or smoke.")
ResultsOpt = typer.Option(None, "--results-dir", "-o", help="Where results go. Default: $REPRO_RESULTS or ./results.")
DeviceOpt = typer.Option("auto", "--device", help="auto, cpu or cuda.")
JobsOpt = typer.Option(0, "--jobs", "-j", min=0, help="Runs trained in parallel processes; 0: one per CPU core on a CPU, 1 on a GPU.")
DataOpt = typer.Option(None, "--data-dir", help="Dataset root. Default: $REPRO_DATA or ./data.")


def _progress() -> Progress:
    return Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TimeElapsedColumn(), TextColumn("eta"), TimeRemainingColumn(), console=console, transient=False)


def _fail(message: str, code: int = 2) -> None:
    err.print(f"[bold red]error:[/] {message}", highlight=False)
    raise typer.Exit(code)


def _load(manifest_id: str) -> Manifest:
    try:
        return find_manifest(manifest_id)
    except (KeyError, SchemaError) as exc:
        _fail(str(exc).strip("'\""))


def _run_ids(ids: list[str], profile: str | None, results_dir: Path | None, device: str, jobs: int = 1,
             data_dir: Path | None = None, executor: ExecutorOptions | None = None) -> int:
    profile = profile or default_profile()
    results_dir = results_dir or default_results_dir()
    manifests = [_load(i) for i in ids]
    status = 0
    for manifest in manifests:
        try:
            ctx = make_context(manifest, profile, results_dir, device, jobs=jobs, data_dir=data_dir, executor=executor)
        except (KeyError, RuntimeError) as exc:
            _fail(str(exc).strip("'\""))
        console.print(f"[bold]{manifest.id}[/]: {manifest.title} — profile [cyan]{profile}[/], device {ctx.device}; "
                      f"estimated {estimate(manifest, profile)}")
        try:
            with _progress() as progress:
                ctx.progress = progress
                result, files = execute(manifest, ctx)
        except (DatasetMissing, WeightsMissing) as exc:
            _fail(f"{manifest.id} needs data that is not here; nothing was trained.\n{exc}")
        _print_verdicts(result.verdicts)
        for problem in result.measured.problems:
            err.print(f"[red]problem:[/] {problem}", highlight=False)
        console.print("wrote " + ", ".join(str(f) for f in files))
        console.print(_counts_line(ctx))
        status |= 0 if result.ok else 1
    return status


def _counts_line(ctx) -> str:
    from repro.runs import RunCounts

    return (ctx.run_counts or RunCounts()).line()


def _print_verdicts(verdicts) -> None:
    colours = {"reproduced": "green", "not reproduced": "red", "inconclusive": "yellow", "not run": "dim"}
    table = Table("Claim", "Verdict", "Evidence", show_lines=False)
    for v in verdicts:
        table.add_row(v.claim, f"[{colours[v.status]}]{v.status}[/]", v.evidence + (f" — {v.note}" if v.note else ""))
    if verdicts:
        console.print(table)


@app.command("list")
def list_manifests() -> None:
    """Manifests, what each reproduces, and what each profile costs."""
    table = Table("Id", "Reproduces", "Rows", "Claims", "Profiles and estimated cost")
    for path in manifest_paths():
        try:
            m = find_manifest(path.stem)
        except SchemaError as exc:
            table.add_row(path.stem, f"[red]invalid manifest[/]: {exc.problems[0]}", "", "", "")
            continue
        costs = "\n".join(f"{name}: {estimate(m, name)}" for name in m.profiles)
        table.add_row(m.id, f"{m.paper_ref}\n[dim]{m.title}[/]", str(len(m.rows)), str(len(m.claims)), costs)
    console.print(table)
    from repro.timing import local_device

    console.print(f"[dim]Costs are rough: training FLOPs over a throughput measured once on this machine's "
                  f"{local_device()} (cached), plus a cost per step; runs already recorded are not counted out.[/]")


@app.command("run")
@with_executor_options
def run(ids: list[str] = typer.Argument(..., help="Manifest ids, e.g. table6."), profile: Optional[str] = ProfileOpt,
        results_dir: Optional[Path] = ResultsOpt, device: str = DeviceOpt, jobs: int = JobsOpt,
        data_dir: Optional[Path] = DataOpt, executor: ExecutorOptions = None) -> None:
    """Run one or more manifests."""
    raise typer.Exit(_run_ids(ids, profile, results_dir, device, jobs, data_dir, executor))


@app.command("flops")
def flops(ids: list[str] = typer.Argument(None, help="Manifest ids (default: all)."),
          verbose: bool = typer.Option(False, "--verbose", "-v", help="Show every module's three counts.")) -> None:
    """Count FLOPs of every row three ways (analytic, fvcore, torch/2); exit 1 on any disagreement."""
    manifests = [_load(i) for i in ids] if ids else _load_all()
    with _progress() as progress:
        check = flop_check(manifests, progress)
    _print_flops(check, verbose)
    if check.problems:
        for p in check.problems:
            err.print(f"[red]FLOP check failed:[/] {p}", highlight=False)
        raise typer.Exit(1)
    console.print(f"[green]all {len(check.rows)} models: analytic = fvcore = torch/2 for every module[/]")


def _print_flops(check: FlopCheck, verbose: bool) -> None:
    from repro.pipeline import row_flops

    table = Table("Manifest/row", "Total MMAC", "Routed MMAC", "ρ", "ρ all ops", "Modules", "Agree")
    for manifest_id, row in check.rows:
        r = row_flops(row)
        table.add_row(f"{manifest_id}/{row.id}", f"{r.total / 1e6:,.3f}", f"{r.routed / 1e6:,.3f}", f"{r.rho:.4%}",
                      f"{r.rho_all_ops:.4%}", str(len(r.modules)), "[green]yes[/]" if r.ok else "[red]NO[/]")
        if verbose:
            for mc in r.modules:
                table.add_row(f"  [dim]{mc.name or '<model>'} ({mc.kind})[/]", f"{mc.analytic / 1e6:,.6f}",
                              f"fvcore {mc.fvcore / 1e6:,.6f}", f"torch/2 {mc.torch / 2e6:,.6f}", "", "",
                              "yes" if mc.agrees else "[red]NO[/]")
    console.print(table)


@app.command("data")
def data(data_dir: Optional[Path] = DataOpt) -> None:
    """Which datasets and pretrained weights are present, where, and what each manifest still needs."""
    from repro.data.layout import data_root, data_status
    from repro.recipes import PRETRAINABLE
    from repro.weights import weights_status

    manifests = _load_all()
    statuses = {s.name: s for s in data_status(data_dir)}
    table = Table("Dataset", "Status", "Path", "Needed by (full profile)")
    for name, s in statuses.items():
        users = [m.id for m in manifests if any(r.dataset == name and "accuracy" in r.measures for r in m.rows)]
        state = "[green]present[/]" if s.present else "[red]missing[/]: " + ", ".join(s.missing[:3])
        table.add_row(s.title, state, str(s.path), ", ".join(users))
    for arch in sorted(PRETRAINABLE - {"resnet18_moeconv"}):
        w = weights_status(arch)
        users = [m.id for m in manifests
                 if any(r.backbone.name in (arch, f"{arch}_moeconv") and "accuracy" in r.measures for r in m.rows)]
        table.add_row(f"{arch} weights", "[green]present[/]" if w.present else "[red]missing[/]", str(w.path),
                      ", ".join(users))
    console.print(f"data root: {data_root(data_dir).absolute()}")
    console.print(table)
    for s in statuses.values():
        if not s.present:
            console.print(f"[dim]{s.title}: {s.how_to_fill}[/]", highlight=False)
    console.print("[dim]The smoke profiles use synthetic data and random weights: they need none of these.[/]")


@app.command("report")
def report(results_dir: Optional[Path] = ResultsOpt) -> None:
    """Re-render report.md from whatever results the directory holds."""
    results_dir = results_dir or default_results_dir()
    path, summary = write_report(results_dir, _load_all())
    for line in summary["lines"]:
        console.print(line)
    console.print(f"wrote {path}")


@app.command("verify-all")
@with_executor_options
def verify_all(profile: Optional[str] = ProfileOpt, results_dir: Optional[Path] = ResultsOpt,
               device: str = DeviceOpt, jobs: int = JobsOpt, data_dir: Optional[Path] = DataOpt,
               strict: bool = typer.Option(False, "--strict", help="Also exit 1 when a decidable claim did not reproduce."),
               executor: ExecutorOptions = None) -> None:
    """Every manifest, every FLOP check, every claim: one report and an exit code to trust."""
    profile = profile or default_profile()
    results_dir = results_dir or default_results_dir()
    manifests = _load_all()
    failures: dict[str, str] = {}
    with _progress() as progress:
        check = flop_check(manifests, progress)
        task = progress.add_task(f"manifests ({profile})", total=len(manifests))
        for manifest in manifests:
            progress.update(task, description=f"{manifest.id} ({profile})")
            try:
                ctx = make_context(manifest, profile, results_dir, device, jobs=jobs, data_dir=data_dir,
                                   executor=executor)
                ctx.progress = progress
                result, _ = execute(manifest, ctx)
                progress.log(f"{manifest.id}: {_counts_line(ctx)}")
                if not result.ok:
                    failures[manifest.id] = f"{len(result.measured.problems)} problem(s), first: {result.measured.problems[0]}"
            except Exception as exc:  # one broken table must not hide the others
                failures[manifest.id] = describe_exception(exc)
            progress.advance(task)
    path, summary = write_report(results_dir, manifests, check, failures)
    _print_checklist(results_dir, manifests)
    console.rule("summary")
    for line in summary["lines"]:
        console.print(line)
    console.print(f"report: {path}")
    status = 1 if failures or check.problems else 0
    if strict and _undecided_or_failed(results_dir, manifests, device):
        status = 1
    raise typer.Exit(status)


def _print_checklist(results_dir: Path, manifests: list[Manifest]) -> None:
    from repro.results import load_result

    verdicts = [v for m in manifests if (r := load_result(results_dir, m.id)) for v in r.verdicts]
    _print_verdicts(verdicts)


def _undecided_or_failed(results_dir: Path, manifests: list[Manifest], device: str) -> bool:
    from repro.results import load_result

    for m in manifests:
        result = load_result(results_dir, m.id)
        for v in result.verdicts if result else []:
            exempt = v.status == "not run" and v.scope == "gpu" and not device.startswith("cuda")
            if v.status != "reproduced" and not exempt:
                return True
    return False


def _load_all() -> list[Manifest]:
    try:
        return load_all()
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
                executor: ExecutorOptions = None) -> None:
        raise typer.Exit(_run_ids([path.stem], profile, results_dir, device, jobs, data_dir, executor))

    command.__doc__ = f"Run manifests/{path.name} (the same as `repro run {path.stem}`)."
    return command


from repro.bench import bench_app  # noqa: E402
from repro.status import status_command  # noqa: E402

app.command("status")(status_command)

app.add_typer(bench_app, name="bench", help="Benchmarks: latency per head, data path, training, capacity assignment.")
_register_manifest_commands()

