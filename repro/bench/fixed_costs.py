"""`repro bench fixed-costs`: each run's fixed cost and first epoch against its steady state, from a results folder.

The device check trains Table 2 at full size on synthetic data (tools/device/check.sh) and reads back, per
run, what its record and the command's timings.json (repro.results.timings) hold:

    data       making or loading its data ("data preparation")
    build      building the model and compiling its backbone ("model building")
    first      its first epoch's seconds (training and evaluation), compilation for new shapes included
    steady     the median of its later epochs (None with one epoch)

A fixed cost the size of an epoch, paid by every run, is what caching the data and the compiled graphs
(repro.data.synthetic, repro.runtime.compile_cache) removes; a first epoch well above the steady one is
recompilation or warm-up. Torch-free.
"""

from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from repro.execution.files import read_json, runs_dir
from repro.results.timings import load, timings_path


@dataclass(frozen=True)
class RunCost:
    label: str
    hash: str
    data_s: float
    build_s: float
    first_epoch_s: float
    steady_epoch_s: float | None
    run_s: float

    @property
    def fixed_s(self) -> float:
        return self.data_s + self.build_s

    @property
    def first_over_steady(self) -> float | None:
        return self.first_epoch_s / self.steady_epoch_s if self.steady_epoch_s else None

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "fixed_s": self.fixed_s, "first_over_steady": self.first_over_steady}


class NoTimings(ValueError):
    """A results folder without the command's timings or the records of its runs; the message names the file."""


def fixed_costs(results_dir: Path, profile: str, command: str) -> list[RunCost]:
    """The runs `command` (e.g. "run table2") trained under `profile`, as their records and timings tell."""
    path = timings_path(results_dir, profile)
    doc = load(path)
    if doc is None or command not in doc["commands"]:
        known = ", ".join(sorted(doc["commands"])) if doc else "none"
        raise NoTimings(f"{path}: no timings of `repro {command}` (commands there: {known})")
    out = []
    for run in doc["commands"][command]["runs"]:
        record = read_json(runs_dir(results_dir) / f"{run['hash']}.json")
        if record is None or not record.get("history"):
            raise NoTimings(f"{runs_dir(results_dir) / (run['hash'] + '.json')}: no readable record with a history")
        epochs = [h["seconds"] for h in record["history"]]
        parts = run["parts"]
        part = lambda name: parts.get(name, {}).get("wall_s", 0.0)  # noqa: E731
        out.append(
            RunCost(
                run["label"],
                run["hash"],
                part("data preparation"),
                part("model building"),
                epochs[0],
                statistics.median(epochs[1:]) if len(epochs) > 1 else None,
                run["wall_s"],
            )
        )
    return out
