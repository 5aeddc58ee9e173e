"""Where claims are decided: one table's claims on its stored measurements, and Holm over a report's family.

Both the pipeline (after a table is measured) and `repro report` (on results already on disk, with the
current rules and manifests) call these; the report layer only renders the verdicts they return.

    evidence_for(manifest, result, others)   the Evidence a table's claims are decided on, from its typed Profile,
                                             with the other tables its claims read (repro.claims.across)
    decide_table(manifest, result, others)   every claim of the table -> result.verdicts, and its analytic claims
                                             under each alternative reading -> result.readings
    decide_family(verdicts)                  Holm's adjustment over every significance-tested claim of one report
    decided_results(dir, profile, ms)        each manifest's stored result, decided, with Holm over all of them, and
                                             the verdicts each shows from the table that decides them
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable, Protocol

from repro.claims.across import Others, shown_verdicts, with_tables
from repro.claims.core import ClaimLike, Evidence
from repro.claims.family import holm_adjust
from repro.claims.under_readings import decide_readings
from repro.claims.references import ManifestLike
from repro.claims.verdicts import evaluate
from repro.spec.profiles import Profile
from repro.results.measurements import READINGS_DETAIL, ManifestResult, Verdict, load_result


class DecidedManifest(ManifestLike, Protocol):
    """The fields of repro.plan.manifest.Manifest read here (claims never import manifests)."""

    id: str
    seeds: int | None
    claims: Iterable[ClaimLike]
    profiles: dict[str, Profile]

    def trained_datasets(self) -> tuple[str, ...]: ...


def evidence_for(manifest: DecidedManifest, result: ManifestResult, others: Others | None = None) -> Evidence:
    """What the table's claims are decided on: its measurements, and the profile they were made under as
    stored with them (a result from before that was stored falls back to the manifest's profile of that name);
    with the measurements of the other tables its claims read, from `others` (id -> (manifest, result or None))."""
    settings = result.profile_settings or manifest.profiles.get(result.profile)
    kind = settings.evidence if settings else "pipeline"
    evidence = Evidence(
        manifest_id=manifest.id, paper_table=manifest.paper_table, profile=result.profile,
        metrics=dict(result.measured.metrics), missing=dict(result.measured.missing), device=result.device_type,
        paper_scale=kind == "paper", kind=kind, seeds=settings.seeds if settings else None,
        paper_seeds=manifest.seeds, settings=settings, datasets=manifest.trained_datasets(),
        data=tuple(result.data_checks()),
        comparison_rows={c.id: (c.row, c.baseline) for c in manifest.comparisons},
    )
    return with_tables(evidence, manifest, others or {})


def decide_table(manifest: DecidedManifest, result: ManifestResult, others: Others | None = None) -> ManifestResult:
    """(Re)decide the table's claims on the result's measurements with the current rules, and its analytic
    claims under each alternative reading from the counts stored with them (repro.measure.reading_counts); in place.
    `others`: the other tables' manifests and stored results, for the claims that read them and the verdicts
    this table shows (result.shown)."""
    evidence = evidence_for(manifest, result, others)
    result.verdicts = [evaluate(claim, evidence) for claim in manifest.claims]
    counted = result.measured.details.get(READINGS_DETAIL, {}).get("rows", {})
    result.readings = decide_readings(manifest, evidence, lambda row: counted.get(row.id))
    result.shown = shown_verdicts(manifest, others or {})
    return result


def decide_family(verdicts: Iterable[Verdict]) -> int:
    """Holm over one report's significance-tested empirical verdicts (repro.claims.family); the family's size."""
    return holm_adjust(verdicts)


def decided_results(results_dir: Path, profile: str,
                    manifests: list[DecidedManifest]) -> list[tuple[DecidedManifest, ManifestResult | None]]:
    """Each manifest with its stored result (None: not run into this folder), its claims decided again by the
    current rules and manifest (reading the other tables' results where a claim spans tables), Holm applied over
    every verdict of the report, and the verdicts each table shows from the table that decides them."""
    entries = [(m, load_result(results_dir, profile, m.id)) for m in manifests]
    stored = {m.id: (m, r) for m, r in entries}
    for m, r in entries:
        if r is not None:
            decide_table(m, r, stored)
    decide_family(v for _, r in entries if r for v in r.verdicts)
    for m, r in entries:  # after Holm: a shown verdict carries its p_holm
        if r is not None:
            r.shown = shown_verdicts(m, stored)
    return entries
