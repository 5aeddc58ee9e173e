"""Family-wise error over one run: Holm's step-down adjustment of the empirical claims' p-values.

Each empirical verdict that rests on a significance test (a `p_value`, set by gap_matches_paper and
row_above) gets `p_holm` beside it, adjusted over every such verdict of the run (Holm 1979; the rule and
the family's membership are repro.results.family's, which the verdicts frame applies to stored verdicts too).
The verdict itself keeps the paper's per-test protocol; a claim significant alone but not after the
adjustment says so in its note.
"""

from __future__ import annotations

from typing import Iterable

from repro.results.family import holm, in_family
from repro.results.measurements import Verdict

__all__ = ["ALPHA", "holm", "holm_adjust", "in_family"]

ALPHA = 0.05


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
