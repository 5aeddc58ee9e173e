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

Each comes with the load it was measured at (the 1-minute load average at its start and end, and the cores, that
a record's provenance and a timings.json entry store), and is `busy` when that exceeded the cores: the rule
`repro bench speed` keeps a measurement by. The fit (repro.cost.fit) leaves busy ones out. One written before
the load was stored counts as quiet: nothing says otherwise.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from repro.core import jsonfile
from repro.plan.run_config import RunConfig

if TYPE_CHECKING:
    from repro.plan.table_plan import Plans, TablePlan

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
    load: float | None = None  # the higher 1-minute load average of its start and end; None: not stored
    busy: bool = False  # measured while the load average exceeded the cores


@dataclass(frozen=True)
class MeasuredTable:
    manifest: str
    wall_s: float
    phases: dict[str, float]  # phase -> wall seconds (timings.json); empty when derived from file times
    source: str  # "timings.json (<command>)" or "file times"
    command: str = ""  # the command it was measured in ("verify-all", "run table1"); "" from file times
    load: float | None = None  # its command's (or its results.json's), as MeasuredRun's
    busy: bool = False


@dataclass(frozen=True)
class MeasuredCommand:
    command: str  # "verify-all", "run table1", ...
    wall_s: float
    phases: dict[str, float]  # phase -> wall seconds, summed over tables
    tables: tuple[str, ...]
    started: float | None = None  # POSIX seconds: the runs recorded before it were reused, not trained
    load: float | None = None  # as MeasuredRun's
    busy: bool = False

    def reused(self, runs: dict[str, MeasuredRun]) -> frozenset[str]:
        """The runs recorded before it started: reused by it, not trained."""
        return frozenset(h for h, r in runs.items() if self.started is not None and r.ended < self.started)

    def plans(self, plans: Plans, profile: str) -> list[TablePlan]:
        """The plans, at `profile`, of the tables it ran."""
        return [plans.by_key[(t, profile)] for t in self.tables if (t, profile) in plans.by_key]


def load_of(doc: dict[str, Any]) -> tuple[float | None, bool]:
    """(the higher load average, whether it exceeded the cores) a record's provenance or a timings.json entry
    stores; (None, False) where it stores none."""
    loads, cores = doc.get("load_average"), doc.get("cores")
    if not isinstance(loads, list) or not loads or not all(isinstance(x, (int, float)) for x in loads):
        return None, False
    return float(max(loads)), isinstance(cores, int) and max(loads) > cores


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
    found = _THREADS.search(str(prov.get("device", "")))
    threads = int(found.group(1)) if found else None
    cpu = record.get("cpu_seconds", ((record.get("timings") or {}).get("run") or {}).get("cpu_s"))
    cpu = float(cpu) if isinstance(cpu, (int, float)) and cpu > 0 else None
    label, device = str(record.get("label", "")), str(prov.get("device_type", "cpu"))
    h = record.get("config_hash", cfg.hash)
    return MeasuredRun(h, cfg, label.split("/")[0], train, wall, cpu, device, threads, ended, label, *load_of(prov))


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


def _timings(path: Path) -> tuple[dict[str, MeasuredCommand], dict[str, MeasuredTable]]:
    """Each command's entry of a timings.json, and each table's phases from the latest command that ran it; nothing
    when absent or of a shape not understood."""
    try:
        doc = jsonfile.load(path)
        commands, tables = {}, {}
        for name, entry in sorted(doc["commands"].items(), key=lambda kv: str(kv[1].get("started", ""))):
            if entry.get("interrupted"):  # stopped part-way: neither its phases nor its wall time is the command's
                continue
            phases: dict[str, float] = {}
            per: dict[str, dict[str, float]] = {}
            for p in entry["phases"]:
                for into in (phases, per.setdefault(p["table"], {}) if p.get("table") else {}):
                    into[p["phase"]] = into.get(p["phase"], 0.0) + float(p["wall_s"])
            load = load_of(entry)
            commands[name] = MeasuredCommand(
                name, float(entry["wall_s"]), phases, tuple(per), _time(entry.get("started")), *load
            )
            for table, own in per.items():
                tables[table] = MeasuredTable(table, sum(own.values()), own, f"timings.json ({name})", name, *load)
        return commands, tables
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}, {}


def _from_file_times(profile_dir: Path, runs: dict[str, MeasuredRun]) -> dict[str, MeasuredTable]:
    ends: list[tuple[float, str, list[MeasuredRun], tuple]] = []
    for path in profile_dir.glob("*/results.json"):
        try:
            result = jsonfile.load(path, jsonfile.RESULT_MAX_BYTES)
            end = _time(result["provenance"]["time"])
            hashes = {r["hash"] for rs in (result.get("details") or {}).get("runs", {}).values() for r in rs}
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if end is not None:
            own = [runs[h] for h in hashes if h in runs]
            ends.append((end, result["manifest"], own, load_of(result["provenance"])))
    ends.sort(key=lambda e: e[0])
    out = {}
    for (prev_end, *_), (end, manifest, own, load) in zip(ends, ends[1:]):
        mine = [r for r in own if prev_end < r.ended <= end]  # trained by this table, in this command
        first_activity = min((r.ended - r.wall_s for r in mine), default=end)  # its first run's start, or its end
        if first_activity - prev_end <= MAX_GAP_S:
            out[manifest] = MeasuredTable(manifest, end - prev_end, {}, "file times", "", *load)
    return out


def read_folder(results_dir: Path) -> FolderTimes:
    results_dir = Path(results_dir)
    times = FolderTimes(read_runs(results_dir))
    if not results_dir.is_dir():
        return times
    for profile_dir in sorted(p for p in results_dir.iterdir() if p.is_dir() and p.name != "runs"):
        commands, tables = _timings(profile_dir / TIMINGS_FILE)
        for manifest, table in _from_file_times(profile_dir, times.runs).items():
            tables.setdefault(manifest, table)
        if tables:
            times.tables[profile_dir.name] = tables
        if commands:
            times.commands[profile_dir.name] = commands
    return times


def read_folders(results_dirs: list[Path]) -> FolderTimes:
    """Several results folders read as one (the CPU reference is built from two)."""
    times = FolderTimes()
    for folder in results_dirs:
        one = read_folder(folder)
        times.runs.update(one.runs)
        for profile, tables in one.tables.items():
            times.tables.setdefault(profile, {}).update(tables)
        for profile, commands in one.commands.items():
            times.commands.setdefault(profile, {}).update(commands)
    return times
