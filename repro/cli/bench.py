"""`repro bench ...`: the benchmark commands, one group (the benchmarks themselves are repro.bench), in the order
`repro bench --help` lists them: the models' parts (repro.cli.bench_models), the training path and the device check
(repro.cli.bench_training), what commands cost (repro.cli.bench_costs)."""

from __future__ import annotations

import typer

from repro.cli import bench_costs, bench_models, bench_training

bench_app = typer.Typer(
    no_args_is_help=True,
    add_completion=False,
    help="Benchmarks: latency per head, data path, training, small-map convolutions, "
    "MoEConv2d paths, capacity assignment, "
    "smoke profile, this CPU's speed, device check.",
)

bench_app.command("latency")(bench_models.latency_cmd)
bench_app.command("data")(bench_training.data_cmd)
bench_app.command("train")(bench_training.train_cmd)
bench_app.command("small-maps")(bench_models.small_maps_cmd)
bench_app.command("moe-conv")(bench_models.moe_conv_cmd)
bench_app.command("capacity")(bench_models.capacity_cmd)
bench_app.command("gpu")(bench_training.gpu_cmd)
bench_app.command("estimates")(bench_costs.estimates_cmd)
bench_app.command("speed")(bench_costs.speed_cmd)
bench_app.command("smoke")(bench_costs.smoke_cmd)
bench_app.command("fixed-costs")(bench_costs.fixed_costs_cmd)
