"""The "accuracy" measure: a manifest's training rows -> runs -> per-seed metrics and paired gaps.

Rows that measure accuracy become one run per seed of the profile. Before any
training, every dataset and pretrained weight file the runs need is checked,
so a missing one fails the table in seconds with a message that says where to
put it. Comparisons become MoE - dense gaps paired by seed (repro.stats).
"""

from __future__ import annotations

from dataclasses import dataclass

from repro.manifest import Manifest, Profile
from repro.measure.base import Context
from repro.recipes import RunConfig, resolve, seeds
from repro.results import Measured, RunSummary, comparison_metric, row_metric
from repro.timings import add_runs, phase


@dataclass(frozen=True)
class PlannedRun:
    row: str
    seed: int
    cfg: RunConfig
    label: str  # e.g. "table1/std_h128_moe seed 0", for progress and errors


def planned_runs(manifest: Manifest, profile: Profile) -> list[PlannedRun]:
    """Every (row, seed) run the accuracy rows of `manifest` need under `profile` (those it includes)."""
    return [PlannedRun(row.id, seed, resolve(row, profile, seed), f"{manifest.id}/{row.id} seed {seed}")
            for row in manifest.rows if "accuracy" in row.measures and profile.includes(manifest.id, row.id)
            for seed in seeds(profile)]


def preflight(configs: list[RunConfig], ctx: Context) -> list[str]:
    """Fail before any training when a dataset is missing or wrong, or a pretrained weight file is missing.

    Each dataset is checked once per table by its content (classes, split sizes, one decoded batch,
    checksums); the summaries are returned for the report.
    """
    from repro.data.check import check_datasets, unverified_allowed
    from repro.weights import require_all_weights

    checks = check_datasets([c.dataset for c in configs if c.data == "real"], ctx.data_dir, unverified_allowed())
    for check in checks:
        check.raise_if_failed()
    require_all_weights({c.backbone["name"] for c in configs if c.pretrained and c.pretrained_on == "imagenet"})
    return [check.summary() for check in checks]


def pretrain_stand_in_weights(configs: list[RunConfig], ctx: Context) -> None:
    """Make the digit-stand-in weights the runs start from (repro.digit_weights) before any run trains,
    in this process with all its threads, so that no training worker waits idle for another's."""
    from rich.markup import escape

    from repro import digit_weights
    from repro.execution.records import record_path

    def say(text: str) -> None:
        if ctx.progress is not None:
            ctx.progress.log(escape(text))
        else:
            print(text, flush=True)

    needed = sorted({(digit_weights.base_backbone(c.backbone["name"]), c.dataset, c.image_size) for c in configs
                     if c.pretrained and c.pretrained_on == "digits" and not record_path(ctx.results_dir, c).is_file()})
    for backbone, dataset, size in needed:
        digit_weights.ensure(backbone, dataset, size, log=say)


def measure_accuracy(manifest: Manifest, ctx: Context) -> Measured:
    from repro.execution.runs import RunRequest, execute_runs
    from repro.stats import paired_gap

    out = Measured()
    planned = planned_runs(manifest, ctx.profile)
    with phase("data checks", manifest.id):
        data_checks = preflight([p.cfg for p in planned], ctx)
    with phase("stand-in pretraining", manifest.id):
        pretrain_stand_in_weights([p.cfg for p in planned], ctx)
    batch = execute_runs([RunRequest(p.cfg, p.label) for p in planned], ctx.results_dir, ctx.device,
                         ctx.data_dir, ctx.jobs, ctx.progress, options=ctx.executor)
    records, errors, ctx.run_counts = batch.records, batch.errors, batch.counts
    add_runs(manifest.id, [records[h] for h in batch.trained if h in records])
    per_row: dict[str, dict[int, float]] = {}
    late_drop: dict[str, dict[int, float]] = {}  # peak - final test accuracy: the late collapse of Section 5
    chance: dict[str, float] = {}
    runs: dict[str, list[dict]] = {}
    for p in planned:
        h = p.cfg.hash
        if h in errors:
            out.problems.append(f"{p.label} ({h}) failed: {errors[h].splitlines()[0]}")
            continue
        summary = RunSummary.from_record(records[h])
        per_row.setdefault(p.row, {})[p.seed] = summary.accuracy
        late_drop.setdefault(p.row, {})[p.seed] = summary.peak_accuracy - summary.final_accuracy
        if summary.chance is not None:
            chance[p.row] = summary.chance
        runs.setdefault(p.row, []).append(summary.to_dict())
    for row in manifest.rows:
        if "accuracy" not in row.measures:
            continue
        if row.id in per_row:
            out.set_row(row.id, "accuracy", per_row[row.id])
            out.set_row(row.id, "late_drop", late_drop[row.id])
            if row.id in chance:
                out.set_row(row.id, "chance", chance[row.id])
        elif not ctx.profile.includes(manifest.id, row.id):
            out.missing[row_metric(row.id, "accuracy")] = (f"{row.id} is not trained under profile "
                                                           f"'{ctx.profile_name}' (not in its include list)")
        else:
            out.missing[row_metric(row.id, "accuracy")] = f"every run of {row.id} failed"
    for comp in manifest.comparisons:
        a, b = per_row.get(comp.row), per_row.get(comp.baseline)
        if a and b and set(a) & set(b):
            out.set_comparison(comp.id, "gap", paired_gap(a, b).to_dict())
        elif any(r.id in (comp.row, comp.baseline) and "accuracy" in r.measures for r in manifest.rows):
            out.missing[comparison_metric(comp.id, "gap")] = next(
                (out.missing[row_metric(r, "accuracy")] for r in (comp.row, comp.baseline)
                 if row_metric(r, "accuracy") in out.missing and not ctx.profile.includes(manifest.id, r)),
                f"no seed has both {comp.row} and {comp.baseline} finished")
    out.details["runs"] = runs
    if data_checks:
        out.details["data_checks"] = {"summaries": data_checks}
    return out
