"""`repro bench ...`: the benchmark commands, one group (the benchmarks themselves are repro.bench), in the order
`repro bench --help` lists them: the models' parts (repro.cli.bench_models), the training path and the device check
(repro.cli.bench_training), what commands cost (repro.cli.bench_costs)."""

from __future__ import annotations

import typer

from repro.cli.bench_costs import estimates_cmd, fixed_costs_cmd, smoke_cmd, speed_cmd
from repro.cli.bench_models import capacity_cmd, latency_cmd, moe_conv_cmd, small_maps_cmd
from repro.cli.bench_training import data_cmd, gpu_cmd, train_cmd

bench_app = typer.Typer(
    no_args_is_help=True,
    add_completion=False,
    help="Benchmarks: latency per head, data path, training, small-map convolutions, "
    "MoEConv2d paths, capacity assignment, "
    "smoke profile, this CPU's speed, device check.",
)

bench_app.command("latency")(latency_cmd)
bench_app.command("data")(data_cmd)
bench_app.command("train")(train_cmd)
bench_app.command("small-maps")(small_maps_cmd)
bench_app.command("moe-conv")(moe_conv_cmd)
bench_app.command("capacity")(capacity_cmd)
bench_app.command("gpu")(gpu_cmd)
bench_app.command("estimates")(estimates_cmd)
bench_app.command("speed")(speed_cmd)
bench_app.command("smoke")(smoke_cmd)
bench_app.command("fixed-costs")(fixed_costs_cmd)
