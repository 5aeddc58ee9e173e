"""Where claims are decided: one table's claims on its stored measurements, and Holm over a report's family.

Both the pipeline (after a table is measured) and `repro report` (on results already on disk, with the
current rules and manifests) call these; the report layer only renders the verdicts they return.

    evidence_for(manifest, result, others)   the Evidence a table's claims are decided on, from its typed Profile,
                                             with the other tables its claims read (repro.claims.across)
    decide_table(manifest, result, others)   a new result: every claim of the table decided (verdicts, each
                                             decided empirical one with its stability: repro.claims.stability), its
                                             analytic claims under each alternative reading (readings), and the
                                             verdicts it shows from the tables that decide them (shown)
    decide_family(results)                   new results, Holm's adjustment (repro.results.family) applied over every
                                             significance-tested claim of one report
    decided_results(dir, profile, ms)        each manifest's stored result, decided, with Holm over all of them, and
                                             the verdicts each shows from the table that decides them
    decided_folder(folder, ms)               a results folder's tables (repro.results.frames.Folder) decided the same
                                             way, profile by profile: what `repro export` and `repro compare` read, so
                                             that a verdict typed into a results.json is never taken as one

A result handed in is never written into: each step returns new, frozen values.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Iterable, Protocol, Sequence, TypeVar

from repro.claims.across import Others, shown_verdicts, with_tables
from repro.claims.core import Evidence
from repro.claims.stability import with_stability
from repro.claims.under_readings import decide_readings
from repro.claims.references import ManifestLike
from repro.claims.verdicts import evaluate
from repro.spec.profiles import Profile
from repro.spec.readings import Reading
from repro.results.family import holm_adjust
from repro.results.frames import Folder
from repro.results.measurements import READINGS_DETAIL, ManifestResult, load_result


class DecidedManifest(ManifestLike, Protocol):
    """The fields of repro.plan.manifest.Manifest read here (claims never import manifests)."""

    @property
    def seeds(self) -> int | None: ...
    @property
    def profiles(self) -> dict[str, Profile]: ...
    @property
    def readings(self) -> tuple[Reading, ...]: ...

    def trained_datasets(self) -> tuple[str, ...]: ...


M = TypeVar("M", bound=DecidedManifest)  # the caller's manifests come back as they went in (a Manifest stays one)


def evidence_for(manifest: DecidedManifest, result: ManifestResult, others: Others | None = None) -> Evidence:
    """What the table's claims are decided on: its measurements, and the profile they were made under as
    stored with them (a result from before that was stored falls back to the manifest's profile of that name);
    with the measurements of the other tables its claims read, from `others` (id -> (manifest, result or None))."""
    settings = result.profile_settings or manifest.profiles.get(result.profile)
    kind = settings.evidence if settings else "pipeline"
    evidence = Evidence(
        manifest_id=manifest.id,
        paper_table=manifest.paper_table,
        profile=result.profile,
        metrics=dict(result.measured.metrics),
        missing=dict(result.measured.missing),
        device=result.device_type,
        paper_scale=kind == "paper",
        kind=kind,
        seeds=settings.seeds if settings else None,
        paper_seeds=manifest.seeds,
        settings=settings,
        datasets=manifest.trained_datasets(),
        data=tuple(result.data_checks()),
        comparison_rows={c.id: (c.row, c.baseline) for c in manifest.comparisons},
    )
    return with_tables(evidence, manifest, others or {})


def decide_table(manifest: DecidedManifest, result: ManifestResult, others: Others | None = None) -> ManifestResult:
    """The result with the table's claims (re)decided on its measurements by the current rules, and its analytic
    claims under each alternative reading from the counts stored with them (repro.measure.reading_counts): a new
    value. `others`: the other tables' manifests and stored results, for the claims that read them and the
    verdicts this table shows (`shown`)."""
    evidence = evidence_for(manifest, result, others)
    counted = result.measured.details.get(READINGS_DETAIL, {}).get("rows", {})
    return dataclasses.replace(
        result,
        verdicts=[with_stability(claim, evidence, evaluate(claim, evidence)) for claim in manifest.claims],
        readings=decide_readings(manifest, evidence, lambda row: counted.get(row.id)),
        shown=shown_verdicts(manifest, others or {}),
    )


def decide_family(results: list[ManifestResult | None]) -> list[ManifestResult | None]:
    """The results of one report (None: a table not run), each with Holm's adjustment over every
    significance-tested empirical verdict of them all (repro.results.family)."""
    adjusted, _ = holm_adjust(v for r in results if r is not None for v in r.verdicts)
    out: list[ManifestResult | None] = []
    at = 0
    for r in results:
        if r is None:
            out.append(None)
            continue
        out.append(dataclasses.replace(r, verdicts=adjusted[at : at + len(r.verdicts)]))
        at += len(r.verdicts)
    return out


def decided_results(results_dir: Path, profile: str, manifests: Sequence[M]) -> list[tuple[M, ManifestResult | None]]:
    """Each manifest with its stored result (None: not run into this folder), its claims decided again by the
    current rules and manifest (reading the other tables' results where a claim spans tables), Holm applied over
    every verdict of the report, and the verdicts each table shows from the table that decides them."""
    return decide_all([(m, load_result(results_dir, profile, m.id)) for m in manifests])


def decide_all(
    entries: Sequence[tuple[M, ManifestResult | None]],
) -> list[tuple[M, ManifestResult | None]]:
    """decided_results on results already read: one profile's tables, each with its stored result or None."""
    manifests = [m for m, _ in entries]
    stored = {m.id: (m, r) for m, r in entries}
    # in order: a table shows what an earlier one decided as decided here, as one decided in place did
    decided: dict[str, tuple[M, ManifestResult | None]] = {}
    for m in manifests:
        r = stored[m.id][1]
        decided[m.id] = (m, decide_table(m, r, {**stored, **decided}) if r is not None else None)
    entries = list(zip(manifests, decide_family([decided[m.id][1] for m in manifests])))
    final = {m.id: (m, r) for m, r in entries}
    # after Holm: a shown verdict carries its p_holm
    return [(m, dataclasses.replace(r, shown=shown_verdicts(m, final)) if r is not None else None) for m, r in entries]


def rows_left_out(entries: Sequence[tuple[DecidedManifest, ManifestResult | None]]) -> list[str]:
    """'<table>: <row>, ...' for each table whose stored result has runs of rows its manifest here lacks (a
    [[sensitivity]] table's twins, trained with a manifests folder of one's own and read without it): deciding by
    this manifest leaves them out of the report."""
    out = []
    for manifest, result in entries:
        if result is None:
            continue
        known = {row.id for row in manifest.rows}
        extra = [row for row in result.measured.details.get("runs", {}) if row not in known]
        if extra:
            out.append(f"{manifest.id}: {', '.join(extra)}")
    return out


def decided_folder(folder: Folder, manifests: Iterable[DecidedManifest]) -> tuple[Folder, list[str]]:
    """The folder with each table's verdicts and readings decided again from its stored measurements, profile by
    profile, as `repro report` decides them; and the tables no manifest here knows ("<profile>/<id>"): nothing
    decides their claims, so each keeps its stored numbers with the status "not run", never its stored status."""
    manifests = list(manifests)
    known = {m.id for m in manifests}
    results: list[ManifestResult] = []
    undecided: list[str] = []
    for profile in dict.fromkeys(r.profile for r in folder.results):
        mine = {r.manifest_id: r for r in folder.results if r.profile == profile}
        # a table of this folder has a result, so its decided one is not None
        decided = {m.id: r for m, r in decide_all([(m, mine.get(m.id)) for m in manifests]) if r is not None}
        for table, result in mine.items():
            if table in known:
                results.append(decided[table])
            else:
                undecided.append(f"{profile}/{table}")
                note = "no manifest here decides it: its numbers are as its results.json stores them"
                verdicts = [dataclasses.replace(v, status="not run", note=note, p_holm=None) for v in result.verdicts]
                results.append(dataclasses.replace(result, verdicts=verdicts, readings=[], shown=[]))
    readings = {(r.profile, r.manifest_id): [x.to_dict() for x in r.readings] for r in results}
    # what each twin row's alternative is, by the readings the manifests were read with (a file of one's own too)
    alternatives = {a.id: f"{r.id}/{a.id}" for m in manifests for r in m.readings for a in r.alternatives}
    return dataclasses.replace(folder, results=results, readings=readings, alternatives=alternatives), undecided
