"""One row of the appendix per claim: what it finds, what decides it, what it costs, what is expected, what was
measured.

    finding     the manifest's statement and the paper section it comes from
    decided by  `repro <table> --profile <p>` (`repro run <table> <other tables>` for a finding that spans
                tables, repro.claims.across): the appendix's profile where that profile decides the claim
                (repro.claims.verdicts: analytic claims at every profile, the others on the paper's data), else
                the paper's protocol (repro.cost.plan.BASE_PROFILE); the hardware its rows' measures need
    cost        the cost model's, for the rows the claim reads (repro.cost.claim_cost), at the paper's protocol
                and at the appendix's profile, each labelled fitted, measured or reference
    expected    the rule (repro.claims.RULES: what it tests), the paper's values it is judged against (printed,
                with the precision they claim and the statistics the text gives) and the rule's settings
    badge       the ACM badge the claim supports at the appendix's profile, by what that profile is evidence of
    readings    the readings (repro/spec/readings.toml) that apply to its rows: an alternative may change its
                verdict; for an analytic claim, those that change no count are left out, and with results the
                alternatives under which its verdict does change are named
    verdict     with a results folder: the verdict there and the hashes of the run records behind it
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Mapping

from repro.claims import RULES
from repro.claims.rules import rule_config
from repro.claims.references import COMPARISON_KEYS, PAPER_KEYS, PATH_KEYS, ROW_KEYS
from repro.claims.verdicts import DECIDING_KINDS
from repro.cost.claim_cost import ClaimCost
from repro.cost.plan import BASE_PROFILE
from repro.plan.manifest import Claim, Manifest
from repro.results.measurements import ManifestResult, Verdict
from repro.spec.paper import PaperValue, paper_value

# The ACM badge a profile's runs support, by what the profile is evidence of (repro.spec.profiles.Profile).
BADGES = {
    "paper": "Results Reproduced",
    "reduced": "Results Reproduced (reduced protocol)",
    "functional": "Functional",
    "pipeline": "none (a pipeline check)",
}
_REFERENCES = (
    set(PAPER_KEYS) | set(ROW_KEYS) | set(COMPARISON_KEYS) | set(PATH_KEYS) | {"excluded", "routers", "configs"}
)


@dataclass(frozen=True)
class ClaimRow:
    manifest: str
    claim: str
    finding: str
    section: str
    scope: str
    command: str  # the command that decides it
    decided_at: str  # the profile it names
    hardware: str
    cost_full: str  # at the paper's protocol
    cost_here: str  # at the appendix's profile ('' when that is the paper's protocol)
    rule: str
    expected: str
    badge: str
    readings: str
    verdict: str = ""  # '' without results
    stability: str = ""  # beside a decided empirical verdict: Verdict.stability_text
    runs: tuple[str, ...] = ()  # hashes of the run records behind the verdict
    runs_note: str = ""  # why there are none


def deciding_profile(manifest: Manifest, claim: Claim, profile: str) -> str:
    """The appendix's profile where it decides the claim, else the paper's protocol."""
    if claim.scope == "analytic" or manifest.profiles[profile].evidence in DECIDING_KINDS:
        return profile
    return BASE_PROFILE


def trained_rows(tables: list[Manifest], claim: Claim) -> list[tuple[str, str]]:
    """(table, row) of each training row the claim reads (`tables`, claim_tables); none for an analytic claim,
    which reads its rows' counts, never their training (repro.cost.claim_cost.claim_cost)."""
    if claim.scope == "analytic":
        return []
    return [(t.id, r.id) for t in tables for r in t.rows if "accuracy" in r.measures]


def hardware(tables: list[Manifest], claim: Claim, profile: str, device: str) -> str:
    """What the claim's measures need at `profile`, over the rows it reads (`tables`, claim_tables); `device`: the
    GPU the cost model prices it on."""
    measures = {m for t in tables for r in t.rows for m in r.measures}
    runs_on = tables[0].profiles[profile].device
    if claim.scope == "gpu":
        return f"an NVIDIA GPU (GPU-scoped; priced as {device})"
    if trained_rows(tables, claim):
        return "the CPU (the profile's device)" if runs_on == "cpu" else f"a GPU (priced as {device})"
    if "latency" in measures:
        return "the CPU or a GPU (operator counts)"
    return "the CPU (FLOP counts)"


def command(tables: list[Manifest], profile: str) -> str:
    """`repro <table> --profile <p>`; a claim that reads other tables needs them run too (`repro run` takes them
    all)."""
    ids = " ".join(t.id for t in tables)
    return f"repro {ids} --profile {profile}" if len(tables) == 1 else f"repro run {ids} --profile {profile}"


def describe_paper_value(pv: PaperValue) -> str:
    """'dw072.gap = +1.17% (p=...) ±0.005% as printed; n=10, sd 0.9 (Section 4.3)'."""
    text = f"{pv.key} = {pv.printed or pv.implied_sign}"
    if pv.value is not None:
        text += f", to ±{pv.tolerance:g}{pv.unit} ({'approximate' if pv.approx else 'as printed'})"
    stats = [
        f"n={pv.n}" if pv.n else "",
        f"sd {pv.sd:g}" if pv.sd is not None else "",
        f"d={pv.d:g}" if pv.d is not None else "",
        f"{pv.positive_seeds}/{pv.n} seeds positive" if pv.positive_seeds is not None and pv.n else "",
    ]
    stats = [s for s in stats if s]
    return text + (f"; {', '.join(stats)}" if stats else "") + f" (Section {pv.section})"


