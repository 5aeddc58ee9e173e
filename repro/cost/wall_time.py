"""A command's wall time, phase by phase: start-up, FLOP counts, each table's training and the rest, the report.

    verify-all = start-up + FLOP check (every distinct model, three ways) + each table + the report
    run ID...  = start-up + each table, its models counted the first time it meets them
    a table    = FLOP counting + training (the runs it is the first to train, CostModel.cost, and its
                 worker processes) + latency + the rest (data checks, claims, tables, what no phase covers)

Each phase is a rate times what the plan holds of it (models, tables, the run model's seconds). A rate is
fitted to the phases a results folder measured quiet (repro.cost.fit.fit_rates) or else the CPU reference's,
and every figure says which: "fitted", "measured" (a device figure from a calibration file) or "reference".
`command_time` is the one function every wall time is read from: `repro list`, the line a table prints before
it trains (`table_line`), the appendix, the README's figures (tests/cost/test_one_estimate.py). The counts on
disk (FLOPs, model sizes) are taken as cold: a first run's time.
"""

from __future__ import annotations

from dataclasses import dataclass

from repro.cost.calibration import cores
from repro.cost.estimate import CostModel, duration, seconds_text
from repro.data.specs import get_dataset
from repro.measure.flop_check import row_key
from repro.plan.table_plan import TablePlan

BASES = ("fitted", "measured", "reference")  # from strongest to weakest
# The rates in seconds, which the speed factor scales where they are the reference's (repro.cost.calibration.Speed);
# `latency` multiplies the latency estimate, which the scaled CPU figures price already.
SECONDS_RATES = ("startup", "flop_model", "workers", "rest", "report")
STARTUP, FLOP_CHECK = "start-up", "FLOP check"  # the command's own phases before its first table
PREPARING = (STARTUP, FLOP_CHECK)


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

    # The interpreter and the command line's imports, torch's above all; the guess serves where the CPU reference has
    # no rate (docs/measurements.md).
    startup: Rate = _reference("startup", 6.0, "torch's import on a 2-core CPU")
    flop_model: Rate = _reference("flop_model", 0.5, "analytic, fvcore and torch counts of one model")  # per model
    workers: Rate = _reference("workers", 6.0, "worker processes each import torch")  # per table that trains in them
    latency: Rate = _reference("latency", 1.0, "the latency estimate as it stands")  # x estimate_latency
    rest: Rate = _reference("rest", 1.0, "data checks, claims, table files")  # per table
    report: Rate = _reference("report", 15.0, "figures, report.md and report.html")  # per report


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

    @property
    def preparing(self) -> float:
        """The seconds before the first table: start-up and, in verify-all, the FLOP check."""
        return sum(p.seconds for p in self.parts if p.phase in PREPARING)

    def _weighty(self, manifest_id: str | None) -> list[Part]:
        """The parts (of one table, or all) that carry a tenth of the time or more."""
        parts = [p for p in self.parts if manifest_id is None or p.table == manifest_id]
        total = sum(p.seconds for p in parts) or 1.0
        return [p for p in parts if p.seconds >= 0.1 * total]

    def basis(self, manifest_id: str | None = None) -> str:
        """The weakest basis among the parts that carry a tenth of the time or more."""
        return max([p.basis for p in self._weighty(manifest_id)] or ["reference"], key=BASES.index)

    def origin(self, manifest_id: str | None = None) -> str:
        """What the figure came from, for the From column: that of the largest part of the weakest basis among
        the parts that carry a tenth of the time or more."""
        weakest = self.basis(manifest_id)
        mine = [p for p in self._weighty(manifest_id) if p.basis == weakest]
        return max(mine, key=lambda p: p.seconds).origin or weakest if mine else weakest


