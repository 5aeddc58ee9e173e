"""This CPU's speed against the CPU reference's machine: one factor that scales every reference figure.

The CPU reference (repro.cost.cpu_reference) holds what runs cost on one machine. Another machine is priced by the
same run model and phase rates times a speed factor, never by a rate of its own: a single FLOP rate cannot price
small runs, whose cost is per-step overhead. `repro bench speed` (repro.bench.speed) measures it: the median ratio
of a few reference runs' CPU seconds here over there. A measurement is quiet when the load average (1 minute, the
higher of before and after) is at most the cores and the repetitions of a run at most MAX_SPREAD apart. Only a
quiet one is kept (speed.json in the cache, by CPU model and cores), and for MAX_AGE_DAYS: a machine measured while
busy looks slow, and one busy run must not price every later estimate. Without a kept measurement the reference's
figures stand unscaled; the From column says which (docs/cost-model.md).
"""

from __future__ import annotations

import datetime as dt
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

from repro.core.cache import read_json, write_json
from repro.core.settings import DEFAULT_CACHE

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
        return (
            f"speed factor {self.factor:.2f} (this CPU's seconds / the reference machine's, {self.runs} runs, "
            f"spread {self.spread:.0%}, load {self.load:.1f} on {self.cores} cores, {self.measured[:16]} UTC)"
        )


def this_machine() -> str:
    """This machine's key: its CPU model, cores and OS (repro.results.timings)."""
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
    entry = doc.get(this_machine()) if isinstance(doc, dict) else None
    if entry is None:
        return None
    try:
        speed = Speed(**entry)
        measured = dt.datetime.fromisoformat(speed.measured)
        if not (speed.factor > 0 and speed.quiet):
            raise ValueError("expected a positive factor measured on a quiet machine")
    except (TypeError, ValueError) as exc:
        print(
            f"warning: ignoring the speed measurement in {path}, key {this_machine()!r} ({exc}); "
            "`repro bench speed` measures it again",
            file=sys.stderr,
        )
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
