"""The commands that describe before anything runs: `repro list`, `repro plan`, `repro flops`, `repro data`."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Optional, cast

import typer
from rich.text import Text

from repro.cli.common import (
    console,
    err,
    fail,
    load_every,
    load_some,
    load_valid_or_fail,
    paste,
    print_grid,
    refuse_a_file,
    settings,
    show,
)
from repro.cli.execution import ExecutorOpt, RunsPerGpuOpt, SlurmMaxParallelOpt
from repro.cli.options import DATA, MANIFESTS, PROFILES, READ_RESULTS, READINGS, verbose_option
from repro.cli.progress import Reporter
from repro.cost.calibration import REFERENCE_GPUS
from repro.plan.manifest import Manifest
from repro.results.measurements import FlopCheck
from repro.core.terminal import Column, Grid, Step

if TYPE_CHECKING:
    from repro.cost.fit import FolderFit
    from repro.plan.table_plan import Plans

GpusOpt = typer.Option(1, "--gpus", min=1, help="GPUs the local executor spreads runs over.")
CalibrationOpt = typer.Option(
    None,
    "--calibration",
    help="GPU calibration JSON from `repro bench gpu` (default: "
    "$REPRO_GPU_CALIBRATION); without it, GPU figures are the newest shipped GPU reference "
    "(docs/cost-model.md).",
)
ReferenceGpuOpt = typer.Option(
    None,
    "--reference-gpu",
    help="Price GPU runs on this GPU: its own shipped reference, else the newest scaled by bf16 peak: "
    f"{', '.join(REFERENCE_GPUS)}; default: this host's GPU, else the reference's.",
)


def _estimate(
    plans: Plans,
    results_dir: Path | None,
    executor: str,
    gpus: int,
    runs_per_gpu: int,
    slurm_max_parallel: int,
    data_dir: Path | None,
    calibration: Path | None,
    reference_gpu: str | None,
) -> FolderFit:
    """The cost model under the command's options, fitted to its results folder (repro.cost.fit.folder_estimate)."""
    from repro.cost.estimate import Executor
    from repro.cost.fit import folder_estimate

    try:
        # --executor as typed: Executor refuses any word but the two (ValueError) before the Literal is read
        runs = Executor(cast(Literal["local", "slurm"], executor), gpus, runs_per_gpu, slurm_max_parallel)
    except ValueError as exc:
        fail(str(exc))
    folder = results_dir or settings().results
    refuse_a_file(folder)  # read as an empty folder, it priced with no word of it
    return folder_estimate(
        settings(),
        folder,
        plans,
        executor=runs,
        data_dir=data_dir,
        calibration=calibration,
        gpu=reference_gpu,
    )


def list_manifests(
    executor: str = ExecutorOpt,
    gpus: int = GpusOpt,
    runs_per_gpu: int = RunsPerGpuOpt,
    slurm_max_parallel: int = SlurmMaxParallelOpt,
    manifests_dir: Optional[Path] = MANIFESTS,
    profiles: Optional[Path] = PROFILES,
    readings: Optional[Path] = READINGS,
    data_dir: Optional[Path] = DATA,
    calibration: Optional[Path] = CalibrationOpt,
    reference_gpu: Optional[str] = ReferenceGpuOpt,
    results_dir: Optional[Path] = READ_RESULTS,
    verbose: bool = verbose_option("What Device, Wall and From mean, and where each figure came from."),
) -> None:
    """Manifests, what each reproduces, and what each profile costs: runs, epochs, device time, wall time, each
    figure fitted to the run records in --results-dir, measured (this CPU, a calibration file) or a reference."""
    from repro.cost.tables import RATES_NOTE, list_table, rate_grid, rate_sources
    from repro.cost.taken import lines
    from repro.plan.table_plan import plan_all

    manifests, invalid = load_valid_or_fail(manifests_dir, profiles, readings)
    plans = plan_all(manifests)  # once: the fit, the tables and the lines below read them
    folder = _estimate(
        plans, results_dir, executor, gpus, runs_per_gpu, slurm_max_parallel, data_dir, calibration, reference_gpu
    )
    model = folder.model
    table, totals, sources = list_table(plans, model, invalid, folder.rates)
    print_grid(table)
    console.print()
    print_grid(totals, "Totals over every manifest: a run shared by tables counts once")
    if not verbose:  # one screen at 80 columns
        show(Text("-v: what Device, Wall and From mean, and where each figure came from", style="dim"))
        return
    show(
        Text(
            "Device: GPU time for profiles that run on a GPU, CPU time for those pinned to the CPU; wall time of "
            f"`repro <id>` alone and of `repro verify-all` (start-up, FLOP counts, training, rendering), on "
            f"{model.executor.describe('gpu')} (CPU profiles: this CPU), counts cold. "
            "From: what each figure came from (docs/cost-model.md): the run records in the results folder (fitted), "
            "a GPU calibration file, or a "
            "reference (the CPU one scaled by `repro bench speed`'s factor where kept). A run shared by rows or "
            "tables counts once; runs already recorded are not counted out. A table of 0 runs trains nothing: its "
            "numbers are FLOP counts or latency timings, priced by their wall time. Every figure is a quiet "
            "machine's: a record or command measured under load (load average above the cores) is left out of "
            "the fit.",
            style="dim",
        )
    )
    for source in sorted(s for s in sources if s.startswith("reference")):  # which machine, when, which commit
        show(Text(source, style="dim"))
    rates = rate_sources(plans, model)
    if rates:
        gpu = model.of_kind("gpu")
        console.print()
        print_grid(rate_grid(rates), f"GPU rates ({gpu.origin}, {gpu.measured_in})")
        show(Text(RATES_NOTE, style="dim"))
    for line in folder.describe() + lines(folder):
        show(Text(line, style="dim"))


