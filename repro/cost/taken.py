"""Estimated against taken: per claim and table, the device time its runs took beside the estimate; each table's
and command's wall time estimated against measured. Torch-free when the counts are cached.

A claim's runs are those of the rows its rule reads (repro.cost.claim_cost.claim_tables); a table's are all its
training runs, each counted once. Both are priced by CostModel.cost, as every command prices them. Time taken
is a record's `wall_seconds`, filed under the device its provenance names (`device_type`); runs without a
record yet count in the estimate only. A table's wall-time estimate is its part of the command it was measured in
(repro.cost.wall_time): within `verify-all` its FLOP counts were made by the FLOP check, and runs another table
trained first are not its own. The command computes it all once, from its plans and the cost model it fitted
(repro.cost.fit.fit_folder), and hands it to the report, which renders it (repro.report.costs).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from repro.cost.claim_cost import claim_tables
from repro.cost.estimate import CostModel, duration, is_run
from repro.cost.fit import FolderFit, fit_folder
from repro.cost.measured import FolderTimes
from repro.cost.wall_time import CommandTime, Rates, command_time
from repro.execution.files import record_path
from repro.execution.record_checks import LeftAlone, read_record
from repro.plan.table_plan import Plans, TablePlan


@dataclass(frozen=True)
class Compute:
    """Runs counted once: how many have records, the hours they took by device, and the estimate for all."""

    label: str  # "table1" or "table1/t1_sign_follows_rho"
    runs: int
    recorded: int
    gpu_hours: float
    cpu_hours: float
    estimate_hours: float
    estimate_kind: str  # what the estimate is hours of: "GPU" or "CPU"


@dataclass(frozen=True)
class Compared:
    profile: str
    what: str  # a table id, or a command ("verify-all", "run table1")
    estimated_s: float
    basis: str  # of the estimate: fitted, measured or reference
    measured_s: float | None
    source: str  # where the measured figure comes from
    load: float | None = None  # the load average it was measured at, where stored
    busy: bool = False  # measured under load: left out of the fit, slower than the estimate by that load

    @property
    def ratio(self) -> float | None:
        return self.estimated_s / self.measured_s if self.measured_s else None

    @property
    def measured_by(self) -> str:
        """Where the measured figure comes from, with the load it was measured at."""
        return self.source + ("" if self.load is None else f", load {self.load:.1f}" + (", busy" if self.busy else ""))


@dataclass(frozen=True)
class ComputeTaken:
    """The report's compute section as data: the lines per claim and table, where the estimates come from, each
    table's wall time estimated against measured, and what the cost model was fitted to."""

    lines: tuple[Compute, ...]
    source: str
    walls: tuple[Compared, ...]
    fitted: tuple[str, ...]


def _taken_by(results_dir: Path, plans: list[TablePlan]) -> dict[str, tuple[float, bool]]:
    """(wall seconds, on a GPU) of each run's usable record, read once (a claim line and its table line share runs),
    by the rule `repro run` applies (repro.execution.record_checks); an unusable record counts as none."""
    taken = {}
    for h, cfg in {h: c for plan in plans for h, c in plan.configs().items()}.items():
        try:
            record, _ = read_record(record_path(results_dir, cfg), cfg)
        except LeftAlone:  # unreadable, or a newer version's: not this version's evidence
            continue
        if record is not None:
            seconds = float(record.get("wall_seconds") or record.get("train_seconds") or 0.0)
            taken[h] = (seconds, record["provenance"].get("device_type") == "cuda")
    return taken


def compute_by_claim(results_dir: Path, plans: list[TablePlan], model: CostModel | None = None) -> list[Compute]:
    """Per table's plan (at one profile): a line per empirical claim with training runs, then the table's total."""
    model = model or CostModel()
    taken = _taken_by(results_dir, plans)
    others = {p.id: p for p in plans}

    def line(label: str, tables: list[TablePlan]) -> Compute:
        cost = model.cost(tables)
        runs = [taken[h] for h in cost.items if is_run(h) and h in taken]
        gpu, cpu = (sum(s for s, cuda in runs if cuda is on) / 3600 for on in (True, False))
        return Compute(label, cost.runs, len(runs), gpu, cpu, cost.device_hours, cost.kind.upper())

    out = []
    for plan in plans:
        if not plan.runs:
            continue
        out += [
            line(f"{plan.id}/{c.claim.id}", claim_tables(plan, c.claim, others))
            for c in plan.claims
            if c.claim.scope == "empirical" and c.trained
        ]
        out.append(line(plan.id, [plan]))
    return out


