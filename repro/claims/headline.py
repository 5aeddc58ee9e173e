"""The headline of a run: how many claims of each group came out each way.

Groups are scopes, with two further splits. Analytic claims come in three kinds (Claim.kind): numbers the
paper prints that a count matches ("analytic"), bounds and properties that follow from the paper's
architecture ("property"), and self-tests of this artifact's own code ("self-test": shown, never counted as a
reproduction of the paper). A claim whose reported number appears only in the AI-written explainer that
accompanies the paper (Verdict.source) is decided and shown like any other, but counted in a group of its own.
"""

from __future__ import annotations

from typing import Iterable, get_args

from repro.results.measurements import Status, Verdict

SCOPES = ("analytic", "empirical", "gpu", "extension")
EXPLAINER_GROUP = "explainer"  # counted apart: from the explainer, not the paper's text
PROPERTY_GROUP, SELF_TEST_GROUP = "property", "self-test"  # analytic claims that match no printed number
GROUPS = ("analytic", PROPERTY_GROUP, SELF_TEST_GROUP, "empirical", "gpu", "extension", EXPLAINER_GROUP)
NOT_REPRODUCTIONS = frozenset({SELF_TEST_GROUP})  # shown, never counted as reproductions of the paper
STATUSES: tuple[Status, ...] = get_args(Status)  # reproduced, not reproduced, inconclusive, not run


def group_of(v: Verdict) -> str:
    """The headline group a verdict counts in: the explainer's, an analytic kind's, or its scope."""
    if v.source == "explainer-and-summary":
        return EXPLAINER_GROUP
    if v.scope == "analytic" and v.kind in (PROPERTY_GROUP, SELF_TEST_GROUP):
        return v.kind
    return v.scope


def count_verdicts(verdicts: Iterable[Verdict]) -> dict[str, dict[Status, int]]:
    """{group: {status: count}} with every group and status present (zeros included), in a fixed order."""
    counts = {group: dict.fromkeys(STATUSES, 0) for group in GROUPS}
    for v in verdicts:
        if v.scope not in SCOPES:
            raise ValueError(f"verdict '{v.claim}' has scope {v.scope!r}; expected one of {', '.join(SCOPES)}")
        counts[group_of(v)][v.status] += 1
    return counts


def reproductions(counts: dict[str, dict[Status, int]]) -> tuple[int, int]:
    """(reproduced, decided) over the groups that count as reproductions of the paper (self-tests left out)."""
    groups = [c for g, c in counts.items() if g not in NOT_REPRODUCTIONS]
    return (sum(c["reproduced"] for c in groups), sum(c["reproduced"] + c["not reproduced"] for c in groups))
