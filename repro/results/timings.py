"""Where a command's time goes, as data: wall and CPU seconds per phase, in <results>/<profile>/timings.json.

A command opens a recorder (`recording`); code below it marks its phases with `phase(name, table)`, which
does nothing when no recorder is open (library use, tests). Phases nest exclusively: a second counts once,
for the innermost phase open, so the phases and "other" add up to the command's total.

CPU seconds are the process tree's: this process, its reaped children, and its live multiprocessing
children (the training workers, read from /proc on Linux; elsewhere a live worker is counted when it
exits). A run reports its own parts (data preparation, model building, epochs, checkpoints) in its record
(`Stopwatch`, key "timings"); the recorder lists those of the runs the command trained.

timings.json holds the latest entry of each command ("verify-all", "run table1", "report", ...).
Torch-free.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import multiprocessing
import os
import platform
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Hashable, Iterator, cast

from repro.core import jsonfile
from repro.core.fsutil import FolderWriter

TIMINGS_SCHEMA = 1
FILE_NAME = "timings.json"
STARTUP = "start-up and imports"
# The phases in the order a command meets them; `phase` accepts these names only, so a typo fails loudly.
PHASES = (
    STARTUP,
    "FLOP check",
    "FLOP counting",
    "data checks",
    "stand-in pretraining",
    "training",
    "latency",
    "claims",
    "tables",
    "figures",
    "report",
    "timings",
)
# The parts of one run, timed in the process that trains it (repro.train.loop).
RUN_PARTS = ("data preparation", "model building", "epochs", "checkpoints")


# --------------------------------------------------------------------------- CPU clocks
def _ticks() -> float:
    try:
        return float(os.sysconf("SC_CLK_TCK"))
    except (AttributeError, ValueError, OSError):
        return 100.0


def _proc_fields(pid: int | str) -> list[str] | None:
    """/proc/<pid>/stat's fields after the command name (field 3 onwards), or None off Linux or once gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text.rsplit(")", 1)[1].split()


def _live_child_cpu(pid: int) -> float:
    fields = _proc_fields(pid)
    if fields is None:
        return 0.0
    return sum(int(x) for x in fields[11:15]) / _ticks()  # utime, stime, cutime, cstime


def tree_cpu() -> float:
    """CPU seconds (user + system) of this process, its reaped children and its live multiprocessing children."""
    live = multiprocessing.active_children()  # first: reaps the finished ones into os.times()' children
    t = os.times()
    children = sum(_live_child_cpu(p.pid) for p in live if p.pid is not None)  # a started child has its pid
    return t.user + t.system + t.children_user + t.children_system + children


def interpreter_age() -> float:
    """Seconds since this interpreter started (repro.STARTED), never more than the process's age where known."""
    from repro import STARTED

    age = max(0.0, time.time() - STARTED)
    process = process_age()
    return age if process is None else min(age, process)


def process_age() -> float | None:
    """Seconds since this process started (from /proc), or None where unknown. A shell that runs a command last
    runs it in its own process: the shell's start, not the command's."""
    fields = _proc_fields("self")
    try:
        boot = next(
            float(line.split()[1]) for line in Path("/proc/stat").read_text().splitlines() if line.startswith("btime ")
        )
    except (OSError, StopIteration, ValueError):
        return None
    if fields is None:
        return None
    return max(0.0, time.time() - (boot + int(fields[19]) / _ticks()))  # field 22: start time in ticks after boot


def machine() -> dict[str, Any]:
    """What makes two records comparable: the CPU model, its cores, the OS and Python."""
    model = platform.processor() or platform.machine()
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return {"cpu": model, "cores": cores, "system": platform.system(), "python": platform.python_version()}


def machine_key(m: dict[str, Any]) -> str:
    return f"{m.get('cpu')} x{m.get('cores')} ({m.get('system')})"


# --------------------------------------------------------------------------- the load
def load_average() -> float | None:
    """The machine's 1-minute load average now, or None where the system has none."""
    try:
        return round(os.getloadavg()[0], 2)
    except (AttributeError, OSError):
        return None


def machine_load(started: float | None = None) -> dict[str, object]:
    """The load the numbers were measured under: the 1-minute load average at their start (`started`, where
    known) and now, and the cores. Not part of any run's identity (its hash is its config's); the cost model
    leaves wall times measured above the cores out of its fit (repro.cost.measured)."""
    loads = [x for x in (started, load_average()) if x is not None]
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return {"load_average": loads, "cores": cores} if loads else {}