def plan(
    ids: Optional[list[str]] = typer.Argument(None, help="Manifest ids (default: all)."),
    gpu_hours: float = typer.Option(..., "--gpu-hours", min=0.0, help="The GPU budget the plan must fit."),
    gpus: int = GpusOpt,
    runs_per_gpu: int = RunsPerGpuOpt,
    executor: str = ExecutorOpt,
    slurm_max_parallel: int = SlurmMaxParallelOpt,
    out: Optional[Path] = typer.Option(None, "--out", help="Write the plan's profiles file here (TOML)."),
    data_dir: Optional[Path] = DATA,
    calibration: Optional[Path] = CalibrationOpt,
    reference_gpu: Optional[str] = ReferenceGpuOpt,
    manifests_dir: Optional[Path] = MANIFESTS,
    readings: Optional[Path] = READINGS,
    results_dir: Optional[Path] = READ_RESULTS,
    verbose: bool = verbose_option("Also where each seed count comes from, and the rows each claim reads."),
) -> None:
    """Per empirical claim: rows, seeds for 80% power, runs and GPU-hours; the claims a budget decides, as profiles."""
    from repro.cost.tables import left_out_line, needs_table, plan_table
    from repro.cost.estimate import duration, hours
    from repro.cost.plan import BASE_PROFILE, claim_needs, make_plan, protocol_cost, write_plan
    from repro.plan.table_plan import plan_all

    manifests = load_some(ids, manifests_dir, readings=readings)
    plans = plan_all(manifests)
    folder = _estimate(
        plans, results_dir, executor, gpus, runs_per_gpu, slurm_max_parallel, data_dir, calibration, reference_gpu
    )  # GPU records there: fitted figures
    model = folder.model
    needs = claim_needs(manifests, model)
    result = make_plan(needs, gpu_hours, model)
    from repro.claims.headline import GROUPS, WORDS, claim_counts, claim_group

    groups = {f"{m.id}/{c.id}": claim_group(c, m.paper_table) for m in manifests for c in m.claims}
    by_group = Counter(groups[n.key] for n in needs if not n.claim.startswith("reading:"))
    claims = sum(by_group.values())
    title = (
        f"Empirical claims: {len(result.chosen)} of {len(needs)} in the plan ("
        + ", ".join(f"{by_group[g]} {WORDS[g]}" for g in GROUPS if by_group[g])
        + f"; {len(needs) - claims} reading{'s' if len(needs) - claims != 1 else ''} trained)"
    )
    if verbose:
        print_grid(needs_table(needs, result, verbose), title)
    else:
        print_grid(plan_table(result), title)
        if line := left_out_line(result):
            show(line)
    whole = protocol_cost(needs)
    show(claim_counts(manifests).line())
    show(
        f"plan: {len(result.chosen)} claims (weight {result.weight:g} of "
        f"{sum(n.weight for n in needs if not n.problem):g}), {result.runs} distinct runs, "
        f"{hours(result.gpu_seconds)} of {gpu_hours:g} GPU-hours, wall {duration(result.wall_seconds)} on "
        f"{model.executor.describe('gpu')}; every plannable claim: {hours(whole.device_seconds)} GPU-hours, "
        f"{whole.runs} runs"
    )
    basis = model.device(manifests[0].profiles[BASE_PROFILE]).basis if manifests else "reference"
    for source in result.sources:
        show(Text(f"GPU figures ({basis}): {source}", style="dim"))
    for line in folder.describe("gpu"):  # a GPU plan: a CPU folder's fits and start-up times say nothing of it
        show(Text(line, style="dim"))
    if out is not None:
        profiles = write_plan(out, result, manifests)
        show(f"wrote {out}: profiles {', '.join(profiles) or '(none: nothing fits)'}")
        for name in profiles:
            paste(f"  repro verify-all --profiles {out} --profile {name}")


