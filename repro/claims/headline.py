"""The headline of a run: how many claims of each group there are, and how many came out each way.

Groups are scopes, with further splits, one function for a claim and for its verdict (`group`), so the count of
claims and the count of verdicts cannot disagree. Analytic claims come in three kinds (Claim.kind): numbers the
paper prints that a count matches ("analytic"), bounds and properties that follow from the paper's architecture
("property"), and self-tests of this artifact's own code ("self-test": shown, never counted as a reproduction of the
paper). Counted apart besides: a claim whose reported number appears only in the AI-written explainer that
accompanies the paper (Verdict.source); a bound this artifact sets where the text only points ("prediction"); and a
claim another claim implies (Claim.derived_from), so that one finding is not counted twice.

    claim_counts(manifests)    ClaimCounts: claims per group, computed once; its `line()` is what the terminal,
                               the report, `repro plan` and the appendix print
    count_verdicts(verdicts)   {group: {status: count}}
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, get_args

from repro.claims.verdicts import EXPLAINER, reference_source
from repro.results.measurements import Status, Verdict

SCOPES = ("analytic", "empirical", "gpu", "extension")
EXPLAINER_GROUP = "explainer"  # counted apart: from the explainer, not the paper's text
PROPERTY_GROUP, SELF_TEST_GROUP = "property", "self-test"  # analytic claims that match no printed number
PREDICTION_GROUP, DERIVED_GROUP = "prediction", "derived"  # this artifact's bounds; findings another claim implies
GROUPS = (
    "analytic",
    PROPERTY_GROUP,
    SELF_TEST_GROUP,
    "empirical",
    "gpu",
    "extension",
    EXPLAINER_GROUP,
    PREDICTION_GROUP,
    DERIVED_GROUP,
)
# shown, never counted as reproductions of the paper's findings (a derived one is counted as the claim it follows from)
NOT_REPRODUCTIONS = frozenset({SELF_TEST_GROUP, PREDICTION_GROUP, DERIVED_GROUP})
STATUSES: tuple[Status, ...] = get_args(Status)  # reproduced, not reproduced, inconclusive, not run
# How `ClaimCounts.line` names each group: the paper's claims first, then those counted apart.
WORDS = {
    "analytic": "printed numbers",
    PROPERTY_GROUP: "properties",
    "empirical": "empirical",
    "gpu": "GPU-scoped",
    SELF_TEST_GROUP: "self-tests",
    EXPLAINER_GROUP: "from the explainer",
    PREDICTION_GROUP: "predictions of this artifact",
    DERIVED_GROUP: "derived from another claim",
    "extension": "extension",
}
SHORT = {**WORDS, EXPLAINER_GROUP: "the explainer's", PREDICTION_GROUP: "predictions", DERIVED_GROUP: "derived"}


def group(scope: str, kind: str, source: str, derived: bool) -> str:
    """The headline group of a claim or verdict: the explainer's, a derived one, a kind's, or its scope."""
    if scope not in SCOPES:
        raise ValueError(f"scope {scope!r}; expected one of {', '.join(SCOPES)}")
    if source == EXPLAINER:
        return EXPLAINER_GROUP
    if derived:
        return DERIVED_GROUP
    if kind in (PROPERTY_GROUP, SELF_TEST_GROUP, PREDICTION_GROUP):
        return kind
    return scope


def group_of(v: Verdict) -> str:
    """The headline group a verdict counts in."""
    return group(v.scope, v.kind, v.source, bool(v.derived_from))


def claim_group(claim: Any, paper_table: str) -> str:
    """The headline group a manifest's claim counts in: the one its verdict will count in."""
    return group(claim.scope, claim.kind, reference_source(claim, paper_table), bool(claim.derived_from))


@dataclass(frozen=True)
class ClaimCounts:
    """Claims per headline group, computed once from the manifests (`claim_counts`)."""

    groups: dict[str, int]

    @property
    def total(self) -> int:
        return sum(self.groups.values())

    def line(self) -> str:
        """'Claims: 14 analytic, 52 empirical, 10 GPU-scoped; apart: 2 self-tests, 4 the explainer's, ...': the one
        wording of the counts (analytic: the printed numbers and the properties; the headline's lines split them)."""
        g = self.groups
        paper = [
            f"{g['analytic'] + g[PROPERTY_GROUP]} analytic",
            f"{g['empirical']} empirical",
            f"{g['gpu']} {WORDS['gpu']}",
        ]
        apart = [
            f"{g[k]} {SHORT[k]}"
            for k in (SELF_TEST_GROUP, EXPLAINER_GROUP, PREDICTION_GROUP, DERIVED_GROUP, "extension")
            if g[k]
        ]
        return f"Claims: {', '.join(paper)}" + (f"; apart: {', '.join(apart)}" if apart else "")

    def breakdown(self) -> str:
        """'10 GPU-scoped, 1 from the explainer, 2 predictions of this artifact': the groups present, in order."""
        return ", ".join(f"{n} {WORDS[g]}" for g, n in self.groups.items() if n)


def claim_counts(manifests: Iterable[Any], scope: str | None = None) -> ClaimCounts:
    """Every manifest's own claims (not those it only shows), of one scope if given, by headline group, every
    group present."""
    counts = dict.fromkeys(GROUPS, 0)
    for m in manifests:
        for c in m.claims:
            if scope is None or c.scope == scope:
                counts[claim_group(c, m.paper_table)] += 1
    return ClaimCounts(counts)


def count_verdicts(verdicts: Iterable[Verdict]) -> dict[str, dict[Status, int]]:
    """{group: {status: count}} with every group and status present (zeros included), in a fixed order."""
    counts = {g: dict.fromkeys(STATUSES, 0) for g in GROUPS}
    for v in verdicts:
        if v.scope not in SCOPES:
            raise ValueError(f"verdict '{v.claim}' has scope {v.scope!r}; expected one of {', '.join(SCOPES)}")
        counts[group_of(v)][v.status] += 1
    return counts


def reproductions(counts: dict[str, dict[Status, int]]) -> tuple[int, int]:
    """(reproduced, decided) over the groups that count as reproductions of the paper (self-tests, this artifact's
    predictions and derived claims left out)."""
    groups = [c for g, c in counts.items() if g not in NOT_REPRODUCTIONS]
    return (sum(c["reproduced"] for c in groups), sum(c["reproduced"] + c["not reproduced"] for c in groups))