def command_time(
    plans: list[TablePlan],
    model: CostModel,
    rates: Rates = Rates(),
    verify_all: bool = True,
    recorded: frozenset[str] = frozenset(),
) -> CommandTime:
    """The wall time of `repro verify-all` (or `repro run` of these tables) at their plans' profile; the runs in
    `recorded` are reused, not trained. The reference's phase rates are scaled by this CPU's speed factor."""
    speed = model.speed
    host = speed.label if speed is not None else "CPU reference"

    def priced(phase: str, table: str, units: float, name: str, origin: str = host) -> Part:
        """`units` at the rate `name`; `origin`: the From column's words where the rate is the reference's."""
        rate = getattr(rates, name)
        reference = rate.basis == "reference"
        scale = speed.factor if speed is not None and reference and name in SECONDS_RATES else 1.0
        return Part(phase, table, units * rate.seconds * scale, rate.basis, origin if reference else rate.basis)

    parts = [priced(STARTUP, "", 1.0, "startup")]
    counted: set[str] = set()
    if verify_all:
        counted = {row_key(r) for plan in plans for r in plan.manifest.rows}
        parts.append(priced(FLOP_CHECK, "", len(counted), "flop_model"))
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
            in_workers = device.parallel > 1 or (device.kind == "cpu" and cores() > 1)  # the local executor's default
            workers = priced("training", m.id, 1.0, "workers") if cost.runs and in_workers else None
            if workers is None or not workers.seconds:
                parts.append(Part("training", m.id, cost.wall_seconds, device.basis, device.origin))
            else:
                weaker = workers if BASES.index(workers.basis) > BASES.index(device.basis) else device
                parts.append(Part("training", m.id, cost.wall_seconds + workers.seconds, weaker.basis, weaker.origin))
        if "latency" in m.measures():  # timed on the device the profile trains on, and priced by its figures
            origin = model.device(plan.profile).origin
            parts.append(priced("latency", m.id, estimate_latency(plan, model)[0], "latency", origin))
        parts.append(priced("rest", m.id, 1.0, "rest"))
    if verify_all:
        parts.append(priced("report", "", 1.0, "report"))
    return CommandTime("verify-all" if verify_all else "run " + " ".join(p.id for p in plans), tuple(parts))


def table_line(
    plan: TablePlan,
    model: CostModel,
    rates: Rates = Rates(),
    recorded: frozenset[str] = frozenset(),
    startup: bool = False,
) -> str:
    """One line before `repro <id>` trains: its time, what it is made of and its basis; with `startup` (a command of
    this table alone) the command's, start-up included: the figure `repro list` gives for the table, less the runs
    `recorded` already, which it names."""
    t = command_time([plan], model, rates, verify_all=False, recorded=recorded)
    mine = [p for p in t.parts if (p.table == plan.id or startup) and p.seconds >= 0.5]
    parts = ", ".join(f"{p.phase} {seconds_text(p.seconds)}" for p in mine) or "nothing to speak of"
    reused = len(recorded & set(plan.configs()))
    runs = f"; {reused} of {len(plan.configs())} runs recorded, reused" if reused else ""
    seconds = t.seconds if startup else t.table(plan.id)
    return f"{duration(seconds)} ({t.origin(None if startup else plan.id)}: {parts}{runs})"


def estimate_latency(plan: TablePlan, model: CostModel) -> tuple[float, str]:
    """Calls x multiply-adds per call / the throughput of the device the profile's latency is timed on (its
    training device: the CPU for a CPU-pinned profile, else a GPU), plus a fixed cost per call, at the plan's
    latency settings (NaN where a count or the throughput is not cached and `model.cached_only`)."""
    s, rows = plan.latency, plan.latency_rows
    device = model.device(plan.profile)
    calls = s.warmup + s.min_reps
    seconds = 0.0
    for row in rows:
        spec = get_dataset(row.dataset)
        scale = (min(spec.image_size, s.image_size or spec.image_size) / spec.image_size) ** 2
        f = model.forward_macs(row.dataset, row.backbone, row.head)
        if f is None:
            return float("nan"), "not estimated: FLOP counts not cached"
        macs = calls * s.batch * (2 * f["backbone_macs"] * scale + 2 * f["head_macs"]) + s.op_batch * f["head_macs"]
        seconds += macs / device.macs_per_s + 3 * calls * 0.002  # three timings, ~2 ms of dispatch a call
    return seconds, f"{len(rows)} latency rows x 3 timings, batch {s.batch}, {calls}+ calls each"