def flops(
    ids: Optional[list[str]] = typer.Argument(None, help="Manifest ids (default: all)."),
    verbose: bool = verbose_option("Show every module's three counts."),
    manifests_dir: Optional[Path] = MANIFESTS,
    readings: Optional[Path] = READINGS,
) -> None:
    """Count FLOPs of every row three ways (analytic, fvcore, torch/2); exit 1 on any disagreement."""
    from repro.pipeline import flop_check

    manifests = load_some(ids, manifests_dir, readings=readings)
    with Reporter(console) as progress:
        check = flop_check(manifests, progress, settings().cache)
    _print_flops(manifests, check, verbose)
    if check.problems:
        for p in check.problems:
            show(Text.assemble(("FLOP check failed: ", "red"), p), err)
        raise typer.Exit(1)
    show(Text(f"all {len(check.models)} models: analytic = fvcore = torch/2 for every module", style="green"))


def _print_flops(manifests: list[Manifest], check: FlopCheck, verbose: bool) -> None:
    """Every distinct model under its manifest's id (a section), by row id: ids stay whole at 80 columns."""
    from repro.measure.flop_check import row_flops

    by_id = {m.id: m for m in manifests}
    grid = Grid(
        [
            Column("Row"),
            Column("Total MMAC", right=True),
            Column("Routed MMAC", right=True),
            Column("ρ", right=True),
            Column("ρ all ops", right=True),
            Column("Agree"),
        ]
    )
    section: str | None = None
    paths: dict[tuple[str, str], int] = {}  # (kind, path counted) -> modules
    at_batch: dict[int, list[str]] = {}  # batch -> rows whose batch-axis head is counted per image at it
    for manifest_id, row_id in check.models:
        if manifest_id != section:
            grid.section(manifest_id)
            section = manifest_id
        r = row_flops(by_id[manifest_id].row(row_id))  # counted by the check above, in this process
        grid.add(
            row_id,
            f"{r.total / 1e6:,.3f}",
            f"{r.routed / 1e6:,.3f}",
            f"{r.rho:.4%}",
            f"{r.rho_all_ops:.4%}",
            Text("yes", style="green") if r.ok else Text("NO", style="bold red"),
        )
        if r.batch is not None:
            at_batch.setdefault(r.batch, []).append(row_id)
        for mc in r.modules:
            if mc.path:
                paths[mc.kind, mc.path] = paths.get((mc.kind, mc.path), 0) + 1
        if verbose:
            for mc in r.modules:
                kind = f"{mc.kind}, {mc.path}" if mc.path else mc.kind
                grid.add(
                    Text(f"  {mc.name or '<model>'} ({kind})", style="dim"),
                    f"{mc.analytic / 1e6:,.6f}",
                    f"fvcore {mc.fvcore / 1e6:,.6f}",
                    f"torch/2 {mc.torch / 2e6:,.6f}",
                    "",
                    "yes" if mc.agrees else Text("NO", style="bold red"),
                )
    print_grid(grid, "FLOPs of each distinct model (MMAC: millions of multiply-accumulates)")
    show(
        Text(
            "Total and Routed: multiply-accumulates per image at the paper's resolution; ρ: the routed share "
            "(Section 3); ρ all ops: the same with every operation counted, not only multiply-accumulates; Agree: "
            "analytic = fvcore = torch/2 for every module (-v lists them).",
            style="dim",
        )
    )
    for batch, rows in sorted(at_batch.items()):
        show(
            Text(
                f"Per image in a batch of {batch} (the recipe's training batch), not of one: {', '.join(rows)}. "
                "These heads' experts run on rows chosen (Expert Choice) or mixed (Soft MoE) across the batch; "
                "the three counters check the traced batch-1 forward, and the head is then counted at that batch.",
                style="dim",
            )
        )
    for kind in sorted({k for k, _ in paths}):
        counted = ", ".join(f"{path} ({n})" for (k, path), n in sorted(paths.items()) if k == kind)
        show(
            Text(
                f"{kind} layers are counted on their fewest-multiply-add path: {counted}. Training runs "
                "the exact path measured time chooses (repro.models.moe_conv_choice), the same function; "
                "the run record names it.",
                style="dim",
            )
        )


