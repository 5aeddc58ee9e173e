"""`repro bench smoke`: the smoke profile end to end, cold, with where its time went and the ratio to last time.

It runs `repro verify-all --profile smoke` as a child process in a fresh folder with empty caches
($REPRO_CACHE, $XDG_CACHE_HOME and matplotlib's inside that folder), as a first-time evaluator would,
and measures the child's wall time and CPU seconds (user + system of it and every process it waited
for, from wait4). The phase table comes from the timings.json the run writes (repro.results.timings). With
`--again`, verify-all runs once more into the same folder and caches: every run reused (the target: at most 15 s
on a quiet 2-core machine), and how much of its wall time timings.json accounts for. Each result is appended to a
history file; the ratio is to the latest earlier entry of the same machine (CPU model, cores and OS) and kind.
Torch-free: the work happens in the child.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from repro.core.fsutil import atomic_write_json
from repro.results.timings import load, machine, machine_key, timings_path

PROFILE = "smoke"


@dataclass(frozen=True)
class SmokeRun:
    folder: Path  # results/ and cache/ of the run, and its log
    returncode: int
    wall_s: float
    user_s: float
    sys_s: float
    max_rss_mb: float
    load: tuple[float, float]  # 1-minute load average before and after
    timings: dict[str, Any] | None  # verify-all's entry of timings.json

    @property
    def cpu_s(self) -> float:
        return self.user_s + self.sys_s


def _load_average() -> float:
    try:
        return os.getloadavg()[0]
    except OSError:
        return float("nan")


def run_smoke(
    folder: Path, warm_cache: Path | None = None, extra: list[str] | None = None, log: str = "verify-all.log"
) -> SmokeRun:
    """verify-all at the smoke profile into folder/results, its cache folder/cache (or `warm_cache`); run again
    into the same folder, it reuses every run."""
    folder.mkdir(parents=True, exist_ok=True)
    results = folder / "results"
    env = {**os.environ, "REPRO_CACHE": str(warm_cache or folder / "cache"), "REPRO_RESULTS": str(results)}
    if warm_cache is None:  # every cache the run reads starts empty, matplotlib's font list too (docs/performance.md)
        env.update(XDG_CACHE_HOME=str(folder / "xdg-cache"), MPLCONFIGDIR=str(folder / "xdg-cache" / "matplotlib"))
    env.pop("REPRO_PROFILE", None)
    command = [
        sys.executable,
        "-m",
        "repro",
        "verify-all",
        "--profile",
        PROFILE,
        "--results-dir",
        str(results),
        *(extra or []),
    ]
    before = _load_average()
    started = time.perf_counter()
    with open(folder / log, "wb") as out:
        proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env)
        try:
            _, status, usage = os.wait4(proc.pid, 0)  # its rusage covers every process it waited for
        except KeyboardInterrupt:  # the terminal's Ctrl-C reached the child too: let it stop
            proc.wait()
            raise
    wall = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    doc = load(timings_path(results, PROFILE))
    entry = (doc or {}).get("commands", {}).get("verify-all")
    return SmokeRun(
        folder,
        proc.returncode,
        wall,
        usage.ru_utime,
        usage.ru_stime,
        usage.ru_maxrss / 1024,
        (before, _load_average()),
        entry,
    )


def history_entry(run: SmokeRun, cold: bool, reused: bool = False) -> dict[str, Any]:
    from repro.results.provenance import git_commit

    return {
        "time": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "machine": machine(),
        "commit": git_commit(),
        "cold": cold,
        "reused": reused,
        "returncode": run.returncode,
        "wall_s": round(run.wall_s, 2),
        "timed_s": (run.timings or {}).get("wall_s"),
        "cpu_s": round(run.cpu_s, 2),
        "user_s": round(run.user_s, 2),
        "sys_s": round(run.sys_s, 2),
        "max_rss_mb": round(run.max_rss_mb, 1),
        "load": [round(x, 2) for x in run.load],
        "phases": (run.timings or {}).get("phases", []),
    }


def read_history(path: Path) -> list[dict[str, Any]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    return [e for e in data.get("runs", []) if isinstance(e, dict)] if isinstance(data, dict) else []


def previous(history: list[dict[str, Any]], entry: dict[str, Any]) -> dict[str, Any] | None:
    """The latest earlier entry of the same machine, cache state and kind (every run reused or not)."""
    same = [
        e
        for e in history
        if machine_key(e.get("machine", {})) == machine_key(entry["machine"])
        and e.get("cold") == entry["cold"]
        and e.get("reused", False) == entry.get("reused", False)
        and isinstance(e.get("cpu_s"), (int, float))
    ]
    return same[-1] if same else None


def append_history(path: Path, entry: dict[str, Any]) -> None:
    atomic_write_json(path, {"runs": [*read_history(path), entry]})
