"""`repro bench ...`: the benchmark commands (the benchmarks themselves are repro.bench)."""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from repro.bench import LATENCY_DATASETS
from repro.cli.common import console
from repro.cli.options import DEVICE, MANIFESTS, PROFILES, READ_RESULTS, READINGS, profile_option
from repro.bench.speed import BENCH_RUNS, REPS

bench_app = typer.Typer(
    no_args_is_help=True,
    add_completion=False,
    help="Benchmarks: latency per head, data path, training, small-map convolutions, "
    "MoEConv2d paths, capacity assignment, "
    "smoke profile, this CPU's speed, device check.",
)


def _device(device: str) -> str:
    """The --device option resolved (repro.core.devices.resolve_device); a device this machine lacks is a usage
    error."""
    from repro.core.devices import DeviceError, resolve_device

    try:
        return resolve_device(device)
    except DeviceError as exc:
        raise typer.BadParameter(str(exc), param_hint="--device") from None


def _fmt(x: float) -> str:
    return f"{x:.3g}"


@bench_app.command("latency")
def latency_cmd(
    dataset: str = typer.Option("cifar100", help=f"One of {', '.join(LATENCY_DATASETS)}."),
    batch: int = typer.Option(256, help="Batch size (the text gives none; 256 is our choice)."),
    device: str = DEVICE,
    warmup: int = typer.Option(5),
    reps: int = typer.Option(20, help="Repetitions per timing (at least)."),
    threads: int = typer.Option(1, help="CPU intra-op threads during timing; 0 keeps torch's setting."),
    experts: str = typer.Option("2,4,8,16", help="Numbers of experts for the operator-count sweep."),
    whole_model: bool = typer.Option(True, "--whole-model/--heads-only"),
    compiled: bool = typer.Option(False, "--compile", help="Time heads under torch.compile (eager if it fails)."),
) -> None:
    """ms per batch of each method's head (and whole model), ratios to dense, and operator calls against E."""
    if dataset not in LATENCY_DATASETS:
        raise typer.BadParameter(f"unknown dataset {dataset!r}; one of {', '.join(LATENCY_DATASETS)}")
    from repro.bench.heads import bench_latency
    from repro.measure.latency import LatencySettings

    s = LatencySettings(
        batch=batch,
        warmup=warmup,
        min_reps=reps,
        max_reps=max(reps, 200),
        budget_s=3.0,
        threads=threads,
        compile=compiled,
    )
    r = bench_latency(dataset, _device(device), s, tuple(int(e) for e in experts.split(",")), whole_model)
    t = Table(
        "Method",
        "Head ms",
        "x dense head",
        "Ops / forward",
        "Host syncs",
        *(("Model ms", "x dense model") if whole_model else ()),
        title=f"{dataset}, batch {batch}{', heads compiled' if compiled else ''} — {r['device']}",
    )
    for m in r["methods"]:
        t.add_row(
            m["method"],
            _fmt(m["head"]["median_ms"]),
            f"{m['head_x']:.2f}x",
            str(m["ops"]["ops"]),
            str(m["ops"]["host_syncs"]),
            *((_fmt(m["model"]["median_ms"]), f"{m['model_x']:.2f}x") if whole_model else ()),
        )
    console.print(t)
    for m in r["methods"]:
        if m["compile_error"]:
            console.print(f"[yellow]{m['method']}: timed eagerly, compilation failed: {m['compile_error']}[/]")
    t = Table(
        "E",
        "Loop ops",
        "Loop host syncs",
        "Loop ms",
        "Batched ops",
        "Batched ms",
        title="Sparse MoE head: operator calls per forward against the number of experts",
    )
    for w in r["sweep"]:
        lo, ba = w["loop"], w["batched"]
        t.add_row(
            str(w["experts"]),
            str(lo["ops"]["ops"]),
            str(lo["ops"]["host_syncs"]),
            _fmt(lo["head"]["median_ms"]),
            str(ba["ops"]["ops"]),
            _fmt(ba["head"]["median_ms"]),
        )
    console.print(t)