def data(
    data_dir: Optional[Path] = DATA, manifests_dir: Optional[Path] = MANIFESTS, readings: Optional[Path] = READINGS
) -> None:
    """Which datasets and pretrained weights are present, where, and how to fill what is missing."""
    from repro.data.layout import data_root, data_status, fill_steps
    from repro.models.weights import WeightsStatus, fill_steps as weights_steps, pretrained_backbones, weights_status
    from repro.spec.profiles import shipped_profiles

    manifests = load_every(manifests_dir, readings=readings)
    data_dir = data_dir or settings().data
    grid = Grid([Column("Dataset or weights"), Column("Status"), Column("Needed by (full profile)", prose=True)])
    blocks: list[tuple[str, str, list[Step]]] = []  # (title, where it is or is looked for, steps to fill it)
    for s in data_status(data_dir):
        users = [m.id for m in manifests if any(r.dataset == s.name and "accuracy" in r.measures for r in m.rows)]
        grid.add(
            s.title, Text("present", style="green") if s.present else Text("missing", style="red"), ", ".join(users)
        )
        if s.present:
            blocks.append((s.title, f"present at {s.path}", []))
        else:
            shown = ", ".join(s.missing[:3]) + (f" and {len(s.missing) - 3} more" if len(s.missing) > 3 else "")
            at = f"in {s.path}" if s.path.is_dir() else "in the data root"  # the root: the first line says where
            blocks.append((s.title, f"missing {shown} {at}", fill_steps(s.name, data_dir)))
    files: dict[str, tuple[WeightsStatus, list[str]]] = {}  # one weights file can serve several backbones
    for backbone in sorted(pretrained_backbones()):
        w = weights_status(backbone, settings().weights)
        files.setdefault(w.file_name, (w, []))[1].append(backbone)
    unfilled = []  # the weights files to fetch: one set of steps for them all
    for w, backbones in files.values():
        users = [
            m.id for m in manifests if any(r.backbone.name in backbones and "accuracy" in r.measures for r in m.rows)
        ]
        title = f"{', '.join(backbones)} weights"
        state = "present" if w.present else "refused" if w.found else "missing"
        grid.add(title, Text(state, style="green" if w.present else "red"), ", ".join(users))
        if w.found:
            blocks.append(
                (
                    title,
                    f"{w.file_name} (sha256 {w.hash_prefix}...) at {w.path}" + (f": {w.problem}" if w.problem else ""),
                    [],
                )
            )
        if not w.present:
            unfilled.append(w)
    if unfilled:
        unfound = [f"{w.file_name} (sha256 {w.hash_prefix}...)" for w in unfilled if not w.found]
        blocks.append(
            (
                "Weights",
                (
                    f"{', '.join(unfound)} not in $REPRO_WEIGHTS nor at {unfilled[0].path.parent}/"
                    if unfound
                    else "how to replace them"
                ),
                weights_steps(unfilled),
            )
        )
    show(f"data root: {data_root(data_dir).absolute()} (--data-dir, else $REPRO_DATA, else ./data)")
    print_grid(grid)
    for title, where, steps in blocks:
        console.print()
        show(Text.assemble((f"{title}: ", "bold"), where))
        for step in steps:
            if step.say:
                show(step.say)
            if step.command:
                paste(f"  {step.command}")
    console.print()
    offline = [name for name, p in shipped_profiles().items() if p.data != "real"]  # synthetic, or digit scans
    show(Text(f"The {' and '.join(offline)} profiles need none of these: they make their own data here.", style="dim"))
