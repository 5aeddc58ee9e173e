"""Deciding one claim: the rule the manifest names, applied to the evidence, as a Verdict."""

from __future__ import annotations

from repro.claims.core import ClaimLike, Evidence, NotRun
from repro.claims.gaps import seeds_needed
from repro.claims.rules import RULES
from repro.paper import paper_value
from repro.results import Verdict


def evaluate(claim: ClaimLike, ev: Evidence) -> Verdict:
    """Decide one manifest claim on the evidence; never raises for missing data."""
    base = dict(claim=claim.id, statement=claim.statement, section=claim.section, scope=claim.scope,
                paper_scale=ev.paper_scale or claim.scope == "analytic", seeds_needed=_seeds_needed(claim, ev))
    if claim.scope == "gpu" and ev.device != "cuda":
        return Verdict(**base, status="not run",
                       evidence=f"needs a GPU (scope gpu); measured on {ev.device}, so not decided")
    rule = RULES.get(claim.rule)
    params = rule.config(**claim.params)
    try:
        out = rule.builder(params, ev)
    except NotRun as why:
        return Verdict(**base, status="not run", evidence=str(why))
    note = ""
    if claim.scope == "empirical" and not ev.paper_scale:
        note = f"decided on the '{ev.profile}' profile: not a paper-scale result"
    return Verdict(**base, status=out.status, evidence=out.evidence, failed=list(out.failed),
                   measured=dict(out.measured), reported=dict(out.reported), note=note)


def _seeds_needed(claim: ClaimLike, ev: Evidence) -> int | None:
    key = claim.params.get("paper")
    pv = paper_value(ev.paper_table, key) if isinstance(key, str) else None
    return seeds_needed(pv) if pv is not None and claim.scope != "analytic" else None
