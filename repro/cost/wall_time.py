"""A command's wall time, phase by phase: start-up, FLOP counts, each table's training and the rest, the report.

    verify-all = start-up + FLOP check (every distinct model, three ways) + each table + the report
    run ID...  = start-up + each table, its models counted the first time it meets them
    a table    = FLOP counting + training (the runs it is the first to train, repro.cost.estimate, and its
                 worker processes) + latency + the rest (data checks, claims, tables, what no phase covers)

Each phase is a rate times what the plan holds of it (models, tables, the run model's seconds). A rate is
fitted to the phases a results folder measured (`timings.json`, repro.results.timings; without it the tables'
wall times that the file times give, repro.cost.measured) or else a reference, and every figure says
which: "fitted", "measured" (a device figure from this CPU's benchmark or a calibration file) or
"reference". The counts on disk (FLOPs, model sizes) are taken as cold: a first run's time.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from repro.cost.estimate import CostModel, duration, estimate_latency, seconds_text
from repro.cost.measured import FolderTimes
from repro.plan.table_plan import Plans, TablePlan
from repro.measure.flop_check import row_key

# repro.results.timings' phases, as the parts below price them
PHASE_OF = {"start-up and imports": "start-up", "FLOP check": "FLOP check", "FLOP counting": "FLOP counting",
            "data checks": "rest", "stand-in pretraining": "training", "training": "training", "latency": "latency",
            "claims": "rest", "tables": "rest", "figures": "report", "report": "report", "timings": "report"}
BASES = ("fitted", "measured", "reference")  # from strongest to weakest
# The rates in seconds, which the speed factor scales where they are the reference's (repro.cost.speed); `latency`
# multiplies the latency estimate, which the scaled CPU figures price already.
SECONDS_RATES = ("startup", "flop_model", "workers", "rest", "report")


@dataclass(frozen=True)
class Rate:
    seconds: float  # per unit
    basis: str  # "fitted" or "reference"
    why: str  # where the figure comes from


def _reference(name: str, guess: float, why: str) -> Rate:
    """The rate measured on the CPU reference's machine (repro.cost.cpu_reference), else a guess."""
    from repro.cost import cpu_reference as reference

    ref = reference.load()
    if ref is not None and name in ref.rates:
        return Rate(ref.rates[name], "reference", f"measured on {ref.machine}, {ref.measured}")
    return Rate(guess, "reference", why)


@dataclass(frozen=True)
class Rates:
    """Seconds per unit of each phase that the run model does not price."""

    # The interpreter and the command line's imports (torch: 6 s on the project's 2-core CI machine).
    startup: Rate = _reference("startup", 6.0, "torch's import on a 2-core CPU")
    flop_model: Rate = _reference("flop_model", 0.5, "analytic, fvcore and torch counts of one model")  # per model
    workers: Rate = _reference("workers", 6.0, "worker processes each import torch")  # per table that trains in them
    latency: Rate = _reference("latency", 1.0, "the latency estimate as it stands")  # x estimate_latency
    rest: Rate = _reference("rest", 1.0, "data checks, claims, table files")  # per table
    report: Rate = _reference("report", 15.0, "figures, report.md and report.html")  # per report


# What fit_rates prices a command with to read each phase's units back (models counted, latency estimated,
# runs priced), whatever the reference rates are: one second a model, the latency estimate as it is, no
# worker start-up.
_UNITS = Rates(flop_model=Rate(1.0, "", ""), workers=Rate(0.0, "", ""), latency=Rate(1.0, "", ""))


@dataclass(frozen=True)
class Part:
    phase: str
    table: str  # "" for the command's own parts
    seconds: float
    basis: str
    origin: str = ""  # the From column's words: "fitted", "CPU reference x1.12", "H200 ref. 2026-12-04", ...