@bench_app.command("data")
def data_cmd(
    images: int = typer.Option(10_000),
    batch: int = typer.Option(256),
    device: str = typer.Option("cpu"),
    repeats: int = typer.Option(3),
    workers: str = typer.Option("0,2", help="DataLoader worker counts to try."),
    source: str = typer.Option(
        "tensors", "--input", help="tensors (CIFAR-shaped, in memory) or jpeg (ImageNet-style image folders)."
    ),
    folder: Optional[Path] = typer.Option(
        None,
        "--folder",
        help="jpeg: an ImageFolder tree (train/<class>/*.JPEG); "
        "default: 64 JPEG fixtures of 500x375 written to a temporary folder.",
    ),
) -> None:
    """Images/s of the training data path alone: in-memory tensors against DataLoaders, or each JPEG input path."""
    if source == "jpeg":
        _bench_imagenet_paths(folder, device, min(batch, 64), repeats, workers)
        return
    if source != "tensors":
        raise typer.BadParameter(f"--input {source!r}: expected tensors or jpeg")
    from repro.bench.data import bench_data
    from repro.cli.common import settings

    r = bench_data(
        images, batch, _device(device), repeats, tuple(int(w) for w in workers.split(",")), cache=settings().cache
    )
    t = Table(
        "Data path",
        "Images / s",
        "TensorLoader speed-up",
        title=f"{images} CIFAR-shaped images, batch {batch}, {r['device']}, augmentation included",
    )
    for name, rate in r["images_per_s"].items():
        t.add_row(name, f"{rate:,.0f}", f"{r['speedup'][name]:.1f}x" if name in r["speedup"] else "")
    console.print(t)


def _bench_imagenet_paths(folder: Path | None, device: str, batch: int, repeats: int, workers: str) -> None:
    import tempfile

    from repro.bench.data_imagenet import bench_imagenet, write_jpeg_fixtures

    with tempfile.TemporaryDirectory() as tmp:
        root = folder or write_jpeg_fixtures(Path(tmp) / "jpegs")
        rows = bench_imagenet(root, str(_device(device)), batch, int(workers.split(",")[-1]), repeats)
    t = Table(
        "Input path",
        "Device",
        "Workers",
        "Images / s",
        "x PIL",
        title=f"ImageNet-style input paths: {rows[0].images if rows else 0} JPEGs of {root}, batch {batch}, "
        "random resized crop + flip + normalisation",
    )
    for r in rows:
        t.add_row(
            r.pipeline,
            str(r.device),
            str(r.workers),
            f"{r.images_per_s:,.0f}",
            f"{r.ratio_to_pil:.2f}x" if r.ratio_to_pil else "",
        )
    console.print(t)


@bench_app.command("train")
def train_cmd(
    images: int = typer.Option(2048),
    batch: int = typer.Option(128),
    device: str = DEVICE,
    rounds: int = typer.Option(3),
    workers: int = typer.Option(2, help="DataLoader workers of the usual way."),
    threads: int = typer.Option(1, help="CPU intra-op threads for both paths; 0 keeps torch's setting."),
    bf16: Optional[bool] = typer.Option(None, "--bf16/--fp32", help="Default: the CIFAR recipe (fp32)."),
) -> None:
    """End-to-end training images/s of the CIFAR sparse MoE model: fast path against the usual way."""
    from repro.bench.train import bench_train
    from repro.cli.common import settings

    own = settings()
    r = bench_train(
        images, batch, _device(device), rounds, workers, threads, bf16=bf16, switches=own.engine, cache=own.cache
    )
    t = Table(
        "Path",
        "Images / s",
        "Rounds",
        title=f"CIFAR standard backbone + sparse MoE, batch {batch}, "
        f"{r['steps_per_round']} steps a round, {r['device']}, {r['threads']} thread(s)",
    )
    for name, rate in r["images_per_s"].items():
        t.add_row(name, f"{rate:,.0f}", ", ".join(f"{x:,.0f}" for x in r["rounds"][name]))
    console.print(t)
    console.print(f"fast / usual: [bold]{r['speedup']:.2f}x[/]; fast path engine: {r['engine']}", highlight=False)


