"""`repro bench speed`: this CPU's speed factor against the CPU reference's machine (repro.cost.calibration.Speed).

It trains a few of the reference's own runs again, here, in this process, on their own threads:

    ratio of a run = the least of its CPU seconds over REPS repetitions here / its CPU seconds there
    factor         = the median ratio over the runs
    spread         = the largest (most / least - 1) over one run's repetitions

and the cost model keeps the measurement only when it is quiet (repro.cost.calibration.keep).
"""

from __future__ import annotations

import datetime as dt
import os
import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from repro.cost.calibration import Speed, cores, this_machine

BENCH_RUNS = 5  # of the reference's runs, evenly spaced by their CPU seconds there
REPS = 2
MAX_RUN_S = 1.5  # CPU seconds there of the runs the benchmark may pick: a few seconds in all


@dataclass(frozen=True)
class BenchRun:
    label: str
    reference_s: float  # CPU seconds on the reference machine
    seconds: tuple[float, ...]  # CPU seconds here, one per repetition

    @property
    def ratio(self) -> float:
        return min(self.seconds) / self.reference_s


def bench_runs(count: int = BENCH_RUNS) -> list[tuple[object, float, str]]:
    """(run config, CPU seconds there, label) of `count` reference runs, evenly spaced by their CPU seconds among
    those that need no dataset, no pretrained weights and at most MAX_RUN_S there."""
    from repro.cost import cpu_reference
    from repro.plan.manifest import load_all
    from repro.plan.table_plan import plan_all

    ref = cpu_reference.load()
    if ref is None:
        raise RuntimeError(f"no CPU reference to measure against ({cpu_reference.REFERENCE_FILE})")
    there = {r.hash: r for r in ref.runs}
    configs = {
        h: cfg for plan in plan_all(load_all()) if plan.profile.device == "cpu" for h, cfg in plan.configs().items()
    }
    pool = sorted(
        (r.cpu_s, h)
        for h, r in there.items()
        if h in configs and configs[h].data != "real" and not configs[h].digit_weights and r.cpu_s <= MAX_RUN_S
    )
    if not pool:
        raise RuntimeError(
            "none of the CPU reference's runs is planned by today's profiles: "
            "the reference is out of date (tools/write_cpu_reference.py)"
        )
    picks = sorted({round((i + 0.5) * len(pool) / count - 0.5) for i in range(count)})
    return [(configs[pool[i][1]], pool[i][0], there[pool[i][1]].label) for i in picks]


def train_cpu_seconds(cfg) -> float:
    """CPU seconds of this process training `cfg` once on the CPU, as a run record counts them
    (repro.execution.records)."""
    import tempfile

    import torch

    from repro.train.loop import train_run

    with tempfile.TemporaryDirectory(prefix="repro-speed-") as tmp:
        started = time.process_time()
        train_run(cfg, torch.device("cpu"), None, Path(tmp) / "checkpoint.pt")
        return time.process_time() - started


def measure_speed(
    runs: list[tuple[object, float, str]] | None = None,
    reps: int = REPS,
    train: Callable[[object], float] = train_cpu_seconds,
    loadavg: Callable[[], tuple[float, float, float]] = os.getloadavg,
) -> tuple[Speed, list[BenchRun]]:
    """Train each run `reps` times (the runs interleaved, after one untimed warm-up), and compare with the reference."""
    runs = bench_runs() if runs is None else runs
    before = loadavg()[0]
    train(runs[0][0])  # first-use costs (allocator, kernels' first calls) belong to no run
    seconds: list[list[float]] = [[] for _ in runs]
    for _ in range(reps):
        for i, (cfg, _, _) in enumerate(runs):
            seconds[i].append(train(cfg))
    out = [BenchRun(label, there, tuple(s)) for (_, there, label), s in zip(runs, seconds)]
    speed = Speed(
        factor=statistics.median(r.ratio for r in out),
        spread=max(max(r.seconds) / min(r.seconds) - 1 for r in out),
        load=max(before, loadavg()[0]),
        cores=cores(),
        runs=len(out),
        measured=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        machine=this_machine(),
    )
    return speed, out