# --------------------------------------------------------------------------- exclusive clocks
class Clocks:
    """Wall and CPU seconds by key; a part started inside another pauses it, so each second counts once."""

    def __init__(self, cpu: Callable[[], float]) -> None:
        self.cpu = cpu
        self.totals: dict[Hashable, dict[str, float]] = {}
        self._stack: list[list[Any]] = []  # [key, wall, cpu] of the open parts, innermost last

    def add(self, key: Hashable, wall_s: float, cpu_s: float, count: int = 1) -> None:
        t = self.totals.setdefault(key, {"wall_s": 0.0, "cpu_s": 0.0, "count": 0})
        t["wall_s"] += wall_s
        t["cpu_s"] += cpu_s
        t["count"] += count

    def start(self, key: Hashable) -> None:
        wall, cpu = time.perf_counter(), self.cpu()
        if self._stack:
            outer = self._stack[-1]
            self.add(outer[0], wall - outer[1], cpu - outer[2], count=0)
        self._stack.append([key, wall, cpu])

    def stop(self) -> None:
        wall, cpu = time.perf_counter(), self.cpu()
        key, w, c = self._stack.pop()
        self.add(key, wall - w, cpu - c)
        if self._stack:  # the outer part counts again from now
            self._stack[-1][1:] = [wall, cpu]

    @contextlib.contextmanager
    def part(self, key: Hashable) -> Iterator[None]:
        self.start(key)
        try:
            yield
        finally:
            self.stop()


class Stopwatch(Clocks):
    """A run's parts, in the process that trains it (CPU: every thread of that process)."""

    def __init__(self) -> None:
        super().__init__(time.process_time)

    def start(self, key: Hashable) -> None:
        if key not in RUN_PARTS:
            raise KeyError(f"unknown run part {key!r}; one of {', '.join(RUN_PARTS)}")
        super().start(key)

    def as_dict(self) -> dict[str, dict[str, float]]:
        return {str(k): {"wall_s": v["wall_s"], "cpu_s": v["cpu_s"]} for k, v in self.totals.items()}


# --------------------------------------------------------------------------- the recorder
class Recorder(Clocks):
    """One command's phases by (phase, table), and the runs it trained."""

    def __init__(self, command: str, profile: str) -> None:
        super().__init__(tree_cpu)
        self.command, self.profile = command, profile
        self.started = time.time()
        self.load_at_start = load_average()  # the load the command met, before its own work adds to it
        self.runs: list[dict[str, Any]] = []
        self.results_dir: Path | None = None  # set by `recording`
        self.when_done: list[Callable[[], None]] = []  # called once timings.json holds the whole command
        self.interrupted = False  # Ctrl-C or SIGTERM ended it: its phases are part of the work (no fit reads them)
        self._wall0, self._cpu0 = time.perf_counter(), tree_cpu()
        age = interpreter_age()  # the interpreter's start and the command line's imports, before this recorder
        t = os.times()
        self.add((STARTUP, ""), age, t.user + t.system)
        self._wall0 -= age
        self._cpu0 -= t.user + t.system

    def start(self, key: Hashable) -> None:
        if not isinstance(key, tuple) or key[0] not in PHASES:
            raise KeyError(f"unknown phase {key!r}; one of {', '.join(PHASES)}")
        super().start(key)

    def phase(self, name: str, table: str = ""):
        return self.part((name, table))

    def add_runs(self, table: str, records: list[dict[str, Any]]) -> None:
        """The runs this command trained for `table`: their parts, as their records give them."""
        for r in records:
            t = r.get("timings") or {}
            self.runs.append(
                {
                    "table": table,
                    "label": r.get("label", ""),
                    "hash": r.get("config_hash", ""),
                    "wall_s": float(r.get("wall_seconds") or 0.0),
                    "cpu_s": float((t.get("run") or {}).get("cpu_s", 0.0)),
                    "parts": {k: v for k, v in t.items() if k in RUN_PARTS},
                }
            )

    def to_dict(self) -> dict[str, Any]:
        wall, cpu = time.perf_counter() - self._wall0, tree_cpu() - self._cpu0
        keyed = cast(dict[tuple[str, str], dict[str, float]], self.totals)  # (phase, table): `start` refuses others
        order = sorted(keyed.items(), key=lambda kv: (PHASES.index(kv[0][0]), kv[0][1]))
        phases = [
            {
                "phase": n,
                "table": t,
                "wall_s": round(v["wall_s"], 3),
                "cpu_s": round(v["cpu_s"], 3),
                "count": int(v["count"]),
            }
            for (n, t), v in order
        ]
        return {
            "command": self.command,
            "profile": self.profile,
            "machine": machine(),
            "started": dt.datetime.fromtimestamp(self.started, dt.timezone.utc).isoformat(timespec="seconds"),
            "wall_s": round(wall, 3),
            "cpu_s": round(cpu, 3),
            **machine_load(self.load_at_start),
            "phases": phases,
            "runs": self.runs,
            **({"interrupted": True} if self.interrupted else {}),
        }


_current: list[Recorder] = []


def current() -> Recorder | None:
    return _current[-1] if _current else None


@contextlib.contextmanager
def phase(name: str, table: str = "") -> Iterator[None]:
    """Time a phase of the command being recorded; nothing when none is."""
    rec = current()
    if rec is None:
        if name not in PHASES:
            raise KeyError(f"unknown phase {name!r}; one of {', '.join(PHASES)}")
        yield
        return
    with rec.phase(name, table):
        yield


def add_runs(table: str, records: list[dict[str, Any]]) -> None:
    rec = current()
    if rec is not None:
        rec.add_runs(table, records)