@dataclass(frozen=True)
class CommandTime:
    command: str
    parts: tuple[Part, ...]

    @property
    def seconds(self) -> float:
        return sum(p.seconds for p in self.parts)

    def table(self, manifest_id: str) -> float:
        return sum(p.seconds for p in self.parts if p.table == manifest_id)

    def basis(self, manifest_id: str | None = None) -> str:
        """The weakest basis among the parts that carry a tenth of the time or more."""
        parts = [p for p in self.parts if manifest_id is None or p.table == manifest_id]
        total = sum(p.seconds for p in parts) or 1.0
        weighty = [p.basis for p in parts if p.seconds >= 0.1 * total] or ["reference"]
        return max(weighty, key=BASES.index)

    def origin(self, manifest_id: str | None = None) -> str:
        """What the figure came from, for the From column: that of the largest part of the weakest basis among
        the parts that carry a tenth of the time or more."""
        parts = [p for p in self.parts if manifest_id is None or p.table == manifest_id]
        total = sum(p.seconds for p in parts) or 1.0
        weighty = [p for p in parts if p.seconds >= 0.1 * total]
        if not weighty:
            return self.basis(manifest_id)
        weakest = max((p.basis for p in weighty), key=BASES.index)
        return max((p for p in weighty if p.basis == weakest), key=lambda p: p.seconds).origin or weakest


def _weaker(a: str, b: str) -> str:
    return max(a, b, key=BASES.index)


def command_time(plans: list[TablePlan], model: CostModel, rates: Rates = Rates(), verify_all: bool = True,
                 recorded: frozenset[str] = frozenset()) -> CommandTime:
    """The wall time of `repro verify-all` (or `repro run` of these tables) at their plans' profile; the runs in
    `recorded` are reused, not trained. The reference's phase rates are scaled by this CPU's speed factor."""
    speed = model.speed()
    host = speed.label if speed is not None else "CPU reference"

    def priced(phase: str, table: str, units: float, name: str) -> Part:
        rate = getattr(rates, name)
        reference = rate.basis == "reference"
        scale = speed.factor if speed is not None and reference and name in SECONDS_RATES else 1.0
        return Part(phase, table, units * rate.seconds * scale, rate.basis, host if reference else rate.basis)

    parts = [priced("start-up", "", 1.0, "startup")]
    counted: set[str] = set()
    if verify_all:
        models = {row_key(r) for plan in plans for r in plan.manifest.rows}
        counted |= models
        parts.append(priced("FLOP check", "", len(models), "flop_model"))
    trained: set[str] = set(recorded)
    for plan in plans:
        m = plan.manifest
        new = {row_key(r) for r in plan.flop_rows} - counted
        counted |= new
        parts.append(priced("FLOP counting", m.id, len(new), "flop_model"))
        if "accuracy" in m.measures():
            cost = model.cost([plan], skip=frozenset(trained))
            device = model.device(plan.profile)
            trained |= set(plan.configs())
            in_workers = device.parallel > 1 or (device.kind == "cpu" and _cpus() > 1)  # the local executor's default
            workers = priced("training", m.id, 1.0, "workers") if cost.runs and in_workers else None
            workers = workers if workers is not None and workers.seconds else None
            basis = _weaker(device.basis, workers.basis) if workers else device.basis
            parts.append(Part("training", m.id, cost.wall_seconds + (workers.seconds if workers else 0.0), basis,
                              device.origin if basis == device.basis else workers.origin))
        if "latency" in m.measures():
            seconds, _ = estimate_latency(plan, model)
            latency = priced("latency", m.id, seconds, "latency")  # priced by the CPU's figures
            parts.append(dataclasses.replace(latency, origin=model.of_kind("cpu").origin)
                         if latency.basis == "reference" else latency)
        parts.append(priced("rest", m.id, 1.0, "rest"))
    if verify_all:
        parts.append(priced("report", "", 1.0, "report"))
    return CommandTime("verify-all" if verify_all else "run " + " ".join(p.id for p in plans), tuple(parts))


def table_line(plan: TablePlan, model: CostModel, rates: Rates = Rates(),
               recorded: frozenset[str] = frozenset()) -> str:
    """One line before `repro <id>` trains: its time alone (start-up aside), what it is made of, its basis."""
    t = command_time([plan], model, rates, verify_all=False, recorded=recorded)
    mine = [p for p in t.parts if p.table == plan.id and p.seconds >= 0.5]
    parts = ", ".join(f"{p.phase} {seconds_text(p.seconds)}" for p in mine) or "nothing to speak of"
    return f"{duration(t.table(plan.id))} ({t.origin(plan.id)}: {parts})"