@bench_app.command("small-maps")
def small_maps_cmd(
    batch: int = typer.Option(128, help="Images a step (the functional profile's batch)."),
    steps: int = typer.Option(3, help="Training steps a round."),
    rounds: int = typer.Option(3),
    threads: int = typer.Option(1, help="CPU intra-op threads (a run's; the digit pretraining takes 2)."),
) -> None:
    """Training steps of the functional profile's small-map backbones: torch's convolution against small-map paths."""
    from repro.bench.small_maps import bench_small_maps
    from repro.cli.common import print_grid, show
    from repro.core.terminal import Column, Grid

    for name, value in (("--batch", batch), ("--steps", steps), ("--rounds", rounds), ("--threads", threads)):
        if value < 1:
            raise typer.BadParameter(f"{value}: expected 1 or more", param_hint=name)
    rows = bench_small_maps(batch, steps, rounds, threads)
    grid = Grid(
        [
            Column("Backbone", prose=True),
            Column("Px", right=True),
            Column("Small", right=True),
            Column("Conv ms", right=True),
            Column("Small ms", right=True),
            Column("Speed-up", right=True),
            Column("Diff out/grad", drop=1),
        ]
    )
    for r in rows:
        grid.add(
            r.case.label,
            str(r.case.image_size),
            f"{r.small} of {r.layers}",
            f"{statistics.median(r.conv_ms):.0f}",
            f"{statistics.median(r.small_ms):.0f}",
            f"{r.speedup:.2f}x",
            f"{r.output_diff:.1e} / {r.grad_diff:.1e}",
        )
    print_grid(
        grid,
        f"A training step (forward, backward, Adam; dense head), batch {batch}, {threads} thread(s), "
        f"median of {rounds} rounds of {steps} steps",
    )
    show(
        "Small: the convolution layers that take a small-map path at this size (repro.models.small_maps). Diff: "
        "the largest difference of the outputs and of the gradients, relative to the largest value (float "
        "rounding: the two paths compute one function)."
    )


@bench_app.command("moe-conv")
def moe_conv_cmd(
    batch: int = typer.Option(64),
    channels: int = typer.Option(256, help="Input and output channels."),
    size: int = typer.Option(14, help="Height and width of the map."),
    experts: int = typer.Option(8),
    top_k: int = typer.Option(2, "--top-k"),
    threads: int = typer.Option(2, help="CPU intra-op threads."),
    rounds: int = typer.Option(5),
    steps: int = typer.Option(2, help="Training steps a round."),
    channels_last: bool = typer.Option(
        True, "--channels-last/--contiguous", help="The input's memory format (runs: channels-last)."
    ),
    compiled: bool = typer.Option(
        False, "--compile", help="Add torch.compile's kernels of the paths of static shapes (compilation untimed)."
    ),
) -> None:
    """The routed layer's training step on each exact MoEConv2d path and the chosen one, against its dense conv."""
    from repro.bench.moe_conv import GOAL, Shape, bench_moe_conv
    from repro.cli.common import print_grid, show
    from repro.core.terminal import Column, Grid
    from repro.models.moe_conv_choice import candidates

    for name, value in (
        ("--batch", batch),
        ("--channels", channels),
        ("--size", size),
        ("--experts", experts),
        ("--top-k", top_k),
        ("--threads", threads),
        ("--rounds", rounds),
        ("--steps", steps),
    ):
        if value < 1:
            raise typer.BadParameter(f"{value}: expected 1 or more", param_hint=name)
    if top_k > experts:
        raise typer.BadParameter(f"{top_k}: expected at most --experts ({experts})", param_hint="--top-k")
    shape = Shape(batch, channels, size, experts, top_k)
    r = bench_moe_conv(shape, threads, rounds, steps, channels_last, candidates(compiling=True) if compiled else ())
    grid = Grid(
        [
            Column("Path"),
            Column("ms", right=True),
            Column("Ratio", right=True),
            Column("MACs", right=True),
            Column("Diff", right=True),
        ]
    )
    dense_macs = r.rows[0].macs
    for row in r.rows:
        label = f"chosen: {r.chosen}" if row.path == "chosen" else row.path
        ms = statistics.median(row.ms)
        grid.add(
            label,
            f"{ms:.0f}" if ms >= 100 else _fmt(ms),
            f"{row.ratio:.2f}x",
            f"{row.macs / dense_macs:.2f}x",
            f"{row.diff:.1e}",
        )
    print_grid(
        grid,
        f"MoEConv2d forward + backward, {shape.describe()}, {r.layout}, {threads} thread(s), "
        f"median of {rounds} rounds of {steps} steps",
    )
    for name, why in r.skipped.items():
        show(f"{name}: not run ({why})")
    chosen_ratio = r.rows[-1].ratio
    show(
        f"Ratio: the step's time over nn.Conv2d's of the same shape in the same round (median over rounds). "
        f"MACs: the path's forward multiply-adds over the convolution's. Diff: the largest difference of the "
        f"output and gradients from the layer's in float64, relative to the largest value (float rounding "
        f"below {r.tolerance:.0e}). Load {r.load[0]:.1f} -> {r.load[1]:.1f} (1-minute average)."
    )
    show(
        f"chosen path {chosen_ratio:.2f}x the dense convolution: "
        f"goal <= {GOAL}x {'met' if chosen_ratio <= GOAL else 'NOT met'}"
    )
    if r.disagreeing:
        show(f"paths disagree beyond float rounding: {', '.join(row.path for row in r.disagreeing)}")
        raise typer.Exit(1)


