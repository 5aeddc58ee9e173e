"""What a results folder measured, as data the cost model is fitted to and compared with. Torch-free.

- Every run record: its config, the seconds of its epochs (`train_seconds`: training and evaluation),
  of the whole run in its process (`wall_seconds`) and the CPU seconds it took (`cpu_seconds`, or the
  run's part of repro.results.timings' `timings`), the device and, on a CPU, the intra-op threads it ran on.
- Per profile, each command's phases from `<profile>/timings.json` (repro.results.timings: wall seconds per
  phase and table, and the command's total) when the folder has one.
- Otherwise each table's wall time from what every folder has: the times its results.json and run
  records were written (to the second). Tables that ran one after another in one command end where
  the next one starts, so a table's time is from the end of the table before it to its own end; the
  first table of a command, and a table that started none of its own runs (or ended, if it trains
  none) within `MAX_GAP_S` of the one before, are not measured that way: their start is unknown.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from repro.core import jsonfile
from repro.plan.run_config import RunConfig

TIMINGS_FILE = "timings.json"  # repro.results.timings writes it into each profile's folder
MAX_GAP_S = 120.0  # a longer pause between two tables' files: not one command, the table's start is unknown
_THREADS = re.compile(r"(\d+) intra-op thread")


@dataclass(frozen=True)
class MeasuredRun:
    hash: str
    cfg: RunConfig
    manifest: str  # the table whose label it was trained under ("table1/row seed 0")
    train_s: float
    wall_s: float
    cpu_s: float | None  # CPU seconds of the run's process while it ran; None in records from before they were kept
    device: str  # "cpu" or "cuda"
    threads: int | None  # a CPU run's intra-op threads
    ended: float  # POSIX seconds
    label: str = ""  # the record's "<table>/<row> seed <n>"


@dataclass(frozen=True)
class MeasuredTable:
    manifest: str
    wall_s: float
    phases: dict[str, float]  # phase -> wall seconds (timings.json); empty when derived from file times
    source: str  # "timings.json (<command>)" or "file times"
    command: str = ""  # the command it was measured in ("verify-all", "run table1"); "" from file times


@dataclass(frozen=True)
class MeasuredCommand:
    command: str  # "verify-all", "run table1", ...
    wall_s: float
    phases: dict[str, float]  # phase -> wall seconds, summed over tables
    tables: tuple[str, ...]
    started: float | None = None  # POSIX seconds: the runs recorded before it were reused, not trained


@dataclass
class FolderTimes:
    """Everything measured in one results folder (runs shared by every profile; tables and commands per profile)."""

    runs: dict[str, MeasuredRun] = field(default_factory=dict)
    tables: dict[str, dict[str, MeasuredTable]] = field(default_factory=dict)  # profile -> manifest -> table
    commands: dict[str, dict[str, MeasuredCommand]] = field(default_factory=dict)  # profile -> command -> it

    def runs_of(self, device: str) -> list[MeasuredRun]:
        return [r for r in self.runs.values() if r.device == device]


def _time(text: Any) -> float | None:
    try:
        return dt.datetime.fromisoformat(str(text)).timestamp() if text else None
    except ValueError:
        return None


def _run(record: dict[str, Any]) -> MeasuredRun | None:
    try:
        cfg = RunConfig.from_dict(record["config"])
        prov = record.get("provenance") or {}
        ended = _time(prov.get("time"))
        train, wall = float(record["train_seconds"]), float(record["wall_seconds"])
    except (KeyError, TypeError, ValueError):
        return None  # an older or damaged record: repro.execution sets damaged ones aside when it next runs
    if ended is None or not (0 < train <= wall) or record.get("resumed_from_epoch"):
        return None  # a resumed run's seconds cover part of its epochs only
    threads = _THREADS.search(str(prov.get("device", "")))
    cpu = record.get("cpu_seconds", ((record.get("timings") or {}).get("run") or {}).get("cpu_s"))
    cpu = float(cpu) if isinstance(cpu, (int, float)) and cpu > 0 else None
    return MeasuredRun(record.get("config_hash", cfg.hash), cfg, str(record.get("label", "")).split("/")[0], train,
                       wall, cpu, str(prov.get("device_type", "cpu")), int(threads.group(1)) if threads else None, ended,
                       str(record.get("label", "")))


def read_runs(results_dir: Path) -> dict[str, MeasuredRun]:
    out = {}
    for path in sorted((Path(results_dir) / "runs").glob("*.json")):
        if path.name.endswith(".failed.json"):
            continue
        try:
            run = _run(jsonfile.load(path, jsonfile.RECORD_MAX_BYTES))
        except (OSError, ValueError):  # JsonUnreadable is a ValueError
            continue
        if run is not None:
            out[run.hash] = run
    return out


def _timings(path: Path) -> dict[str, MeasuredCommand] | None:
    """Each command's entry of a timings.json, or None when absent or of a shape not understood."""
    try:
        doc = jsonfile.load(path)
        commands = {}
        for name, entry in doc["commands"].items():
            phases: dict[str, float] = {}
            for p in entry["phases"]:
                phases[p["phase"]] = phases.get(p["phase"], 0.0) + float(p["wall_s"])
            tables = tuple(dict.fromkeys(p["table"] for p in entry["phases"] if p.get("table")))
            commands[name] = MeasuredCommand(name, float(entry["wall_s"]), phases, tables, _time(entry.get("started")))
        return commands
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def _timings_tables(path: Path) -> dict[str, MeasuredTable]:
    """Each table's phases from the latest command that ran it."""
    try:
        doc = jsonfile.load(path)
        entries = sorted(doc["commands"].items(), key=lambda kv: str(kv[1].get("started", "")))
        out: dict[str, MeasuredTable] = {}
        for name, entry in entries:
            per: dict[str, dict[str, float]] = {}
            for p in entry["phases"]:
                if p.get("table"):
                    phases = per.setdefault(p["table"], {})
                    phases[p["phase"]] = phases.get(p["phase"], 0.0) + float(p["wall_s"])
            for table, phases in per.items():
                out[table] = MeasuredTable(table, sum(phases.values()), phases, f"timings.json ({name})", name)
        return out
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}


