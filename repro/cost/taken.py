"""Compute per claim and per table: the device-hours its runs took (run records) beside the estimate.

Torch-free. A claim's runs are the (row, seed) runs of the training rows its rule reads (the plan's
PlannedClaim.trained); a table's are all its training runs, each counted once. Time taken is a
record's `wall_seconds` (training and evaluation, as the executor saw it), filed under the device its
provenance names (`device_type`); runs without a record yet count in the estimate only. The command
computes it once, from its plans and the cost model it fitted (repro.cost.fit.fit_folder), and hands it
to the report, which renders it (repro.report.costs).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from repro.cost.estimate import CostModel
from repro.cost.fit import FolderFit, fit_folder
from repro.cost.vs_measured import Compared, compare_tables
from repro.execution.files import record_path
from repro.execution.record_checks import LeftAlone, read_record
from repro.plan.run_config import RunConfig
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
class Taken:
    """What one run's usable record says it took (wall seconds), and on which kind of device."""

    seconds: float
    cuda: bool


@dataclass(frozen=True)
class ComputeTaken:
    """The report's compute section as data: the lines per claim and table, where the estimates come from, each
    table's wall time estimated against measured, and what the cost model was fitted to."""

    lines: tuple[Compute, ...]
    source: str
    walls: tuple[Compared, ...]
    fitted: tuple[str, ...]


def _taken_by(results_dir: Path, cfgs: dict[str, RunConfig]) -> dict[str, Taken]:
    """Each run's usable record, read once (a claim line and its table line share runs), by the rule
    `repro run` applies (repro.execution.record_checks); an unusable record counts as none."""
    taken = {}
    for h, cfg in cfgs.items():
        try:
            record, _ = read_record(record_path(results_dir, cfg), cfg)
        except LeftAlone:  # unreadable, or a newer version's: not this version's evidence
            continue
        if record is not None:
            seconds = float(record.get("wall_seconds") or record.get("train_seconds") or 0.0)
            taken[h] = Taken(seconds, record["provenance"].get("device_type") == "cuda")
    return taken


def compute_by_claim(results_dir: Path, plans: list[TablePlan], model: CostModel | None = None) -> list[Compute]:
    """Per table's plan (at one profile): a line per empirical claim with training runs, then the table's total."""
    model = model or CostModel()
    out = []
    for plan in plans:
        cfgs = plan.configs()
        if not cfgs:
            continue
        device = model.device(plan.profile)
        est = {h: model.run_time(cfg, plan.id, device) for h, cfg in cfgs.items()}
        hours = {h: (t.compute_s + t.overhead_s / model.executor.packing(device.kind)) / 3600 for h, t in est.items()}
        kind = device.kind.upper()
        taken = _taken_by(results_dir, cfgs)

        def line(label: str, hashes: set[str]) -> Compute:
            runs = [taken[h] for h in hashes if h in taken]
            gpu, cpu = (sum(t.seconds for t in runs if t.cuda is on) / 3600 for on in (True, False))
            return Compute(label, len(hashes), len(runs), gpu, cpu, sum(hours[h] for h in hashes), kind)

        for c in plan.claims:
            if c.claim.scope == "empirical" and c.trained:
                out.append(line(f"{plan.id}/{c.claim.id}", {p.cfg.hash for p in plan.runs_of(c.trained)}))
        out.append(line(plan.id, set(cfgs)))
    return out


def compute_taken(results_dir: Path, profile: str, folder: FolderFit) -> ComputeTaken:
    """Time taken per claim and table at `profile` beside the estimate of the cost model `folder` fitted, and each
    table's wall time estimated against measured; the plans are the ones the fit priced."""
    plans = folder.plans.at(profile)
    lines = compute_by_claim(results_dir, plans, folder.model)
    source = "; ".join(sorted({folder.model.device(p.profile).source for p in plans}))
    walls = compare_tables(folder.plans, profile, folder.model, folder.times, folder.rates)
    return ComputeTaken(tuple(lines), source, tuple(walls), tuple(folder.describe()))


def for_report(results_dir: Path, profile: str, plans: Plans,
               model: CostModel | None = None) -> tuple[FolderFit, ComputeTaken]:
    """What a report needs of the cost stage, computed once by the command that writes it: the cost model (`model`,
    the command's: its cache folder and GPU calibration) fitted to the folder's run records from the caches alone
    (nothing is counted; sizes not counted yet are priced by area-scaled counts), and the compute section at
    `profile`."""
    folder = fit_folder(model or CostModel(cached_only=True), results_dir, plans)
    return folder, compute_taken(results_dir, profile, folder)
