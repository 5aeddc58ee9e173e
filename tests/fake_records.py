"""Run records and run configs made without training, for the tests that only read them."""

import json
from pathlib import Path

from repro.execution.record_checks import RECORD_SCHEMA, record_digest
from repro.core.fsutil import jsonable
from repro.plan.manifest import Row
from repro.models import Component
from repro.spec.profiles import Profile
from repro.plan.run_config import resolve

PROFILE = Profile(
    description="test",
    evidence="pipeline",
    seeds=1,
    epochs=2,
    data="synthetic",
    train_samples=64,
    test_samples=32,
    batch_size=32,
    max_image_size=16,
    pretrained=False,
)


def config(seed: int = 0, profile: Profile = PROFILE):
    row = Row(
        id="r",
        label="r",
        dataset="cifar10",
        backbone=Component("cifar_standard"),
        head=Component("dense"),
        measures=("accuracy",),
    )
    return resolve(row, profile, seed=seed)


def record(cfg, accuracy: float = 0.5, **extra) -> dict:
    """A record of `cfg` that repro.execution.record_checks accepts (`extra` replaces top-level keys, digest after)."""
    history = [{"epoch": e + 1, "test_accuracy": accuracy, "train_accuracy": accuracy} for e in range(cfg.epochs)]
    out = {
        "schema": RECORD_SCHEMA,
        "config": jsonable(cfg.to_dict()),
        "config_hash": cfg.hash,
        "seed": cfg.seed,
        "metrics": {
            "accuracy": accuracy,
            "final_accuracy": accuracy,
            "peak_accuracy": accuracy,
            "peak_epoch": cfg.epochs,
            "chance": 0.1,
        },
        "history": history,
        "wall_seconds": 12.4,
        "provenance": {
            "device": f"cpu: x86_64, {cfg.threads} intra-op thread(s)",
            "device_type": "cpu",
            "reproducibility": {"threads": cfg.threads, "deterministic": cfg.deterministic},
            "executor": {"name": "local", "host": "n1"},
        },
        **extra,
    }
    out["digest"] = record_digest(out)
    return out


def write_record(results_dir: Path, cfg, **kw) -> Path:
    path = results_dir / "runs" / f"{cfg.hash}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record(cfg, **kw)))
    return path


def write_result(
    results_dir: Path,
    table: str,
    rows: dict,
    profile: str = "smoke",
    verdicts=(),
    metrics=None,
    details=None,
    provenance=None,
) -> Path:
    """<results>/<profile>/<table>/results.json whose rows name the runs `rows` gives ({row: [record, ...]}),
    as repro.measure.accuracy stores them (details["runs"], and each row's per-seed accuracy and chance)."""
    from repro.results.measurements import ManifestResult, Measuring, RunSummary, save_result

    measured = Measuring(dict(metrics or {}), {}, [], dict(details or {}))
    for row, records in rows.items():
        summaries = [RunSummary.from_record(r) for r in records]
        measured.details.setdefault("runs", {})[row] = [s.to_dict() for s in summaries]
        measured.set_row(row, "accuracy", {s.seed: s.accuracy for s in summaries})
        measured.set_row(row, "chance", summaries[0].chance)
    return save_result(
        ManifestResult(table, table, "test", table, profile, measured.done(), list(verdicts), provenance or {}),
        results_dir,
    )


# Table `t` of the fake results: rows `dense` and `moe`, and claim `c`, decided from the moe row's rho (below 0.5:
# reproduced), so that a reader that decides verdicts (`repro export`, `repro compare`) has a rule to decide by.
MANIFEST_T = """
id = "t"
title = "a fake table"
paper_ref = "test"
description = "Rows the fake records fill."
seeds = 1

[[rows]]
id = "dense"
label = "dense"
dataset = "cifar10"
measures = ["flops", "accuracy"]
backbone = { name = "cifar_standard" }
head = { name = "dense" }

[[rows]]
id = "moe"
label = "moe"
dataset = "cifar10"
measures = ["flops", "accuracy"]
backbone = { name = "cifar_standard" }
head = { name = "sparse_moe", expert_hidden = 32 }

[[claims]]
id = "c"
statement = "the moe row routes under half of the compute"
section = "4.2"
scope = "analytic"
kind = "property"
rule = "compare"
metric = "rows.moe.rho"
relation = "<"
bound = 0.5
"""


def write_manifest_t(folder: Path) -> Path:
    """<folder>/manifests/t.toml; returns the manifests folder (REPRO_MANIFESTS, --manifests)."""
    (folder / "manifests").mkdir(parents=True, exist_ok=True)
    (folder / "manifests" / "t.toml").write_text(MANIFEST_T)
    return folder / "manifests"


def rho_deciding(status: str) -> dict:
    """The stored metric that decides claim `c` of table `t` as `status` (reproduced or not reproduced)."""
    return {"rows.moe.rho": 0.1 if status == "reproduced" else 0.9}
