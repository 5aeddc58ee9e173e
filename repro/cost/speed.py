"""This CPU's speed against the CPU reference's machine: one factor that scales every reference figure.

The CPU reference (repro.cost.cpu_reference) holds what runs cost on one machine. Another machine is priced by the
same run model and phase rates times a speed factor, never by a rate of its own: a single FLOP rate cannot price
small runs, whose cost is per-step overhead. The benchmark (`repro bench speed`, seconds) trains a few of the
reference's own runs again, here, in this process, on their own threads:

    ratio of a run = the least of its CPU seconds over REPS repetitions here / its CPU seconds there
    factor         = the median ratio over the runs
    spread         = the largest (most / least - 1) over one run's repetitions

A measurement is quiet when the load average (1 minute, the higher of before and after) is at most the cores and
the spread at most MAX_SPREAD. Only a quiet one is kept (speed.json in the cache, repro.core.cache, by CPU model and
cores), and for MAX_AGE_DAYS: a machine measured while busy looks slow, and one busy run must not price every later
estimate. Without a kept measurement the reference's figures stand unscaled; the From column says which
(docs/cost-model.md).
"""

from __future__ import annotations

import datetime as dt
import os
import statistics
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

from repro.core.cache import read_json, write_json
from repro.core.settings import DEFAULT_CACHE

BENCH_RUNS = 5  # of the reference's runs, evenly spaced by their CPU seconds there
REPS = 2
MAX_RUN_S = 1.5  # CPU seconds there of the runs the benchmark may pick: a few seconds in all
MAX_SPREAD = 0.20
MAX_AGE_DAYS = 7
FILE_NAME = "speed.json"


@dataclass(frozen=True)
class Speed:
    """One measurement of this CPU against the reference machine."""

    factor: float  # CPU seconds here / there for the same runs: 1.3 is 30% slower than the reference
    spread: float  # the largest relative disagreement between repetitions of one run
    load: float  # 1-minute load average, the higher of before and after
    cores: int  # the cores this process may use
    runs: int  # reference runs trained
    measured: str  # ISO 8601 UTC
    machine: str  # repro.results.timings.machine_key

    @property
    def quiet(self) -> bool:
        return self.load <= self.cores and self.spread <= MAX_SPREAD

    def why_not_kept(self) -> str:
        """'' for a quiet measurement, else what made it busy."""
        reasons = [f"load average {self.load:.1f} above {self.cores} cores"] if self.load > self.cores else []
        if self.spread > MAX_SPREAD:
            reasons.append(f"repetitions {self.spread:.0%} apart (bound {MAX_SPREAD:.0%})")
        return " and ".join(reasons)

    @property
    def label(self) -> str:
        """The From column's word for figures scaled by it."""
        return f"CPU reference x{self.factor:.2f}"

    def describe(self) -> str:
        return (f"speed factor {self.factor:.2f} (this CPU's seconds / the reference machine's, {self.runs} runs, "
                f"spread {self.spread:.0%}, load {self.load:.1f} on {self.cores} cores, {self.measured[:16]} UTC)")


def _cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _machine() -> str:
    from repro.results.timings import machine, machine_key

    return machine_key(machine())


def speed_path(cache: Path = DEFAULT_CACHE) -> Path:
    """Where the speed factors are kept: in the cache folder `cache`, one per machine."""
    return Path(cache) / FILE_NAME


def kept_speed(now: dt.datetime | None = None, cache: Path = DEFAULT_CACHE) -> Speed | None:
    """This machine's kept measurement in the cache folder `cache`, or None: none kept, older than MAX_AGE_DAYS,
    or damaged (with a warning naming the file and the key)."""
    path = speed_path(cache)
    doc = read_json(path)
    if doc is None:
        return None
    entry = doc.get(_machine()) if isinstance(doc, dict) else None
    if entry is None:
        return None
    try:
        speed = Speed(**entry)
        measured = dt.datetime.fromisoformat(speed.measured)
        if not (speed.factor > 0 and speed.quiet):
            raise ValueError("expected a positive factor measured on a quiet machine")
    except (TypeError, ValueError) as exc:
        print(f"warning: ignoring the speed measurement in {path}, key {_machine()!r} ({exc}); "
              "`repro bench speed` measures it again", file=sys.stderr)
        return None
    age = (now or dt.datetime.now(dt.timezone.utc)) - measured
    return speed if age <= dt.timedelta(days=MAX_AGE_DAYS) else None


def keep(speed: Speed, cache: Path = DEFAULT_CACHE) -> bool:
    """Keep a quiet measurement for this machine in the cache folder `cache`; a busy one is not kept. Whether it was."""
    if not speed.quiet:
        return False
    path = speed_path(cache)
    doc = read_json(path)
    doc = doc if isinstance(doc, dict) else {}
    doc[speed.machine] = asdict(speed)
    write_json(path, doc)
    return True


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
    configs = {h: cfg for plan in plan_all(load_all()) if plan.profile.device == "cpu"
               for h, cfg in plan.configs().items()}
    pool = sorted((r.cpu_s, h) for h, r in there.items() if h in configs and configs[h].data != "real"
                  and not configs[h].digit_weights and r.cpu_s <= MAX_RUN_S)
    if not pool:
        raise RuntimeError("none of the CPU reference's runs is planned by today's profiles: "
                           "the reference is out of date (tools/write_cpu_reference.py)")
    picks = sorted({round((i + 0.5) * len(pool) / count - 0.5) for i in range(count)})
    return [(configs[pool[i][1]], pool[i][0], there[pool[i][1]].label) for i in picks]


def train_cpu_seconds(cfg) -> float:
    """CPU seconds of this process training `cfg` once on the CPU, as a run record counts them (repro.execution.records)."""
    import tempfile

    import torch

    from repro.train.loop import train_run

    with tempfile.TemporaryDirectory(prefix="repro-speed-") as tmp:
        started = time.process_time()
        train_run(cfg, torch.device("cpu"), None, Path(tmp) / "checkpoint.pt")
        return time.process_time() - started


def measure_speed(runs: list[tuple[object, float, str]] | None = None, reps: int = REPS,
                  train: Callable[[object], float] = train_cpu_seconds,
                  loadavg: Callable[[], tuple[float, float, float]] = os.getloadavg) -> tuple[Speed, list[BenchRun]]:
    """Train each run `reps` times (the runs interleaved, after one untimed warm-up), and compare with the reference."""
    runs = bench_runs() if runs is None else runs
    before = loadavg()[0]
    train(runs[0][0])  # first-use costs (allocator, kernels' first calls) belong to no run
    seconds: list[list[float]] = [[] for _ in runs]
    for _ in range(reps):
        for i, (cfg, _, _) in enumerate(runs):
            seconds[i].append(train(cfg))
    out = [BenchRun(label, there, tuple(s)) for (_, there, label), s in zip(runs, seconds)]
    speed = Speed(factor=statistics.median(r.ratio for r in out),
                  spread=max(max(r.seconds) / min(r.seconds) - 1 for r in out),
                  load=max(before, loadavg()[0]), cores=_cores(), runs=len(out),
                  measured=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"), machine=_machine())
    return speed, out
