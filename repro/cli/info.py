"""The commands that describe before anything runs: `repro list`, `repro plan`, `repro flops`, `repro data`."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from rich.markup import escape
from rich.table import Table

from repro.cli.common import (
    DataOpt, ManifestsOpt, ProfilesOpt, ResultsOpt, console, err, fail, load_every, load_some, load_valid_or_fail,
    progress_bar,
)
from repro.manifest import Manifest
from repro.results import FlopCheck

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
        fail(str(exc))


def list_manifests(executor: str = ExecutorOpt, gpus: int = GpusOpt, runs_per_gpu: int = RunsPerGpuOpt,
                   slurm_max_parallel: int = SlurmParallelOpt, manifests_dir: Optional[Path] = ManifestsOpt,
                   profiles: Optional[Path] = ProfilesOpt, data_dir: Optional[Path] = DataOpt,
                   calibration: Optional[Path] = CalibrationOpt, reference_gpu: Optional[str] = ReferenceGpuOpt,
                   results_dir: Optional[Path] = ResultsOpt) -> None:
    """Manifests, what each reproduces, and what each profile costs: runs, epochs, device time, wall time, each
    figure fitted to the run records in --results-dir, measured (this CPU, a calibration file) or a reference."""
    from repro.cost.compare import lines
    from repro.cost.fit import fit_folder
    from repro.cost.tables import list_table
    from repro.results import default_results_dir

    model = _cost_model(executor, gpus, runs_per_gpu, slurm_max_parallel, data_dir, calibration, reference_gpu)
    manifests, invalid = load_valid_or_fail(manifests_dir, profiles)
    folder = fit_folder(model, results_dir or default_results_dir(), manifests)
    table, totals, sources = list_table(manifests, model, invalid, folder.rates)
    console.print(table)
    console.print(totals)
    console.print(f"[dim]Device: GPU time for profiles that run on a GPU, CPU time for those pinned to the CPU; "
                  f"wall time of `repro <id>` alone and of `repro verify-all` (start-up, FLOP counts, training, "
                  f"rendering), on {escape(model.executor.describe('gpu'))} (CPU profiles: this CPU), counts cold. "
                  "From: fitted (to the run records in the results folder), measured (this CPU's benchmark, a GPU "
                  "calibration file) or reference. A run shared by rows or tables counts once. Figures from:[/]")
    for source in sorted(sources):
        console.print(f"[dim]  {escape(source)}[/]", highlight=False)
    for line in folder.describe() + lines(manifests, model, folder.times, folder.rates):
        console.print(f"[dim]{escape(line)}[/]", highlight=False)


def plan(ids: list[str] = typer.Argument(None, help="Manifest ids (default: all)."),
         gpu_hours: float = typer.Option(..., "--gpu-hours", min=0.0, help="The GPU budget the plan must fit."),
         gpus: int = GpusOpt, runs_per_gpu: int = RunsPerGpuOpt, executor: str = ExecutorOpt,
         slurm_max_parallel: int = SlurmParallelOpt,
         out: Optional[Path] = typer.Option(None, "--out", help="Write the plan's profiles file here (TOML)."),
         data_dir: Optional[Path] = DataOpt, calibration: Optional[Path] = CalibrationOpt,
         reference_gpu: Optional[str] = ReferenceGpuOpt, manifests_dir: Optional[Path] = ManifestsOpt,
         results_dir: Optional[Path] = ResultsOpt) -> None:
    """Per empirical claim: rows, seeds for 80% power, runs and GPU-hours; the claims a budget decides, as profiles."""
    from repro.cost.fit import fit_folder
    from repro.cost.tables import needs_table
    from repro.cost.estimate import duration, hours
    from repro.cost.plan import BASE_PROFILE, claim_needs, make_plan, protocol_cost, write_plan
    from repro.results import default_results_dir

    model = _cost_model(executor, gpus, runs_per_gpu, slurm_max_parallel, data_dir, calibration, reference_gpu)
    manifests = load_some(ids, manifests_dir)
    folder = fit_folder(model, results_dir or default_results_dir(), manifests)  # GPU records there: fitted figures
    needs = claim_needs(manifests, model)
    result = make_plan(needs, gpu_hours, model)
    console.print(needs_table(needs, result))
    whole = protocol_cost(needs)
    console.print(f"plan: {len(result.chosen)} claims (weight {result.weight:g} of "
                  f"{sum(n.weight for n in needs if not n.problem):g}), {result.runs} distinct runs, "
                  f"{hours(result.gpu_seconds)} of {gpu_hours:g} GPU-hours, wall {duration(result.wall_seconds)} on "
                  f"{model.executor.describe('gpu')}; every plannable claim: {hours(whole.device_seconds)} GPU-hours, "
                  f"{whole.runs} runs", markup=False)
    basis = model.device(manifests[0].profiles[BASE_PROFILE]).basis if manifests else "reference"
    for source in result.sources:
        console.print(f"[dim]GPU figures ({basis}): {escape(source)}[/]", highlight=False)
    for line in folder.describe():
        console.print(f"[dim]{escape(line)}[/]", highlight=False)
    if out is not None:
        profiles = write_plan(out, result, manifests)
        console.print(f"wrote {out}: profiles {', '.join(profiles) or '(none: nothing fits)'}", markup=False)
        for name in profiles:
            console.print(f"  repro verify-all --profiles {out} --profile {name}", markup=False)


def flops(ids: list[str] = typer.Argument(None, help="Manifest ids (default: all)."),
          verbose: bool = typer.Option(False, "--verbose", "-v", help="Show every module's three counts."),
          manifests_dir: Optional[Path] = ManifestsOpt) -> None:
    """Count FLOPs of every row three ways (analytic, fvcore, torch/2); exit 1 on any disagreement."""
    from repro.pipeline import flop_check

    manifests = load_some(ids, manifests_dir)
    with progress_bar() as progress:
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


def data(data_dir: Optional[Path] = DataOpt, manifests_dir: Optional[Path] = ManifestsOpt) -> None:
    """Which datasets and pretrained weights are present, where, and what each manifest still needs."""
    from repro.data.layout import data_root, data_status
    from repro.weights import pretrained_backbones, weights_status

    manifests = load_every(manifests_dir)
    statuses = {s.name: s for s in data_status(data_dir)}
    table = Table("Dataset", "Status", "Path", "Needed by (full profile)")
    for name, s in statuses.items():
        users = [m.id for m in manifests if any(r.dataset == name and "accuracy" in r.measures for r in m.rows)]
        state = "[green]present[/]" if s.present else "[red]missing[/]: " + escape(", ".join(s.missing[:3]))
        table.add_row(s.title, state, escape(str(s.path)), ", ".join(users))
    files: dict[str, tuple[object, list[str]]] = {}  # one weights file can serve several backbones
    for backbone in sorted(pretrained_backbones()):
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