def expected_result(manifest: Manifest, claim: Claim) -> str:
    """The rule's test, the paper's values it is judged against and the rule's settings, in one line."""
    rule = RULES.get(claim.rule)
    parts = [rule.doc]
    for key in PAPER_KEYS:
        ref = claim.params.get(key)
        pv = paper_value(manifest.paper_table, ref) if isinstance(ref, str) else None
        if pv is not None:
            parts.append(f"paper: {describe_paper_value(pv)}")
    config = rule_config(claim.rule)(**claim.params)
    settings = [
        f"{f.name} {_value(getattr(config, f.name))}"
        for f in dataclasses.fields(config)
        if f.name not in _REFERENCES and getattr(config, f.name) not in (None, (), {}, "")
    ]
    if settings:
        parts.append("settings: " + ", ".join(settings))
    return "; ".join(parts)


def _value(v) -> str:
    return ", ".join(map(str, v)) if isinstance(v, (tuple, list)) else f"{v:g}" if isinstance(v, float) else str(v)


def readings_of(tables: list[Manifest], claim: Claim, result: ManifestResult | None) -> str:
    """The readings that apply to the rows the claim reads (`tables`, claim_tables) that can change its verdict."""
    own = tables[0]
    readings = list({r.id: r for t in tables for r in t.readings if any(r.applies_to(row) for row in t.rows)}.values())
    if not trained_rows(tables, claim):  # a count or a timing changes only
        readings = [r for r in readings if not all(r.training_only(a) for a in r.alternatives)]  # with the model
    readings += [r for r in own.readings if r.applies_to_claim(own.id, claim.id) and r not in readings]  # its rule
    text = ", ".join(r.id for r in readings) or "none"
    decided = next((c for c in (result.readings if result else []) if c.claim == claim.id), None)
    if decided is not None and readings:
        changes = [f"{o.label} ({o.reading})" for o in decided.alternatives if o.status != decided.chosen.status]
        text += (
            f"; here the verdict changes under: {'; '.join(changes)}"
            if changes
            else "; here no alternative changes the verdict"
        )
    return text


def claim_row(
    tables: list[Manifest],
    claim: Claim,
    profile: str,
    costs: dict[str, ClaimCost],
    device: str,
    results: Mapping[str, ManifestResult | None] | None,
    unverified: bool = False,
) -> ClaimRow:
    """The row of one claim. `tables`: its own and the others it reads, cut down to the rows it reads
    (repro.cost.claim_cost.claim_tables); `costs` by profile name (the paper's protocol's and `profile`'s);
    `results` by manifest id, None without a results folder; `unverified`: those results trained on files that
    fail their published checksums, so no claim gets a Results badge."""
    manifest = tables[0]
    decided_at = deciding_profile(manifest, claim, profile)
    here = costs[profile]
    trained = trained_rows(tables, claim)
    evidence = manifest.profiles[profile].evidence
    if unverified:
        badge, cost_here = "none: the results trained on unverified data", here.text()
    elif here.runs or not trained:
        badge, cost_here = BADGES.get(evidence, evidence), here.text()
    else:  # a claim on training rows the profile leaves out is not run at it
        why = f"its rows are not trained at {profile}"
        badge, cost_here = f"none: {why}", why
    cost_here = "" if profile == BASE_PROFILE else cost_here
    result = results.get(manifest.id) if results is not None else None
    row = ClaimRow(
        manifest.id,
        claim.id,
        claim.statement,
        claim.section,
        claim.scope,
        command(tables, decided_at),
        decided_at,
        hardware(tables, claim, decided_at, device),
        costs[BASE_PROFILE].text(),
        cost_here,
        claim.rule,
        expected_result(manifest, claim),
        badge,
        readings_of(tables, claim, result),
    )
    if results is None:
        return row
    if result is None:
        return dataclasses.replace(row, verdict="not run", runs_note="the table was not run into this folder")
    verdict = next((v for v in result.verdicts if v.claim == claim.id), None)
    runs = tuple(
        r.hash
        for table, row_id in trained
        if (ran := results.get(table)) is not None
        for r in sorted(ran.measured.runs(row_id), key=lambda r: r.seed)
    )
    note = (
        ""
        if runs
        else (
            "no training run: FLOP counts and timings, in its table's results.json"
            if not trained
            else "no run record at this profile"
        )
    )
    return dataclasses.replace(
        row,
        verdict=verdict.status_text if verdict else "not run",
        runs=runs,
        runs_note=note,
        stability=verdict.stability_text if verdict else "",
        badge=earned(badge, evidence, verdict),
    )


def earned(badge: str, evidence: str, verdict: Verdict | None) -> str:
    """A Results badge as this folder's verdict earns it: beside a verdict that is not reproduced, or reproduced
    but unstable under its seeds, the badge the profile supports read as one the results had earned."""
    if evidence not in ("paper", "reduced") or badge.startswith("none"):
        return badge
    if verdict is None or verdict.status != "reproduced":
        return f"none here: {verdict.status if verdict is not None else 'not run'}"
    if verdict.unstable:
        return f"{badge}, unstable under its seeds"
    return badge
