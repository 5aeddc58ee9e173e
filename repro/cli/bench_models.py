"""`repro bench latency, small-maps, moe-conv, capacity`: the models' parts timed, each against its dense or
plain counterpart (repro.bench.heads, repro.bench.small_maps, repro.bench.moe_conv)."""

from __future__ import annotations

import statistics

import typer
from rich.table import Table

from repro.bench import LATENCY_DATASETS
from repro.cli.common import console
from repro.cli.options import DEVICE, resolved_device


def _fmt(x: float) -> str:
    return f"{x:.3g}"


def _at_least_one(*options: tuple[str, int]) -> None:
    """Each (flag, value) given a count of 1 or more; another is a usage error naming its flag."""
    for name, value in options:
        if value < 1:
            raise typer.BadParameter(f"{value}: expected 1 or more", param_hint=name)


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
    r = bench_latency(dataset, resolved_device(device), s, tuple(int(e) for e in experts.split(",")), whole_model)
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


def small_maps_cmd(
    batch: int = typer.Option(128, help="Images a step (the functional profile's batch)."),
    steps: int = typer.Option(3, help="Training steps a round."),
    rounds: int = typer.Option(3),
    threads: int = typer.Option(1, help="CPU intra-op threads (a run's; the digit pretraining takes 2)."),
) -> None:
    """Training steps of the functional profile's small-map backbones: torch's convolution against small-map paths."""
    from repro.bench.small_maps import bench_small_maps
    from repro.cli.common import print_grid, show
    from repro.core.terminal import Column, Grid, number_columns

    _at_least_one(("--batch", batch), ("--steps", steps), ("--rounds", rounds), ("--threads", threads))
    rows = bench_small_maps(batch, steps, rounds, threads)
    grid = Grid(
        [
            Column("Backbone", prose=True),
            *number_columns("Px", "Small", "Conv ms", "Small ms", "Speed-up"),
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
    from repro.core.terminal import Column, Grid, number_columns
    from repro.models.moe_conv_choice import candidates

    _at_least_one(
        ("--batch", batch),
        ("--channels", channels),
        ("--size", size),
        ("--experts", experts),
        ("--top-k", top_k),
        ("--threads", threads),
        ("--rounds", rounds),
        ("--steps", steps),
    )
    if top_k > experts:
        raise typer.BadParameter(f"{top_k}: expected at most --experts ({experts})", param_hint="--top-k")
    shape = Shape(batch, channels, size, experts, top_k)
    r = bench_moe_conv(shape, threads, rounds, steps, channels_last, candidates(compiling=True) if compiled else ())
    grid = Grid([Column("Path"), *number_columns("ms", "Ratio", "MACs", "Diff")])
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


def capacity_cmd(
    batch: int = typer.Option(256), experts: int = typer.Option(8), device: str = DEVICE, threads: int = typer.Option(1)
) -> None:
    """The greedy capacity assignment per batch against the batched expert forward it feeds (CIFAR-100 shapes)."""
    from repro.bench.heads import bench_capacity
    from repro.measure.latency import LatencySettings

    s = LatencySettings(warmup=3, min_reps=20, max_reps=200, budget_s=2.0, threads=threads)
    r = bench_capacity(batch, experts, device=resolved_device(device), settings=s)
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