def timings_path(results_dir: Path, profile: str) -> Path:
    return Path(results_dir) / profile / FILE_NAME


@contextlib.contextmanager
def recording(command: str, results_dir: Path, profile: str) -> Iterator[Recorder]:
    """Record the command's phases; timings.json is written when it ends, however it ends."""
    rec = Recorder(command, profile)
    rec.results_dir = Path(results_dir)
    _current.append(rec)
    try:
        yield rec
    except KeyboardInterrupt:
        rec.interrupted = True
        raise
    finally:
        _current.remove(rec)
        write(rec, results_dir)
        for done in rec.when_done:
            with contextlib.suppress(OSError):  # a report that cannot be rewritten keeps its earlier table
                done()


def when_done(fn: Callable[[], None]) -> None:
    """Call `fn` when the command being recorded ends, after timings.json holds all of it (the report's "Where the
    time went" is written again then, whole); nothing when no command is recorded."""
    rec = current()
    if rec is not None:
        rec.when_done.append(fn)


def flush() -> None:
    """Write the phases recorded so far (the report shows them while its own rendering is still running)."""
    rec = current()
    if rec is not None and rec.results_dir is not None:
        write(rec, rec.results_dir)


def write(rec: Recorder, results_dir: Path) -> Path:
    """Merge the recorder's entry into the profile's timings.json (the latest entry of each command)."""
    path = timings_path(results_dir, rec.profile)
    doc = load(path) or {"schema": TIMINGS_SCHEMA, "commands": {}}
    doc["commands"][rec.command] = rec.to_dict()
    with contextlib.suppress(OSError):  # a results folder that cannot be written costs the timings only
        FolderWriter(results_dir).write_json(path, doc)
    return path


def load(path: Path) -> dict[str, Any] | None:
    """timings.json, or None when absent, unreadable or of another schema."""
    try:
        doc = jsonfile.load(path)
    except (FileNotFoundError, jsonfile.JsonUnreadable):
        return None
    if not isinstance(doc, dict) or doc.get("schema") != TIMINGS_SCHEMA or not isinstance(doc.get("commands"), dict):
        return None
    return doc


# --------------------------------------------------------------------------- the phase table
@dataclass(frozen=True)
class PhaseRow:
    phase: str
    items: str  # what the phase covered: "12 tables", "134 runs"
    wall_s: float | None  # None for a run part: runs overlap on parallel workers
    cpu_s: float
    most: str  # where most of its CPU went, e.g. "table4 (41%)"


def _share(parts: dict[str, float], total: float) -> str:
    if not parts or total <= 0:
        return ""
    name, value = max(parts.items(), key=lambda kv: kv[1])
    return f"{name} ({value / total:.0%})" if len(parts) > 1 else name


def phase_rows(entry: dict[str, Any]) -> list[PhaseRow]:
    """One row per phase (summed over tables), the runs' parts under training, what no phase covered, the total."""
    rows: list[PhaseRow] = []
    by_phase: dict[str, list[dict[str, Any]]] = {}
    for p in entry["phases"]:
        by_phase.setdefault(p["phase"], []).append(p)
    runs = entry.get("runs", [])
    for name in PHASES:
        items = by_phase.get(name, [])
        if not items or all(p["wall_s"] < 0.05 and p["cpu_s"] < 0.05 for p in items):
            continue  # a phase with nothing to do here (no dataset to check at a synthetic profile)
        cpu = sum(p["cpu_s"] for p in items)
        tables = {p["table"]: p["cpu_s"] for p in items if p["table"]}
        what = f"{len(tables)} tables" if len(tables) > 1 else next(iter(tables), "")
        if name == "training" and runs:
            what = f"{len(runs)} runs" + (f", {len(tables)} tables" if len(tables) > 1 else "")
        rows.append(PhaseRow(name, what, sum(p["wall_s"] for p in items), cpu, _share(tables, cpu)))
        if name == "training" and runs:
            for part in RUN_PARTS:
                per_table: dict[str, float] = {}
                for r in runs:
                    if part in r["parts"]:
                        per_table[r["table"]] = per_table.get(r["table"], 0.0) + r["parts"][part]["cpu_s"]
                if per_table:
                    total = sum(per_table.values())
                    rows.append(PhaseRow(f"  {part}", "", None, total, _share(per_table, total)))
    covered_wall = sum(p["wall_s"] for p in entry["phases"])
    covered_cpu = sum(p["cpu_s"] for p in entry["phases"])
    rows.append(
        PhaseRow("other", "", max(0.0, entry["wall_s"] - covered_wall), max(0.0, entry["cpu_s"] - covered_cpu), "")
    )
    rows.append(PhaseRow("total", entry["command"], entry["wall_s"], entry["cpu_s"], ""))
    return rows


def report_entry(doc: dict[str, Any] | None) -> dict[str, Any] | None:
    """The entry a report shows: verify-all's, else the latest command's."""
    if not doc or not doc["commands"]:
        return None
    commands = doc["commands"]
    return commands.get("verify-all") or max(commands.values(), key=lambda e: e.get("started", ""))