def _measured_in(
    plans: Plans, profile: str, model: CostModel, times: FolderTimes, rates: Rates, command: str
) -> CommandTime:
    """The estimate of the command a table was measured in: `run ...` with the runs recorded before it started
    reused; `verify-all` (or file times, which have no command) from a cold folder."""
    cmd = times.commands.get(profile, {}).get(command)
    if cmd is None or command == "verify-all":
        return command_time(plans.at(profile), model, rates)
    return command_time(cmd.plans(plans, profile), model, rates, verify_all=False, recorded=cmd.reused(times.runs))


def compare_tables(
    plans: Plans, profile: str, model: CostModel, times: FolderTimes, rates: Rates = Rates()
) -> list[Compared]:
    """Every table of the profile: its part of the command it was measured in (`verify-all` where none is known)
    estimated, beside what the folder measured of it."""
    measured = times.tables.get(profile, {})
    contexts: dict[str, CommandTime] = {}
    out = []
    for m in plans.at(profile):
        t = measured.get(m.id)
        command = t.command if t else ""
        if command not in contexts:
            contexts[command] = _measured_in(plans, profile, model, times, rates, command)
        estimate = contexts[command]
        seen = (t.wall_s, t.source, t.load, t.busy) if t else (None, "", None, False)
        out.append(Compared(profile, m.id, estimate.table(m.id), estimate.basis(m.id), *seen))
    return out


def compare_commands(
    plans: Plans, profile: str, model: CostModel, times: FolderTimes, rates: Rates = Rates()
) -> list[Compared]:
    """Each command timings.json recorded at the profile, estimated as the same command."""
    out = []
    for name, cmd in times.commands.get(profile, {}).items():
        verify_all = name == "verify-all"
        mine = plans.at(profile) if verify_all else cmd.plans(plans, profile)
        if mine:
            estimate = command_time(mine, model, rates, verify_all=verify_all, recorded=cmd.reused(times.runs))
            out.append(
                Compared(
                    profile, name, estimate.seconds, estimate.basis(), cmd.wall_s, "timings.json", cmd.load, cmd.busy
                )
            )
    return out


def lines(folder: FolderFit) -> list[str]:
    """What `repro list --results-dir -v` says below its tables: per profile with records, what is left to run
    (the runs recorded reused), and each measured command against its estimate, with the load it was measured at."""
    out = []
    plans, model, times, rates = folder.plans, folder.model, folder.times, folder.rates
    for profile in plans.profiles():
        mine = plans.at(profile)
        planned = {h for plan in mine for h in plan.configs()}
        recorded = frozenset(planned & set(times.runs))
        if recorded:
            left = command_time(mine, model, rates, recorded=recorded)
            out.append(
                f"{profile}: {len(recorded)} of {len(planned)} runs recorded; `repro verify-all --profile "
                f"{profile}` from here, reusing them: {duration(left.seconds)} ({left.basis()})"
            )
        for c in compare_commands(plans, profile, model, times, rates):
            assert c.measured_s is not None, "compare_commands compares measured commands only"
            out.append(
                f"{profile}: `{c.what}` measured {duration(c.measured_s)} ({c.measured_by}); estimated "
                f"{duration(c.estimated_s)} ({c.basis}): estimate / measured "
                + ("-" if c.ratio is None else f"{c.ratio:.2f}")
                + ("; measured under load, left out of the fit" if c.busy else "")
            )
    return out


def for_report(
    results_dir: Path, profile: str, plans: Plans, model: CostModel | None = None
) -> tuple[FolderFit, ComputeTaken]:
    """What a report needs of the cost stage, computed once by the command that writes it: the cost model (`model`,
    the command's: its cache folder and GPU calibration) fitted to the folder's run records from the caches alone
    (nothing is counted; sizes not counted yet are priced by area-scaled counts), and the compute section at
    `profile`: time taken per claim and table beside the estimate, and each table's wall time estimated against
    measured."""
    folder = fit_folder(model or CostModel(cached_only=True), results_dir, plans)
    mine, model = plans.at(profile), folder.model
    source = "; ".join(sorted({model.device(p.profile).source for p in mine}))
    walls = compare_tables(plans, profile, model, folder.times, folder.rates)
    return folder, ComputeTaken(
        tuple(compute_by_claim(results_dir, mine, model)), source, tuple(walls), tuple(folder.describe())
    )
