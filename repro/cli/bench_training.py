"""`repro bench data, train, gpu`: the training path timed, from its data alone to whole training steps, and the
prepared device check (repro.bench.data, repro.bench.data_imagenet, repro.bench.train, repro.bench.gpu)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from repro.cli.common import console
from repro.cli.options import DEVICE, resolved_device


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
        images,
        batch,
        resolved_device(device),
        repeats,
        tuple(int(w) for w in workers.split(",")),
        cache=settings().cache,
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
        rows = bench_imagenet(root, str(resolved_device(device)), batch, int(workers.split(",")[-1]), repeats)
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
        images,
        batch,
        resolved_device(device),
        rounds,
        workers,
        threads,
        bf16=bf16,
        switches=own.engine,
        cache=own.cache,
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

    dev = "cpu" if dry_run and device == "auto" else resolved_device(device)
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