def _cpus() -> int:
    import os

    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def fit_rates(times: FolderTimes, plans: Plans, model: CostModel) -> Rates:
    """Each rate fitted to what the folder measured (timings.json's phases; else the tables' wall times from
    the file times, for the per-table rest), the others left at their reference. `model` carries the fitted
    run figures already (repro.cost.fit.fit_model)."""
    rates = Rates()
    units: dict[str, list[tuple[float, float]]] = {}  # rate -> (measured seconds, units) per observation
    for profile, commands in times.commands.items():
        for name, cmd in commands.items():
            mine = [plans.by_key[(t, profile)] for t in cmd.tables if (t, profile) in plans.by_key]
            before = frozenset(h for h, r in times.runs.items() if cmd.started is not None and r.ended < cmd.started)
            estimate = command_time(mine, model, _UNITS, verify_all=name == "verify-all", recorded=before)
            units.setdefault("startup", []).append((cmd.phases.get("start-up and imports", 0.0), 1.0))
            flops = sum(cmd.phases.get(k, 0.0) for k in ("FLOP check", "FLOP counting"))
            n_models = sum(p.seconds for p in estimate.parts if p.phase in ("FLOP check", "FLOP counting"))
            units.setdefault("flop_model", []).append((flops, n_models / _UNITS.flop_model.seconds))
            lat = cmd.phases.get("latency", 0.0)
            lat_est = sum(p.seconds for p in estimate.parts if p.phase == "latency")
            if lat_est:
                units.setdefault("latency", []).append((lat, lat_est))
            train = sum(cmd.phases.get(k, 0.0) for k in ("training", "stand-in pretraining"))
            runs_est = sum(p.seconds for p in estimate.parts if p.phase == "training")  # _UNITS: no worker term
            training_tables = sum(1 for p in estimate.parts if p.phase == "training" and p.seconds > 0)
            if training_tables:
                units.setdefault("workers", []).append((max(0.0, train - runs_est), training_tables))
            covered = sum(cmd.phases.values())
            rest = sum(cmd.phases.get(k, 0.0) for k in ("data checks", "claims", "tables")) + max(0.0, cmd.wall_s - covered)
            units.setdefault("rest", []).append((rest, max(1, len(mine))))
            if name == "verify-all":
                units.setdefault("report", []).append(
                    (sum(cmd.phases.get(k, 0.0) for k in ("figures", "report", "timings")), 1.0))
    if "rest" not in units:  # no timings.json: the tables' wall times less what the model prices in them
        bare = dataclasses.replace(_UNITS, rest=Rate(0.0, "", ""))
        residuals: dict[bool, list[float]] = {True: [], False: []}  # by whether the table trained runs
        for profile, tables in times.tables.items():
            for manifest_id, table in tables.items():
                plan = plans.by_key.get((manifest_id, profile))
                if plan is None or table.phases:
                    continue
                own = command_time([plan], model, bare, verify_all=False)
                priced = sum(p.seconds for p in own.parts if p.table == plan.id and p.phase != "FLOP counting")
                trains = any(p.phase == "training" and p.seconds > 0 for p in own.parts)
                residuals[trains].append(max(0.0, table.wall_s - priced))
        if residuals[False]:
            units["rest"] = [(s, 1.0) for s in residuals[False]]
        if residuals[True]:
            rest = (sum(residuals[False]) / len(residuals[False])) if residuals[False] else rates.rest.seconds
            units["workers"] = [(max(0.0, s - rest), 1.0) for s in residuals[True]]
    fitted = {}
    for name, obs in units.items():
        seconds, count = sum(s for s, _ in obs), sum(n for _, n in obs)
        if count > 0:
            fitted[name] = Rate(seconds / count, "fitted", f"{len(obs)} measurement(s) in this results folder")
    return dataclasses.replace(rates, **fitted)
