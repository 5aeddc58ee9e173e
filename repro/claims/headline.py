"""The headline of a run: how many claims of each scope came out each way."""

from __future__ import annotations

from typing import Iterable, get_args

from repro.results import Status, Verdict

SCOPES = ("analytic", "empirical", "gpu", "extension")
STATUSES: tuple[Status, ...] = get_args(Status)  # reproduced, not reproduced, inconclusive, not run


def count_verdicts(verdicts: Iterable[Verdict]) -> dict[str, dict[Status, int]]:
    """{scope: {status: count}} with every scope and status present (zeros included), in a fixed order."""
    counts = {scope: dict.fromkeys(STATUSES, 0) for scope in SCOPES}
    for v in verdicts:
        if v.scope not in counts:
            raise ValueError(f"verdict '{v.claim}' has scope {v.scope!r}; expected one of {', '.join(SCOPES)}")
        counts[v.scope][v.status] += 1
    return counts
