"""The "accuracy" measure: a manifest's training rows -> runs -> per-seed metrics and paired gaps.

Rows that measure accuracy become one run per seed of the profile. Before any
training, every dataset and pretrained weight file the runs need is checked,
so a missing one fails the table in seconds with a message that says where to
put it. Comparisons become MoE - dense gaps paired by seed (repro.stats).
"""

from __future__ import annotations

from typing import Any

from repro.cost import register_estimator
from repro.data.layout import require
from repro.manifest import Manifest, Profile
from repro.pipeline import Context, register_measurer
from repro.results import Measured
from repro.recipes import RunConfig, resolve, seeds
from repro.runs import RunRequest, execute_runs
from repro.stats import paired_gap
from repro.weights import require_weights


def requests_for(manifest: Manifest, profile_name: str, profile: Profile) -> list[tuple[str, int, RunRequest]]:
    out = []
    for row in manifest.rows:
        if "accuracy" not in row.measures:
            continue
        for seed in seeds(profile):
            cfg = resolve(row, profile, seed)
            out.append((row.id, seed, RunRequest(cfg, f"{manifest.id}/{row.id} seed {seed}")))
    return out


def preflight(configs: list[RunConfig], ctx: Context) -> None:
    """Fail before any training when a dataset or pretrained weight file is missing."""
    for dataset in sorted({c.dataset for c in configs if c.data == "real"}):
        require(dataset, ctx.data_dir)
    for backbone in sorted({c.backbone["name"] for c in configs if c.pretrained}):
        require_weights(backbone)


def measure_accuracy(manifest: Manifest, ctx: Context) -> Measured:
    out = Measured()
    planned = requests_for(manifest, ctx.profile_name, ctx.profile)
    preflight([r.cfg for _, _, r in planned], ctx)
    batch = execute_runs([r for _, _, r in planned], ctx.results_dir, ctx.device, ctx.data_dir,
                         ctx.jobs, ctx.progress, options=ctx.executor)
    records, errors, ctx.run_counts = batch.records, batch.errors, batch.counts
    per_row: dict[str, dict[int, float]] = {}
    late_drop: dict[str, dict[int, float]] = {}  # peak - final test accuracy: the late collapse of Section 5
    runs: dict[str, list[dict[str, Any]]] = {}
    for row_id, seed, request in planned:
        h = request.cfg.hash
        if h in errors:
            out.problems.append(f"{request.label} ({h}) failed: {errors[h].splitlines()[0]}")
            continue
        record = records[h]
        per_row.setdefault(row_id, {})[seed] = record["metrics"]["accuracy"]
        late_drop.setdefault(row_id, {})[seed] = record["metrics"]["peak_accuracy"] - record["metrics"]["final_accuracy"]
        runs.setdefault(row_id, []).append(_run_summary(record))
    for row in manifest.rows:
        if "accuracy" not in row.measures:
            continue
        path = f"rows.{row.id}.accuracy"
        if row.id in per_row:
            out.metrics[path] = per_row[row.id]
            out.metrics[f"rows.{row.id}.late_drop"] = late_drop[row.id]
        else:
            out.missing[path] = f"every run of {row.id} failed"
    for comp in manifest.comparisons:
        a, b = per_row.get(comp.row), per_row.get(comp.baseline)
        path = f"comparisons.{comp.id}.gap"
        if a and b and set(a) & set(b):
            out.metrics[path] = paired_gap(a, b).to_dict()
        elif any(r.id in (comp.row, comp.baseline) and "accuracy" in r.measures for r in manifest.rows):
            out.missing[path] = f"no seed has both {comp.row} and {comp.baseline} finished"
    out.details["runs"] = runs
    return out


def _run_summary(record: dict[str, Any]) -> dict[str, Any]:
    """What reports and figures need from a record, with the hash to trace it back."""
    history = record["history"]
    return {
        "seed": record["seed"], "hash": record["config_hash"], "accuracy": record["metrics"]["accuracy"],
        "final_accuracy": record["metrics"]["final_accuracy"], "peak_accuracy": record["metrics"]["peak_accuracy"],
        "test_accuracy_by_epoch": [h["test_accuracy"] for h in history],
        "train_accuracy_by_epoch": [h["train_accuracy"] for h in history],
        "tau_by_epoch": [h.get("tau") for h in history],
        "routing": record.get("routing", {}), "weights": record.get("weights"), "data": record.get("data"),
        "wall_seconds": record.get("wall_seconds"), "device": record["provenance"].get("device"),
    }


def estimate_training(manifest: Manifest, profile_name: str) -> tuple[float | None, str]:
    """Runs x epochs x seconds per epoch (a rough model of each dataset's epoch cost on this device)."""
    from repro.timing import seconds_per_epoch

    profile = manifest.profiles[profile_name]
    planned = requests_for(manifest, profile_name, profile)
    unique = {r.cfg.hash: r.cfg for _, _, r in planned}
    seconds = sum(seconds_per_epoch(cfg) * cfg.epochs for cfg in unique.values())
    epochs = sum(cfg.epochs for cfg in unique.values())
    return seconds, f"{len(unique)} runs, {epochs} epochs"


register_measurer("accuracy", measure_accuracy)
register_estimator("accuracy", estimate_training)
