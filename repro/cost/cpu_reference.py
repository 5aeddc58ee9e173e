"""The CPU reference: what a CPU run costs on a machine of CI's kind, measured there and shipped as data.

A CPU that has trained nothing here yet (no run records to fit, repro.cost.fit) is priced by
`cpu_reference.json`, which `tools/write_cpu_reference.py` writes from the results folders of `repro
verify-all` at the shipped CPU profiles on one such machine. It holds

- each run's CPU seconds there, by config hash: a run it has is priced at what it took;
- the run model fitted to those runs (repro.cost.fit) in the units a cold estimate has without torch
  (the shipped multiply-adds scaled to the run's resolution, steps, one cost per run), for any other run;
- the command's phase rates fitted to the folders' timings.json (repro.cost.fit.fit_rates);

with the machine, the date and the commit they were measured on, which every figure priced by it names.
A faster or slower machine moves them all in proportion: this CPU's speed factor (repro.cost.calibration.Speed)
scales them.
tests/cost/test_reference.py refits the file's runs and checks that today's counts still price them.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from repro.core.package_data import shipped

REFERENCE_FILE = shipped("repro.cost", "cpu_reference.json")
SCHEMA = 1
RATE_NAMES = ("startup", "flop_model", "workers", "latency", "rest", "report")  # repro.cost.wall_time.Rates
# RunSample's keys in a run's entry, in its fields' order, and what each holds
RUN_KEYS = (("hash", str), ("label", str), ("macs", float), ("steps", int), ("cpu_s", float), ("wall_s", float))

# how an error names each `kind` need() reads (any other: "a number")
_EXPECTED: dict[type, str] = {str: "a string", dict: "an object", list: "a list", int: "a whole number"}


def need(
    obj: Any,
    key: str,
    kind: type,
    where: str = "",
    prefix: str = "",
    error: type[ValueError] = ValueError,
) -> Any:
    """obj[key] when it is of `kind` (a bool is no number; `float`: any number, as a float), else `error` naming the
    key path: how this file, the GPU reference and a calibration file are read (repro.cost.gpu_reference)."""
    value: Any = obj.get(key) if isinstance(obj, dict) else None
    fits = isinstance(value, (int, float) if kind is float else kind) and not isinstance(value, bool)
    if not fits:
        expected = _EXPECTED.get(kind, "a number")
        raise error(f"{prefix}key '{where}{key}': expected {expected}, got {value!r}")
    return float(value) if kind is float else value


@dataclass(frozen=True)
class RunSample:
    """One run of the reference machine: what the cold cost model sees of it, and the CPU seconds it took."""

    hash: str
    label: str  # "<table>/<row> seed <n> (<data>, <n> epochs)"
    macs: float  # repro.cost.estimate.RunWork.macs at shipped counts (area-scaled)
    steps: int
    cpu_s: float
    wall_s: float


@dataclass(frozen=True)
class CpuReference:
    machine: str  # "Intel(R) Xeon(R) Processor x2 (Linux)"
    measured: str  # the UTC date of the folders' newest run
    commit: str
    runs: tuple[RunSample, ...]
    macs_per_s: float  # the run model: seconds = macs / macs_per_s + steps x step_overhead_s + run_overhead_s
    step_overhead_s: float
    run_overhead_s: float
    cpu_share: float  # CPU seconds per wall second of a run there
    rates: dict[str, float]  # seconds per unit of each repro.cost.wall_time.Rates phase

    @property
    def source(self) -> str:
        return (
            f"reference, not measured here: {len(self.runs)} runs and the commands' phases measured on "
            f"{self.machine}, {self.measured}, commit {self.commit[:12]} (repro/cost/cpu_reference.json)"
        )


def parse(doc: Any) -> CpuReference:
    """The reference a JSON document holds; ValueError naming the key when it is not one."""
    if need(doc, "schema", int) != SCHEMA:
        raise ValueError(f"key 'schema': expected {SCHEMA}, got {doc['schema']!r}")
    model = need(doc, "run_model", dict)
    numbers = {
        k: need(model, k, float, "run_model.") for k in ("macs_per_s", "step_overhead_s", "run_overhead_s", "cpu_share")
    }
    if not numbers["macs_per_s"] > 0 or not numbers["cpu_share"] > 0:
        raise ValueError("keys 'run_model.macs_per_s' and 'run_model.cpu_share': expected positive numbers")
    rates = need(doc, "rates", dict)
    runs = tuple(
        RunSample(*(need(r, k, kind, f"runs[{i}].") for k, kind in RUN_KEYS))
        for i, r in enumerate(need(doc, "runs", list))
    )
    machine, measured, commit = (need(doc, k, str) for k in ("machine", "measured", "commit"))
    phases = {k: need(rates, k, float, "rates.") for k in RATE_NAMES if k in rates}
    return CpuReference(machine, measured, commit, runs, **numbers, rates=phases)


@lru_cache(maxsize=None)
def load(path: Path = REFERENCE_FILE) -> CpuReference | None:
    """The shipped reference, or None (with a warning naming the file) when it is missing or damaged."""
    try:
        return parse(json.loads(path.read_text(encoding="utf-8")))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        print(
            f"warning: ignoring the CPU reference {path} ({exc}); CPU figures fall back to a per-core guess",
            file=sys.stderr,
        )
        return None