@bench_app.command("capacity")
def capacity_cmd(
    batch: int = typer.Option(256), experts: int = typer.Option(8), device: str = DEVICE, threads: int = typer.Option(1)
) -> None:
    """The greedy capacity assignment per batch against the batched expert forward it feeds (CIFAR-100 shapes)."""
    from repro.bench.heads import bench_capacity
    from repro.measure.latency import LatencySettings

    s = LatencySettings(warmup=3, min_reps=20, max_reps=200, budget_s=2.0, threads=threads)
    r = bench_capacity(batch, experts, device=_device(device), settings=s)
    t = Table(
        "Assignment",
        "ms per batch",
        "x batched expert forward",
        title=f"batch {batch}, E={experts}, capacity {r['capacity']}; batched expert forward "
        f"{r['experts_ms']:.3g} ms — {r['device']}",
    )
    for row in r["rows"]:
        t.add_row(row["assignment"], f"{row['ms']:.3g}", f"{row['of_experts']:.2g}x")
    console.print(t)


@bench_app.command("gpu")
def gpu_cmd(
    dry_run: bool = typer.Option(False, "--dry-run", help="The same sequence at toy size (default device: cpu)."),
    out: Path = typer.Option(Path("results/bench_gpu.json"), "--out", help="The JSON to write."),
    device: str = typer.Option("auto", help="auto: cuda (cpu for --dry-run)."),
    steps: Optional[int] = typer.Option(
        None, min=1, help="Timed training steps per model (default 300; 1 with --dry-run)."
    ),
    budget_s: Optional[float] = typer.Option(None, help="Checks not begun after this many seconds are skipped."),
    only: Optional[list[str]] = typer.Option(None, "--only", help="Only these manifests (repeatable)."),
) -> None:
    """One prepared device check: each table's heaviest model trained (and Table 5's dense twin), the ImageNet input
    paths, kill/resume, Expert Choice in bf16."""
    from dataclasses import replace

    from repro.bench.dense_twin import ratio_line
    from repro.bench.input_paths import summary_lines
    from repro.bench.gpu import DRY_RUN, FULL, run_gpu_check
    from repro.cli.common import settings as command_settings
    from repro.plan.manifest import load_all

    dev = "cpu" if dry_run and device == "auto" else _device(device)
    if not dry_run and not dev.startswith("cuda"):
        raise typer.BadParameter(
            f"{dev!r} is not a GPU; the full check trains at paper batches for minutes per model. Use --dry-run here.",
            param_hint="--device",
        )
    settings = DRY_RUN if dry_run else FULL
    settings = replace(settings, steps=steps or settings.steps, budget_s=budget_s or settings.budget_s)
    own = command_settings()
    every = load_all(own.manifests, own.profiles, readings_file=own.readings)
    manifests = [m for m in every if not only or m.id in only]
    if only and len(manifests) != len(set(only)):
        known = {m.id for m in every}
        raise typer.BadParameter(f"unknown manifest(s) {', '.join(sorted(set(only) - known))}", param_hint="--only")
    doc = run_gpu_check(
        dev, settings, out, manifests, dry_run, log=lambda line: console.print(line, highlight=False), run_settings=own
    )
    t = Table(
        "Check",
        "Status",
        "Seconds",
        "Images / s",
        "Peak GiB",
        title=f"{doc['device']['label']}, "
        f"torch {doc['torch']}{' (dry run)' if dry_run else ''}: {doc['wall_s']:.0f} s in all",
    )
    for c in doc["checks"]:
        r, mem = c["result"], c["result"].get("peak_memory_bytes")
        t.add_row(
            c["name"],
            c["status"],
            f"{c['seconds']:.1f}",
            f"{r['images_per_s']:,.1f}" if "images_per_s" in r else "",
            f"{mem / 2**30:.1f}" if mem else "",
        )
    console.print(t)
    for c in doc["checks"]:
        if c["kind"] == "dense_twin" and c["status"] != "skipped":
            console.print(ratio_line(c), highlight=False)
        if c["kind"] == "input_path":
            for line in summary_lines(c):
                console.print(line, highlight=False)
    for c in doc["checks"]:
        if c["status"] != "passed":
            console.print(f"[red]{c['status']}[/] {c['name']}: {c['error']}", highlight=False)
    console.print(f"wrote {out}")
    raise typer.Exit(1 if any(c["status"] == "failed" for c in doc["checks"]) else 0)


