"""The appendix assembled: the facts the sections are worded from, the data sets and weights, one row per claim.

The facts are computed once: `repro verify-all`'s time and the disk at the paper's protocol and at the
appendix's profile (repro.cost), the data sets the manifests train on (repro.data.sources) and the pretrained
weights the profiles' runs start from. The sections (repro.report.appendix.sections) word them in the ACM /
cTuning order: abstract, check-list, description, installation, workflow, evaluation (the claims' rows,
repro.report.appendix.claim_rows), customisation, notes.
"""

from __future__ import annotations

from pathlib import Path

from repro.claims.headline import claim_counts
from repro.cost.claim_cost import claim_cost, claim_tables
from repro.cost.disk import disk_space, gigabytes
from repro.cost.estimate import CostModel, device_time, duration
from repro.cost.plan import BASE_PROFILE
from repro.cost.wall_time import Rates, command_time
from repro.data.sizes import decoded_cache_bytes
from repro.data.sources import dataset_source
from repro.models.weights import HASH_PREFIX, published_url
from repro.plan.manifest import Manifest
from repro.plan.table_plan import Plans, TablePlan
import repro.report.appendix.sections as sections
from repro.report.appendix.claim_rows import claim_row
from repro.spec.untested import shipped_untested
from repro.report.appendix.parts import Appendix, DatasetEntry, Facts, Inputs, VerifyAll, WeightsEntry
from repro.results.measurements import ManifestResult


def _verify_all(mine: list[TablePlan], model: CostModel, rates: Rates) -> VerifyAll:
    """`repro verify-all --profile <profile>` of these tables' plans as the cost model prices it
    (repro.cost.wall_time)."""
    t = command_time(mine, model, rates)
    cost = model.cost(mine)
    device = f"{device_time(cost.device_seconds, cost.kind)} in {cost.runs} runs" if cost.runs else "no training"
    return VerifyAll(
        f"{duration(t.seconds)} wall ({t.basis()})",
        device,
        t.preparing,
    )


def _runs_by_profile(plans: Plans, manifests: list[Manifest]) -> dict[str, list]:
    out: dict[str, dict] = {}
    for m in manifests:
        for name in m.profiles:
            for p in plans.of(m.id, name).runs:
                out.setdefault(name, {}).setdefault(p.cfg.hash, p.cfg)
    return {name: list(runs.values()) for name, runs in out.items()}


def _datasets(manifests: list[Manifest], runs: dict[str, list], model: CostModel) -> list[DatasetEntry]:
    names = sorted({r.dataset for m in manifests for r in m.rows if "accuracy" in r.measures})
    out = []
    for name in names:
        source = dataset_source(name, model.cache)
        users = tuple(p for p, cfgs in runs.items() if any(c.dataset == name and c.data == "real" for c in cfgs))
        cache = decoded_cache_bytes(name, model.data_dir, model.cache)
        out.append(
            DatasetEntry(
                source.title,
                source.archives,
                len(source.checked_files),
                source.checksum_note,
                gigabytes(cache) if cache else "",
                users,
            )
        )
    return out


def _weights(runs: dict[str, list], cache: Path) -> list[WeightsEntry]:
    files: dict[str, tuple[str, set, set]] = {}
    for name, cfgs in runs.items():
        for cfg in cfgs:
            if cfg.torchvision_weights:
                url = published_url(cfg.backbone["name"], cache)
                entry = files.setdefault(url, (url, set(), set()))
                entry[1].add(cfg.backbone["name"])
                entry[2].add(name)
    out = []
    for url, backbones, profiles in files.values():
        file = url.rsplit("/", 1)[-1]
        match = HASH_PREFIX.search(file)
        out.append(
            WeightsEntry(tuple(sorted(backbones)), file, url, match.group(1) if match else "", tuple(sorted(profiles)))
        )
    return sorted(out, key=lambda w: w.file)


def build_appendix(
    entries: list[tuple[Manifest, ManifestResult | None]], profile: str, inputs: Inputs, with_results: bool
) -> Appendix:
    """The appendix of `profile` for these manifests (each with its result, or None); `with_results`: the rows
    show the verdicts (None: the table was not run into the folder)."""
    manifests = [m for m, _ in entries]
    if not manifests:
        raise ValueError("an appendix needs at least one manifest")
    plans, model, rates = inputs.plans, inputs.model, inputs.rates
    shown = [BASE_PROFILE] + ([profile] if profile != BASE_PROFILE else [])
    device = model.device(manifests[0].profiles[BASE_PROFILE]).device
    at = {p: {m.id: plans.of(m.id, p) for m in manifests if p in m.profiles} for p in shown}
    results = {m.id: r for m, r in entries} if with_results else None
    unverified = tuple(
        dict.fromkeys(
            d
            for _, r in entries
            if with_results and r is not None
            for c in r.data_checks()
            if (d := c.checksum_departure())
        )
    )
    rows = [
        claim_row(
            [t.manifest for t in claim_tables(at[profile][m.id], c, at[profile])],
            c,
            profile,
            {p: claim_cost(at[p][m.id], c, model, rates, at[p]) for p in shown},
            device,
            results,
            bool(unverified),
        )
        for m in manifests
        for c in m.claims
    ]
    runs = _runs_by_profile(plans, manifests)
    facts = Facts(
        manifests,
        profile,
        shown,
        inputs,
        {p: _verify_all(list(at[p].values()), model, rates) for p in shown},
        {p: sections.disk_text(disk_space(list(at[p].values()), model)) for p in shown},
        _datasets(manifests, runs, model),
        claim_counts(manifests),
        unverified,
    )
    return Appendix(
        profile,
        BASE_PROFILE,
        sections.paper_title(inputs.package),
        sections.abstract(facts),
        sections.checklist(facts),
        sections.hardware(facts),
        sections.software(facts),
        facts.datasets,
        _weights(runs, inputs.model.cache),
        sections.installation(facts),
        sections.workflow(facts),
        sections.evaluation(facts),
        rows,
        sections.customisation(facts),
        sections.notes(facts),
        with_results,
        unverified,
        shipped_untested(),
    )
