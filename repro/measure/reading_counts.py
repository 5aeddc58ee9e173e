"""The counts the readings table needs: every row an analytic claim (or one ordered by rho) reads, under each
alternative reading.

repro.claims.under_readings decides the claims; it asks for the metrics of each varied row through a
`recount` callable. Here that callable counts: FLOPs from the analytic column alone (the readings'
models are only compared with rows the FLOP check counted three ways; repro.measure.flop_check.
analytic_summary, once per distinct model and process) and, for rows that time latency, operator
counts of the head (repro.measure.latency.operator_counts). A row's counts are kept in the cache folder,
keyed by its model and by the code that builds, schedules and counts it (as the FLOP check's are), so a
table run again counts nothing. What was counted comes back as a value the pipeline keeps in the table's
results (details["readings"]) with the CPU-seconds it took, so `repro report` decides the readings again,
with the current rules, and counts nothing.
"""

from __future__ import annotations

import hashlib
import json
import time
from functools import lru_cache
from pathlib import Path
from typing import Any

from repro.claims import evidence_for
from repro.claims.under_readings import ClaimReadings, decide_readings, recounted_claims
from repro.plan.manifest import Manifest, Row
from repro.core.cache import cache_dir, read_json, write_json
from repro.core.package_data import shipped
from repro.measure import flop_check
from repro.measure.flop_check import analytic_summary, model_key
from repro.results.measurements import ManifestResult, Measuring, derive_comparisons


@lru_cache(maxsize=1)
def _fingerprint() -> str:
    """The FLOP check's (the models, the schedules, the shapes, torch's and fvcore's versions) and the operator
    counter's code."""
    code = b"".join((shipped("repro") / "measure" / name).read_bytes() for name in ("latency.py", "timing.py"))
    return hashlib.sha256(flop_check._fingerprint().encode() + code).hexdigest()[:16]


def row_counts(row: Row, cache: Path | None = None) -> dict[str, Any]:
    """A row's analytic metrics, counted without training or timing; kept in the cache folder `cache` (None:
    counted every time)."""
    key = json.dumps(
        {
            "model": model_key(row.dataset, row.backbone, row.head),
            "measures": sorted({"flops", "latency"} & set(row.measures)),
        },
        sort_keys=True,
    )
    path = None
    if cache is not None:
        name = hashlib.sha256(f"{_fingerprint()}|{key}".encode()).hexdigest()[:24]
        path = cache_dir(cache, "readings") / f"{name}.json"
        kept = read_json(path)
        if isinstance(kept, dict) and kept.get("key") == key and isinstance(kept.get("counts"), dict):
            return kept["counts"]
    out = _count(row)
    if path is not None:
        write_json(path, {"key": key, "counts": out})
    return out


def _count(row: Row) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if "flops" in row.measures:
        out.update(analytic_summary(row.dataset, row.backbone, row.head))
    if "latency" in row.measures:
        from repro.measure.latency import operator_counts

        out.update(operator_counts(row))
    return out


class Counter:
    """The recount callable: counts each varied row once, and keeps what it counted and the CPU time it took."""

    def __init__(self, cache: Path | None = None) -> None:
        self.cache = cache
        self.rows: dict[str, dict[str, Any]] = {}
        self.models: set[str] = set()
        self.cpu_seconds = 0.0

    def __call__(self, row: Row) -> dict[str, Any]:
        if row.id not in self.rows:
            start = time.process_time()
            self.rows[row.id] = row_counts(row, self.cache)
            self.cpu_seconds += time.process_time() - start
            self.models.add(model_key(row.dataset, row.backbone, row.head))
        return self.rows[row.id]

    def detail(self) -> dict[str, Any]:
        return {"rows": self.rows, "models": len(self.models), "cpu_seconds": round(self.cpu_seconds, 3)}


def count_readings(manifest: Manifest, result: ManifestResult, cache: Path | None = None) -> dict[str, Any] | None:
    """What counting every row the manifest's analytic (and rho-ordered) claims read, under each alternative
    reading, came to (details[READINGS_DETAIL] of the table's results), kept in the cache folder `cache`; None
    when no claim is counted again."""
    if not recounted_claims(manifest):
        return None
    counter = Counter(cache)
    decide_readings(manifest, evidence_for(manifest, result), counter)
    return counter.detail()


def readings_for(manifest: Manifest, profile: str = "smoke") -> tuple[list[ClaimReadings], dict[str, Any]]:
    """`repro readings`: the manifest's analytic and rho-ordered claims under every reading, from counts alone (no
    training, no timing): the rows they read counted as the table would, then every alternative. A rho-ordered
    claim has no gaps here: it is `not run`, with the order rho puts its settings in under each reading."""
    from repro.claims.references import claim_rows

    read = {r for c in recounted_claims(manifest) for r in claim_rows(c, manifest.comparisons)}
    counts = Measuring()
    base = Counter()
    for row in manifest.rows:
        if row.id in read:
            for metric, value in base(row).items():
                counts.set_row(row.id, metric, value)
    measured = derive_comparisons(manifest.comparisons, counts.done())
    result = ManifestResult(
        manifest.id,
        manifest.title,
        manifest.paper_ref,
        manifest.paper_table,
        profile,
        measured,
        [],
        {},
        manifest.profiles.get(profile),
    )
    counter = Counter()
    entries = decide_readings(manifest, evidence_for(manifest, result), counter, trained=False)
    # The alternatives' counts alone, as a table's run records them (count_readings: the rows as chosen are the
    # FLOP check's there), so that `repro readings` and the report give one figure.
    return entries, counter.detail()
