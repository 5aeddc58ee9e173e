"""Family-wise error over one run: Holm's step-down adjustment of the empirical claims' p-values.

Each empirical verdict that rests on a significance test (a `p_value`, set by gap_matches_paper and
row_above) gets `p_holm` beside it, adjusted over every such verdict of the run (Holm 1979):
sort the m p-values, p_(1) <= ... <= p_(m); p_holm_(i) = max over j <= i of min(1, (m - j + 1) p_(j)).
The verdict itself keeps the paper's per-test protocol; a claim significant alone but not after the
adjustment says so in its note.
"""

from __future__ import annotations

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
    return (v.scope == "empirical" and v.status != "not run" and v.p_value is not None
            and v.source != "explainer-and-summary")


def holm_adjust(verdicts: Iterable[Verdict], alpha: float = ALPHA) -> int:
    """Set `p_holm` on every verdict of the family (in place); return the family's size m.

    Pass all verdicts of one report, after every manifest's claims are decided (repro.claims.decide).
    A verdict significant at `alpha` alone but not after the adjustment gets a note saying so.
    """
    family = [v for v in verdicts if in_family(v)]
    for v, adjusted in zip(family, holm([v.p_value for v in family])):
        v.p_holm = adjusted
        if v.p_value < alpha <= adjusted and "Holm's adjustment" not in v.note:  # idempotent
            flag = (f"significant alone (p={v.p_value:.3g}) but not after Holm's adjustment over the run's "
                    f"{len(family)} tests (p_holm={adjusted:.3g}); the verdict follows the paper's per-test protocol")
            v.note = f"{v.note}; {flag}" if v.note else flag
    return len(family)