@bench_app.command("estimates")
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


@bench_app.command("speed")
def speed_cmd(
    runs: int = typer.Option(BENCH_RUNS, "--runs", min=1, help="Reference runs to train again."),
    reps: int = typer.Option(REPS, "--reps", min=1, help="Repetitions of each run."),
) -> None:
    """This CPU against the CPU reference's machine: a few of the reference's runs trained again here. A quiet
    measurement is kept, and `repro list` scales the reference's figures by it (docs/cost-model.md)."""
    from repro.cli.common import print_grid, settings, show
    from repro.core.terminal import Column, Grid
    from repro.bench.speed import bench_runs, measure_speed
    from repro.cost.calibration import MAX_AGE_DAYS, keep, kept_speed, speed_path

    speed, rows = measure_speed(bench_runs(runs), reps)
    grid = Grid(
        [
            Column("Reference run"),
            Column("There CPU-s", right=True),
            Column("Here CPU-s", right=True),
            Column("Apart", right=True),
            Column("Ratio", right=True),
        ]
    )
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


@bench_app.command("smoke")
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
    from repro.core.terminal import Column, Grid
    from repro.results.timings import phase_rows

    entry = history_entry(run, cold=cold, reused=reused)
    before = previous(read_history(history), entry)
    kind = "every run reused" if reused else "cold" if cold else "warm cache"
    if run.timings is not None:
        grid = Grid(
            [
                Column("Phase"),
                Column("Wall-s", right=True),
                Column("CPU-s", right=True),
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


@bench_app.command("fixed-costs")
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
    from repro.core.terminal import Column, Grid

    own = settings()
    profile = profile or own.profile
    try:
        rows = fixed_costs(results_dir or own.results, profile, f"run {table}")
    except NoTimings as exc:
        fail(str(exc))
    grid = Grid(
        [
            Column("Run", prose=True),
            Column("Data", right=True),
            Column("Build", right=True),
            Column("Epoch 1", right=True),
            Column("Later", right=True),
            Column("1 / later", right=True),
        ]
    )
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
