"""`repro bench`: speed of the latency harness's heads, the data path, training, and capacity assignment.

    latency   every method's head (and whole model) at one dataset's shapes: ms per
              batch, ratio to the dense head, operator calls; operator calls against E
    data      images/s of the training data path alone (repro.bench_data)
    train     end-to-end training images/s, fast path against the usual way (repro.bench_train)
    capacity  the greedy capacity assignment (Section 3.3) per batch against the
              batched expert forward it feeds

Each prints a table whose ratios are the result; absolute times carry the device.
"""

from __future__ import annotations

from dataclasses import asdict, replace
from typing import Any, Optional

import torch
import typer
from rich.console import Console
from rich.table import Table

from repro.measure.latency import LatencySettings, cpu_threads, device_label, measure_head, measure_row, time_call
from repro.manifest import Row
from repro.models import Component
from repro.models.capacity import assign, assign_reference, capacity
from repro.models.experts import ExpertBank

bench_app = typer.Typer(no_args_is_help=True, add_completion=False,
                        help="Benchmarks: latency per head, data path, training, capacity assignment.")
console = Console()

# Each dataset's standard backbone and expert width h (Section 3.1).
SHAPES = {"cifar100": ("cifar_standard", 304), "tiny_imagenet": ("tiny_standard", 1024), "imagenet": ("resnet18", 512)}


def _device(device: str) -> torch.device:
    from repro.devices import resolve_device

    return torch.device(resolve_device(device))


def method_rows(dataset: str, num_experts: int = 8) -> list[Row]:
    """Every method's head on the dataset's standard backbone, as a latency manifest would list them."""
    backbone, h = SHAPES[dataset]
    moe = {"num_experts": num_experts, "expert_hidden": h}
    heads = [("dense head", "dense", {"hidden": (1024, 256)}),
             ("sparse MoE, loop", "sparse_moe", {**moe, "top_k": 1, "dispatch": "loop"}),
             ("sparse MoE, batched", "sparse_moe", {**moe, "top_k": 1, "dispatch": "batched"}),
             ("Soft MoE", "soft_moe", moe), ("per-sample Soft MoE", "per_sample_soft_moe", moe),
             ("Expert Choice", "expert_choice", moe)]
    return [Row(id=f"m{i}", label=label, dataset=dataset, backbone=Component(backbone), head=Component(name, params),
                measures=("latency",)) for i, (label, name, params) in enumerate(heads)]


def bench_latency(dataset: str = "cifar100", device: str = "cpu", settings: LatencySettings = LatencySettings(),
                  experts: tuple[int, ...] = (2, 4, 8, 16), whole_model: bool = True) -> dict[str, Any]:
    """Per-method timings and ratios to dense, and operator calls of the two dispatches against E."""
    dev = _device(device)
    s = replace(settings, op_batch=settings.batch)
    backbones: dict = {}
    methods = []
    for row in method_rows(dataset):
        r = measure_row(row, s, dev, backbones) if whole_model else measure_head(row, s, dev)
        methods.append({"method": row.label, **r})
    dense = methods[0]
    for m in methods:
        m["head_x"] = m["head"]["median_ms"] / dense["head"]["median_ms"]
        if whole_model:
            m["model_x"] = m["model"]["median_ms"] / dense["model"]["median_ms"]
    sweep = []
    for e in experts:
        loop, batched = method_rows(dataset, e)[1:3]
        sweep.append({"experts": e, "loop": measure_head(loop, s, dev), "batched": measure_head(batched, s, dev)})
    return {"dataset": dataset, "device": device_label(dev, s.threads), "settings": asdict(s), "methods": methods,
            "sweep": sweep}


def bench_capacity(batch: int = 256, num_experts: int = 8, features: int = 3072, hidden: int = 304,
                   classes: int = 100, capacity_factor: float = 1.25, device: str = "cpu",
                   settings: LatencySettings = LatencySettings(warmup=3, min_reps=20, max_reps=200, budget_s=2.0)
                   ) -> dict[str, Any]:
    """ms per batch of the greedy assignment (both implementations) and of the batched expert forward."""
    dev = _device(device)
    g = torch.Generator().manual_seed(0)
    probs = torch.softmax(torch.randn(batch, num_experts, generator=g) * 2, -1).to(dev)  # (B, E), a skewed router
    cap = capacity(capacity_factor, batch, 1, num_experts)
    torch.manual_seed(0)
    bank = ExpertBank(num_experts, features, hidden, classes).to(dev).train()
    x = torch.randn(num_experts, batch, features, generator=g).to(dev)  # (E, S=B, D): the batched buffer
    rows = []
    with torch.no_grad(), cpu_threads(dev, settings.threads):
        experts_ms = time_call(lambda: bank(x), dev, settings).median_ms
        for kc, when in ((1, "k = 1 (the paper's head)"), (num_experts, f"{num_experts} candidates (k warm-up start)")):
            cand = probs.topk(kc, dim=-1).indices  # (B, Kc)
            for name, rule in (("vectorised (batched dispatch)", assign), ("sequential loop (the paper's)", assign_reference)):
                ms = time_call(lambda: rule(cand, cap, 1, num_experts), dev, settings).median_ms
                rows.append({"assignment": f"{name}, {when}", "ms": ms, "of_experts": ms / experts_ms})
    return {"batch": batch, "num_experts": num_experts, "capacity": cap, "device": device_label(dev, settings.threads),
            "experts_ms": experts_ms, "rows": rows}


def _fmt(x: float) -> str:
    return f"{x:.3g}"


