"""Deciding one claim: the rule the manifest names, applied to the evidence, as a Verdict.

What a profile may decide: analytic claims (FLOP counts) at every profile; empirical and
GPU-scoped claims only on evidence of kind "reduced" or "paper" (repro.plan.manifest.Profile.evidence).
On the other kinds the rule still runs, so the verdict shows what was measured, but it is
`not run`, with the reason in its note. A decided comparison whose models did not learn is
`inconclusive` (repro.claims.learned).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from repro.claims.core import ClaimLike, Evidence, EvidenceKind, NotRun
from repro.claims.gaps import seeds_needed
from repro.claims.learned import did_not_learn
from repro.claims.references import PAPER_KEYS, claim_rows
from repro.claims.rules import RULES, rule_config
from repro.spec.paper import paper_value
from repro.results.measurements import Verdict

DECIDING_KINDS: frozenset[EvidenceKind] = frozenset({"reduced", "paper"})
EXPLAINER = "explainer-and-summary"
# Why a kind of evidence decides no measured claim: "<profile> is <kind words>: <why>".
_UNDECIDED = {
    "pipeline": ("a pipeline check", "synthetic data decides no {scope} claim"),
    "functional": ("a functional check", "real images that are not the paper's decide no {scope} claim"),
}
_SCOPE_WORDS = {"empirical": "empirical", "gpu": "GPU-scoped", "extension": "extension"}


def evaluate(claim: ClaimLike, ev: Evidence) -> Verdict:
    """Decide one manifest claim on the evidence; never raises for missing data."""
    base: dict[str, Any] = dict(
        claim=claim.id,
        statement=claim.statement,
        section=claim.section,
        scope=claim.scope,
        paper_scale=ev.paper_scale or claim.scope == "analytic",
        seeds_needed=_seeds_needed(claim, ev),
        source=reference_source(claim, ev.paper_table),
        kind=getattr(claim, "kind", ""),
        rule=claim.rule,
        rows=_rows_read(claim, ev),
        derived_from=list(getattr(claim, "derived_from", ())),
    )
    if claim.scope == "gpu" and ev.device != "cuda":
        return Verdict(
            **base, status="not run", evidence=f"needs a GPU (scope gpu); measured on {ev.device}, so not decided"
        )
    rule = RULES.get(claim.rule)
    params = rule_config(claim.rule)(**claim.params)
    undecided = claim.scope != "analytic" and ev.kind not in DECIDING_KINDS
    try:
        out = rule.builder(params, ev)
    except NotRun as why:
        return Verdict(
            **base, status="not run", evidence=str(why), note=undecided_reason(ev, claim.scope) if undecided else ""
        )
    shown: dict[str, Any] = dict(
        evidence=out.evidence, measured=dict(out.measured), reported=dict(out.reported), tolerance=out.tolerance
    )
    if claim.scope == "analytic":
        return Verdict(**base, status=out.status, failed=list(out.failed), **shown)
    if undecided:
        return Verdict(**base, status="not run", note=undecided_reason(ev, claim.scope), **shown)
    try:
        untrained = did_not_learn(ev, out.must_have_learned)
    except NotRun as why:
        return Verdict(**base, status="not run", note=f"cannot check that the models learned: {why}", **shown)
    note = _protocol_note(ev)
    base["unverified_data"] = ev.unverified_data
    if untrained:
        return Verdict(
            **base, status="inconclusive", failed=[f"learned: {lr.describe()}" for lr in untrained], note=note, **shown
        )
    return Verdict(**base, status=out.status, failed=list(out.failed), note=note, p_value=out.p_value, **shown)


@dataclass(frozen=True)
class _Pair:
    id: str
    row: str
    baseline: str


def _rows_read(claim: ClaimLike, ev: Evidence) -> list[str]:
    return list(claim_rows(claim, [_Pair(c, row, base) for c, (row, base) in ev.comparison_rows.items()]))


def undecided_reason(ev: Evidence, scope: str) -> str:
    """Why evidence of a non-deciding kind leaves a measured claim undecided, naming the profile."""
    what, why = _UNDECIDED.get(ev.kind, (f"a {ev.kind} profile", "it decides no {scope} claim"))
    return f"{ev.profile} is {what}: {why.format(scope=_SCOPE_WORDS.get(scope, scope))}"


def _protocol_note(ev: Evidence) -> str:
    """How the profile the evidence was measured under departs from the paper's protocol, from its settings."""
    departs = ev.settings.departures(ev.paper_seeds, ev.datasets) if ev.settings is not None else []
    departs += [d for check in ev.data for d in (check.checksum_departure(), check.size_departure()) if d]
    if departs:
        return f"decided on the '{ev.profile}' profile, which departs from the paper's protocol: " + "; ".join(departs)
    if ev.kind == "reduced":
        return f"decided on the '{ev.profile}' profile, a reduced protocol: not the paper's protocol"
    if not ev.paper_scale:
        return f"decided on the '{ev.profile}' profile: not a paper-scale result"
    return ""


def reference_source(claim: ClaimLike, paper_table: str) -> str:
    """Which text the reported numbers a claim is judged against come from: the explainer's if any one does."""
    keys = [claim.params.get(name) for name in PAPER_KEYS]
    sources = {pv.source for key in keys if isinstance(key, str) and (pv := paper_value(paper_table, key)) is not None}
    return EXPLAINER if EXPLAINER in sources else "method-and-results"


def _seeds_needed(claim: ClaimLike, ev: Evidence) -> int | None:
    key = claim.params.get("paper")
    pv = paper_value(ev.paper_table, key) if isinstance(key, str) else None
    return seeds_needed(pv) if pv is not None and claim.scope != "analytic" else None
