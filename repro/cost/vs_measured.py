"""Estimated against measured: each table's and each command's wall time, as `repro list`, the report and
`repro bench estimates` show them. Torch-free when the counts are cached.

A table's estimate is its part of the command it was measured in (repro.cost.wall_time): within
`verify-all` its FLOP counts were made by the FLOP check, and runs another table trained first are not
its own. What the table measured comes from the results folder (repro.cost.measured): timings.json's
phases, else the file times.
"""

from __future__ import annotations

from dataclasses import dataclass

from repro.cost.wall_time import Rates, command_time
from repro.cost.estimate import CostModel, duration
from repro.cost.measured import FolderTimes
from repro.plan.table_plan import Plans


@dataclass(frozen=True)
class Compared:
    profile: str
    what: str  # a table id, or a command ("verify-all", "run table1")
    estimated_s: float
    basis: str  # of the estimate: fitted, measured or reference
    measured_s: float | None
    source: str  # where the measured figure comes from

    @property
    def ratio(self) -> float | None:
        return self.estimated_s / self.measured_s if self.measured_s else None


def _named(plans: Plans, profile: str, tables) -> list:
    return [plans.by_key[(t, profile)] for t in tables if (t, profile) in plans.by_key]


def _context(plans: Plans, profile: str, model: CostModel, times: FolderTimes, rates: Rates, command: str):
    """The estimate of the command a table was measured in: `run ...` with the runs recorded before it started
    reused; `verify-all` (or file times, which have no command) from a cold folder."""
    cmd = times.commands.get(profile, {}).get(command)
    if cmd is None or command == "verify-all":
        return command_time(plans.at(profile), model, rates)
    before = frozenset(h for h, r in times.runs.items() if cmd.started is not None and r.ended < cmd.started)
    return command_time(_named(plans, profile, cmd.tables), model, rates, verify_all=False, recorded=before)


def compare_tables(plans: Plans, profile: str, model: CostModel, times: FolderTimes,
                   rates: Rates = Rates()) -> list[Compared]:
    """Every table of the profile: its part of the command it was measured in (`verify-all` where none is known)
    estimated, beside what the folder measured of it."""
    measured = times.tables.get(profile, {})
    contexts: dict[str, object] = {}
    out = []
    for m in plans.at(profile):
        t = measured.get(m.id)
        command = t.command if t else ""
        if command not in contexts:
            contexts[command] = _context(plans, profile, model, times, rates, command)
        estimate = contexts[command]
        out.append(Compared(profile, m.id, estimate.table(m.id), estimate.basis(m.id), t.wall_s if t else None,
                            t.source if t else ""))
    return out


def compare_commands(plans: Plans, profile: str, model: CostModel, times: FolderTimes,
                     rates: Rates = Rates()) -> list[Compared]:
    """Each command timings.json recorded at the profile, estimated as the same command."""
    out = []
    for name, cmd in times.commands.get(profile, {}).items():
        verify_all = name == "verify-all"
        mine = plans.at(profile) if verify_all else _named(plans, profile, cmd.tables)
        if not mine:
            continue
        before = frozenset(h for h, r in times.runs.items() if cmd.started is not None and r.ended < cmd.started)
        estimate = command_time(mine, model, rates, verify_all=verify_all, recorded=before)
        out.append(Compared(profile, name, estimate.seconds, estimate.basis(), cmd.wall_s, "timings.json"))
    return out


def left_to_run(plans: Plans, profile: str, model: CostModel, times: FolderTimes,
                rates: Rates = Rates()) -> tuple[float, str, int, int]:
    """(seconds, basis, runs recorded, runs planned) of `repro verify-all` at the profile from this folder."""
    mine = plans.at(profile)
    planned = {h for plan in mine for h in plan.configs()}
    recorded = frozenset(planned & set(times.runs))
    estimate = command_time(mine, model, rates, recorded=recorded)
    return estimate.seconds, estimate.basis(), len(recorded), len(planned)


def lines(plans: Plans, model: CostModel, times: FolderTimes, rates: Rates = Rates()) -> list[str]:
    """What `repro list --results-dir` says below its tables: per profile with records, what is left to run,
    and each measured command against its estimate."""
    out = []
    for profile in plans.profiles():
        seconds, basis, recorded, planned = left_to_run(plans, profile, model, times, rates)
        if recorded:
            out.append(f"{profile}: {recorded} of {planned} runs recorded; `repro verify-all --profile {profile}` "
                       f"from here: {duration(seconds)} ({basis})")
        for c in compare_commands(plans, profile, model, times, rates):
            out.append(f"{profile}: `{c.what}` measured {duration(c.measured_s)} ({c.source}); estimated "
                       f"{duration(c.estimated_s)} ({c.basis}): estimate / measured {c.ratio:.2f}")
    return out