@bench_app.command("latency")
def latency(dataset: str = typer.Option("cifar100", help=f"One of {', '.join(SHAPES)}."),
            batch: int = typer.Option(256, help="Batch size (the text gives none; 256 is our choice)."),
            device: str = typer.Option("auto", help="auto, cpu or cuda."),
            warmup: int = typer.Option(5), reps: int = typer.Option(20, help="Repetitions per timing (at least)."),
            threads: int = typer.Option(1, help="CPU intra-op threads during timing; 0 keeps torch's setting."),
            experts: str = typer.Option("2,4,8,16", help="Numbers of experts for the operator-count sweep."),
            whole_model: bool = typer.Option(True, "--whole-model/--heads-only"),
            compiled: bool = typer.Option(False, "--compile", help="Time heads under torch.compile (eager if it fails).")
            ) -> None:
    """ms per batch of each method's head (and whole model), ratios to dense, and operator calls against E."""
    if dataset not in SHAPES:
        raise typer.BadParameter(f"unknown dataset {dataset!r}; one of {', '.join(SHAPES)}")
    s = LatencySettings(batch=batch, warmup=warmup, min_reps=reps, max_reps=max(reps, 200), budget_s=3.0,
                        threads=threads, compile=compiled)
    r = bench_latency(dataset, device, s, tuple(int(e) for e in experts.split(",")), whole_model)
    t = Table("Method", "Head ms", "x dense head", "Ops / forward", "Host syncs", *(
        ("Model ms", "x dense model") if whole_model else ()), title=f"{dataset}, batch {batch}{', heads compiled' if compiled else ''} — {r['device']}")
    for m in r["methods"]:
        t.add_row(m["method"], _fmt(m["head"]["median_ms"]), f"{m['head_x']:.2f}x", str(m["ops"]["ops"]),
                  str(m["ops"]["host_syncs"]),
                  *((_fmt(m["model"]["median_ms"]), f"{m['model_x']:.2f}x") if whole_model else ()))
    console.print(t)
    for m in r["methods"]:
        if m["compile_error"]:
            console.print(f"[yellow]{m['method']}: timed eagerly, compilation failed: {m['compile_error']}[/]")
    t = Table("E", "Loop ops", "Loop host syncs", "Loop ms", "Batched ops", "Batched ms",
              title="Sparse MoE head: operator calls per forward against the number of experts")
    for w in r["sweep"]:
        lo, ba = w["loop"], w["batched"]
        t.add_row(str(w["experts"]), str(lo["ops"]["ops"]), str(lo["ops"]["host_syncs"]), _fmt(lo["head"]["median_ms"]),
                  str(ba["ops"]["ops"]), _fmt(ba["head"]["median_ms"]))
    console.print(t)


@bench_app.command("data")
def data(images: int = typer.Option(10_000), batch: int = typer.Option(256), device: str = typer.Option("cpu"),
         repeats: int = typer.Option(3), workers: str = typer.Option("0,2", help="DataLoader worker counts to try.")) -> None:
    """Images/s of the training data path alone: TensorLoader against torchvision-style DataLoaders."""
    from repro.bench_data import bench_data

    r = bench_data(images, batch, str(_device(device)), repeats, tuple(int(w) for w in workers.split(",")))
    t = Table("Data path", "Images / s", "TensorLoader speed-up",
              title=f"{images} CIFAR-shaped images, batch {batch}, {r['device']}, augmentation included")
    for name, rate in r["images_per_s"].items():
        t.add_row(name, f"{rate:,.0f}", f"{r['speedup'][name]:.1f}x" if name in r["speedup"] else "")
    console.print(t)


@bench_app.command("train")
def train(images: int = typer.Option(2048), batch: int = typer.Option(128), device: str = typer.Option("auto"),
          rounds: int = typer.Option(3), workers: int = typer.Option(2, help="DataLoader workers of the usual way."),
          threads: int = typer.Option(1, help="CPU intra-op threads for both paths; 0 keeps torch's setting."),
          bf16: Optional[bool] = typer.Option(None, "--bf16/--fp32", help="Default: the CIFAR recipe (fp32).")) -> None:
    """End-to-end training images/s of the CIFAR sparse MoE model: fast path against the usual way."""
    from repro.bench_train import bench_train

    r = bench_train(images, batch, str(_device(device)), rounds, workers, threads, bf16=bf16)
    t = Table("Path", "Images / s", "Rounds", title=f"CIFAR standard backbone + sparse MoE, batch {batch}, "
              f"{r['steps_per_round']} steps a round, {r['device']}, {r['threads']} thread(s)")
    for name, rate in r["images_per_s"].items():
        t.add_row(name, f"{rate:,.0f}", ", ".join(f"{x:,.0f}" for x in r["rounds"][name]))
    console.print(t)
    console.print(f"fast / usual: [bold]{r['speedup']:.2f}x[/]; fast path engine: {r['engine']}", highlight=False)


@bench_app.command("capacity")
def capacity_cmd(batch: int = typer.Option(256), experts: int = typer.Option(8), device: str = typer.Option("auto"),
                 threads: int = typer.Option(1)) -> None:
    """The greedy capacity assignment per batch against the batched expert forward it feeds (CIFAR-100 shapes)."""
    s = LatencySettings(warmup=3, min_reps=20, max_reps=200, budget_s=2.0, threads=threads)
    r = bench_capacity(batch, experts, device=device, settings=s)
    t = Table("Assignment", "ms per batch", "x batched expert forward",
              title=f"batch {batch}, E={experts}, capacity {r['capacity']}; batched expert forward "
                    f"{r['experts_ms']:.3g} ms — {r['device']}")
    for row in r["rows"]:
        t.add_row(row["assignment"], f"{row['ms']:.3g}", f"{row['of_experts']:.2g}x")
    console.print(t)
