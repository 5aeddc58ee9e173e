"""Family-wise error over one report: which verdicts form its family of significance tests, and Holm's step-down
adjustment over them. The one place Holm's correction lives.

Holm (1979): sort the m p-values, p_(1) <= ... <= p_(m); p_holm_(i) = max over j <= i of min(1, (m - j + 1) p_(j)).
The family is every decided empirical verdict that rests on a test (a `p_value`, set by gap_matches_paper and
row_above). `holm_adjust` returns the verdicts with `p_holm` beside each family member's p, and a note on a claim
significant alone but not after the adjustment: the verdict itself keeps the paper's per-test protocol. The
claims stage applies it over a report (repro.claims.decide.decided_results); the verdicts frame
(repro.results.frames) takes its `p_holm` for a folder's stored verdicts. It sits with the results because the
frames read files only.
"""

from __future__ import annotations

import dataclasses
from typing import Iterable

from repro.results.measurements import Verdict

ALPHA = 0.05


def holm(p_values: list[float]) -> list[float]:
    """Holm-adjusted p-values, in the order given."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


def in_family(v: Verdict) -> bool:
    """A decided empirical verdict that rests on a significance test. A claim judged against a number only
    the explainer prints re-tests a comparison the paper's own claim tests, so it is left out."""
    return (
        v.scope == "empirical"
        and v.status != "not run"
        and v.p_value is not None
        and v.source != "explainer-and-summary"
    )


def holm_adjust(verdicts: Iterable[Verdict], alpha: float = ALPHA) -> tuple[list[Verdict], int]:
    """(the verdicts, in order, each family member with its `p_holm`; the family's size m). Pass every verdict
    of one report, after every table's claims are decided. A verdict significant at `alpha` alone but not after
    the adjustment gets a note saying so (once, however often it is adjusted)."""
    verdicts = list(verdicts)
    members = {i: v.p_value for i, v in enumerate(verdicts) if in_family(v) and v.p_value is not None}
    adjusted = dict(zip(members, holm(list(members.values()))))
    out = []
    for i, v in enumerate(verdicts):
        if i not in adjusted:
            out.append(v)
            continue
        p_value, p_holm, note = members[i], adjusted[i], v.note
        if p_value < alpha <= p_holm and "Holm's adjustment" not in note:
            flag = (
                f"significant alone (p={p_value:.3g}) but not after Holm's adjustment over the run's "
                f"{len(members)} tests (p_holm={p_holm:.3g}); the verdict follows the paper's per-test protocol"
            )
            note = f"{note}; {flag}" if note else flag
        out.append(dataclasses.replace(v, p_holm=p_holm, note=note))
    return out, len(members)
