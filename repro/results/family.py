"""Which verdicts of a report form its family of significance tests, and Holm's step-down adjustment over them.

Holm (1979): sort the m p-values, p_(1) <= ... <= p_(m); p_holm_(i) = max over j <= i of min(1, (m - j + 1) p_(j)).
The family is every decided empirical verdict that rests on a test (repro.claims.family.holm_adjust sets
`p_holm` on the report's verdicts, and notes a claim significant alone but not after it). It sits with
the results because the verdicts frame (repro.results.frames) adjusts a folder's stored verdicts by the same
rule, reading files only.
"""

from __future__ import annotations

from repro.results.measurements import Verdict


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
