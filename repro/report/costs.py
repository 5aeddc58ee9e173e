"""Compute per claim and per table: the device-hours its runs took (run records) beside the estimate.

Torch-free. A claim's runs are the (row, seed) runs of the rows its rule reads (repro.cost.plan.rows_read)
under the profile; a table's are all its training runs, each counted once. Time taken is a record's
`wall_seconds` (training and evaluation, as the executor saw it), filed under the device its
provenance names (`device_type`); runs without a record yet count in the estimate only.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from repro.cost.estimate import CostModel
from repro.execution.files import record_path
from repro.execution.record_checks import LeftAlone, read_record
from repro.plan.manifest import Manifest
from repro.plan.run_config import RunConfig, planned_runs
from repro.cost.plan import rows_read


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


def compute_by_claim(results_dir: Path, profile: str, manifests: list[Manifest],
                     model: CostModel | None = None) -> list[Compute]:
    """Per manifest that has `profile`: a line per empirical claim with training runs, then the table's total."""
    model = model or CostModel()
    out = []
    for m in manifests:
        prof = m.profiles.get(profile)
        if prof is None:
            continue
        planned = planned_runs(m, prof)
        if not planned:
            continue
        device = model.device(prof)
        cfgs = {p.cfg.hash: p.cfg for p in planned}
        est = {h: model.run_time(cfg, m.id, device) for h, cfg in cfgs.items()}
        hours = {h: (t.compute_s + t.overhead_s / model.executor.packing(device.kind)) / 3600 for h, t in est.items()}
        kind = device.kind.upper()
        taken = _taken_by(results_dir, cfgs)

        def line(label: str, hashes: set[str]) -> Compute:
            runs = [taken[h] for h in hashes if h in taken]
            gpu, cpu = (sum(t.seconds for t in runs if t.cuda is on) / 3600 for on in (True, False))
            return Compute(label, len(hashes), len(runs), gpu, cpu, sum(hours[h] for h in hashes), kind)

        for claim in m.claims:
            rows = set(rows_read(m, claim))
            if claim.scope == "empirical" and rows:
                out.append(line(f"{m.id}/{claim.id}", {p.cfg.hash for p in planned if p.row in rows}))
        out.append(line(m.id, {p.cfg.hash for p in planned}))
    return out


def render_compute(lines: list[Compute], profile: str, source: str, walls: list | None = None,
                   fitted: list[str] | None = None) -> str:
    from repro.report.render import environment

    return environment().get_template("compute.md.j2").render(lines=lines, profile=profile, source=source,
                                                              walls=walls or [], fitted=fitted or [])


def compute_section(results_dir: Path, profile: str, manifests: list[Manifest]) -> str:
    """The report's section: time taken per claim and table beside the estimate, and each table's wall time
    estimated against measured. The cost model is fitted to the folder's records (repro.cost.fit) from the
    caches alone: the report counts nothing (sizes not counted yet are priced by area-scaled counts)."""
    from repro.cost.vs_measured import compare_tables
    from repro.cost.fit import fit_folder

    model = CostModel(cached_only=True)
    folder = fit_folder(model, results_dir, manifests)
    lines = compute_by_claim(results_dir, profile, manifests, model)
    if not lines:
        return "No training runs at this profile."
    source = "; ".join(sorted({model.device(m.profiles[profile]).source for m in manifests if profile in m.profiles}))
    walls = [c for c in compare_tables(manifests, profile, model, folder.times, folder.rates)]
    return render_compute(lines, profile, source, walls, folder.describe())
