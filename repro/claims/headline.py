"""The headline of a run: how many claims of each scope came out each way, the explainer's claims apart.

A claim whose reported number appears only in the AI-written explainer that accompanies the paper
(Verdict.source) is decided and shown like any other, but counted in a group of its own: the
paper's text does not state it.
"""

from __future__ import annotations

from typing import Iterable, get_args

from repro.results.measurements import Status, Verdict

SCOPES = ("analytic", "empirical", "gpu", "extension")
EXPLAINER_GROUP = "explainer"  # counted apart: from the explainer, not the paper's text
GROUPS = (*SCOPES, EXPLAINER_GROUP)
STATUSES: tuple[Status, ...] = get_args(Status)  # reproduced, not reproduced, inconclusive, not run


def group_of(v: Verdict) -> str:
    """The headline group a verdict counts in: its scope, or the explainer's group."""
    return EXPLAINER_GROUP if v.source == "explainer-and-summary" else v.scope


def count_verdicts(verdicts: Iterable[Verdict]) -> dict[str, dict[Status, int]]:
    """{group: {status: count}} with every group and status present (zeros included), in a fixed order."""
    counts = {group: dict.fromkeys(STATUSES, 0) for group in GROUPS}
    for v in verdicts:
        if v.scope not in SCOPES:
            raise ValueError(f"verdict '{v.claim}' has scope {v.scope!r}; expected one of {', '.join(SCOPES)}")
        counts[group_of(v)][v.status] += 1
    return counts