def _from_file_times(profile_dir: Path, runs: dict[str, MeasuredRun]) -> dict[str, MeasuredTable]:
    ends: list[tuple[float, str, list[MeasuredRun]]] = []
    for path in profile_dir.glob("*/results.json"):
        try:
            result = jsonfile.load(path, jsonfile.RESULT_MAX_BYTES)
            end = _time(result["provenance"]["time"])
            hashes = {r["hash"] for rs in (result.get("details") or {}).get("runs", {}).values() for r in rs}
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if end is not None:
            ends.append((end, result["manifest"], [runs[h] for h in hashes if h in runs]))
    ends.sort()
    out = {}
    for (prev_end, _, _), (end, manifest, own) in zip(ends, ends[1:]):
        mine = [r for r in own if prev_end < r.ended <= end]  # trained by this table, in this command
        first_activity = min((r.ended - r.wall_s for r in mine), default=end)  # its first run's start, or its end
        if first_activity - prev_end <= MAX_GAP_S:
            out[manifest] = MeasuredTable(manifest, end - prev_end, {}, "file times")
    return out


def read_folder(results_dir: Path) -> FolderTimes:
    results_dir = Path(results_dir)
    times = FolderTimes(read_runs(results_dir))
    if not results_dir.is_dir():
        return times
    for profile_dir in sorted(p for p in results_dir.iterdir() if p.is_dir() and p.name != "runs"):
        commands = _timings(profile_dir / TIMINGS_FILE)
        tables = _timings_tables(profile_dir / TIMINGS_FILE) if commands else {}
        for manifest, table in _from_file_times(profile_dir, times.runs).items():
            tables.setdefault(manifest, table)
        if tables:
            times.tables[profile_dir.name] = tables
        if commands:
            times.commands[profile_dir.name] = commands
    return times
