"""Rules on orderings of gaps: by rho, in a stated order, the largest of several, a trend over datasets.

Every rule here reads mean gaps paired by seed (comparisons.<id>.gap, repro.claims.stats.GapStats) and allows for
seed noise the same way: two gaps out of the expected order by less than their combined 95% half-widths
are "within noise" (the verdict is `inconclusive`), by more they are "inverted" (`not reproduced`). So two
claims that read the same pair can never disagree about it. Evidence prints the measured relation. A single
comparison, or a gap with no mean (NaN), orders nothing: the verdict is `inconclusive` (`cannot_order`).

    monotonic_in_rho   mean gaps increase with the MoE row's rho
    sign_follows_rho   a rho splits the clearly negative gaps (below) from the clearly positive ones (above)
    gap_order          mean gaps in the stated increasing order
    gap_largest        one gap exceeds every other listed
    gap_not_rising     each series (one method over datasets of growing class count) is flat or declining
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal

from repro.claims.core import Evidence, Outcome, Rule, need, passed, pct
from repro.results.measurements import comparison_metric

Step = Literal["in order", "within noise", "inverted"]


def gap_of(ev: Evidence, comparison: str) -> dict[str, Any]:
    return need(ev, comparison_metric(comparison, "gap"))


def rho_of(ev: Evidence, comparison: str) -> float:
    return need(ev, comparison_metric(comparison, "rho"))


def guarded(ev: Evidence, comparisons: tuple[str, ...], may_collapse: tuple[str, ...]) -> tuple[str, ...]:
    """The rows of the comparisons that must have learned: all but those whose collapse is the finding."""
    rows = [r for c in comparisons for r in ev.rows_of(c)]
    return tuple(dict.fromkeys(r for r in rows if r not in may_collapse))


def half_width(gap: dict[str, Any]) -> float:
    lo, hi = gap.get("ci95") or (None, None)
    return 0.0 if lo is None or hi is None else (hi - lo) / 2


def has_ci(gap: dict[str, Any]) -> bool:
    lo, hi = gap.get("ci95") or (None, None)
    return lo is not None and hi is not None and not (math.isnan(lo) or math.isnan(hi))


def step(lower: dict[str, Any], higher: dict[str, Any]) -> Step:
    """Whether a gap expected below another is: below it, above it by less than their combined 95% half-widths,
    or above it by more."""
    if lower["mean"] < higher["mean"]:
        return "in order"
    return (
        "inverted"
        if lower["mean"] - higher["mean"] > math.hypot(half_width(lower), half_width(higher))
        else "within noise"
    )


def undefined(gap: dict[str, Any]) -> bool:
    """A gap whose mean is missing or NaN (no paired seed, or a stored NaN): it orders nothing."""
    mean = gap.get("mean")
    return not isinstance(mean, (int, float)) or math.isnan(mean)


def cannot_order(gaps: dict[str, dict[str, Any]], learners: tuple[str, ...], least: int = 2) -> Outcome | None:
    """Inconclusive when fewer than `least` gaps are named (one comparison orders nothing: the rule would pass on
    it vacuously) or when a gap is undefined (a NaN mean is neither below nor above another); None otherwise."""
    if len(gaps) < least:
        return Outcome(
            "inconclusive",
            f"{len(gaps)} comparison(s) ({', '.join(gaps) or 'none'}): nothing to order",
            [f"order: needs at least {least} comparisons"],
            {c: g.get("mean") for c, g in gaps.items()},
            must_have_learned=learners,
        )
    bad = [c for c, g in gaps.items() if undefined(g)]
    if bad:
        return Outcome(
            "inconclusive",
            f"the gap of {', '.join(bad)} is undefined (no mean): it has no place in the order",
            [f"order: {c} has no mean gap" for c in bad],
            {c: g.get("mean") for c, g in gaps.items()},
            must_have_learned=learners,
        )
    return None


def relation(a: float, b: float) -> str:
    """The measured relation of two means, as evidence prints it."""
    return "<" if a < b else ">" if a > b else "="


def _ordering(
    text: str, inversions: list[str], unclear: list[str], measured: dict[str, Any], learners: tuple[str, ...]
) -> Outcome:
    if inversions:
        return Outcome(
            "not reproduced", text, [f"order: {x}" for x in inversions + unclear], measured, must_have_learned=learners
        )
    if unclear:
        return Outcome(
            "inconclusive",
            text + "; out of order within seed noise",
            [f"order: {x}" for x in unclear],
            measured,
            must_have_learned=learners,
        )
    return Outcome("reproduced", text, [], measured, must_have_learned=learners)


def ordered_pairs(pairs: list[tuple[str, dict[str, Any], str, dict[str, Any]]]) -> tuple[list[str], list[str]]:
    """(inverted, within noise) among (lower id, lower gap, higher id, higher gap) pairs expected in order."""
    inversions: list[str] = []
    unclear: list[str] = []
    for c1, g1, c2, g2 in pairs:
        kind = step(g1, g2)
        if kind != "in order":
            (inversions if kind == "inverted" else unclear).append(
                f"{c1} ({pct(g1['mean'])}) {relation(g1['mean'], g2['mean'])} {c2} ({pct(g2['mean'])})"
            )
    return inversions, unclear


@dataclass(frozen=True)
class MonotonicInRho:
    comparisons: tuple[str, ...]  # comparisons whose row is a routed (MoE) model with a rho
    may_collapse: tuple[str, ...] = ()  # treatment rows whose collapse to chance is the finding (repro.claims.learned)
    # Comparisons whose gap sign the text states but that the claim leaves out, with the reason
    # (repro.claims.references.check_stated_signs).
    excluded: dict[str, str] = field(default_factory=dict)


def monotonic_in_rho(p: MonotonicInRho, ev: Evidence) -> Outcome:
    gaps = {c: gap_of(ev, c) for c in p.comparisons}
    if (out := cannot_order(gaps, guarded(ev, p.comparisons, p.may_collapse))) is not None:
        return out
    points = sorted(((rho_of(ev, c), gaps[c], c) for c in p.comparisons), key=lambda x: (x[0], x[2]))
    inversions, unclear = ordered_pairs([(c1, g1, c2, g2) for (_, g1, c1), (_, g2, c2) in zip(points, points[1:])])
    text = "by rho: " + ", ".join(f"{c} rho={100 * r:.1f}% gap {pct(g['mean'])}" for r, g, c in points)
    return _ordering(
        text,
        inversions,
        unclear,
        {c: {"rho": r, "gap": g["mean"]} for r, g, c in points},
        guarded(ev, p.comparisons, p.may_collapse),
    )


@dataclass(frozen=True)
class SignFollowsRho:
    comparisons: tuple[str, ...]
    may_collapse: tuple[str, ...] = ()  # treatment rows whose collapse to chance is the finding (repro.claims.learned)
    excluded: dict[str, str] = field(default_factory=dict)  # as MonotonicInRho.excluded


def clear_sign(gap: dict[str, Any]) -> str:
    """'+' or '-' when the gap's 95% CI excludes zero, '0' when it spans zero or is undefined (one seed)."""
    if not has_ci(gap):
        return "0"
    lo, hi = gap["ci95"]
    return "+" if lo > 0 else "-" if hi < 0 else "0"


def sign_follows_rho(p: SignFollowsRho, ev: Evidence) -> Outcome:
    """The sign follows rho when some rho splits the gaps: every clearly negative one below it, every clearly
    positive one above it (clearly: the 95% CI excludes zero). A clearly positive gap below a clearly negative
    one refutes it; one that is so only by its mean, within noise, leaves it undecided. With no clear sign on one
    side the pattern has nothing to split: every gap clearly of one sign refutes it (the sign does not change
    with rho), otherwise it is undecided. Fewer than two gaps, or one with no mean, decide nothing."""
    gaps = {c: gap_of(ev, c) for c in p.comparisons}
    if (out := cannot_order(gaps, guarded(ev, p.comparisons, p.may_collapse))) is not None:
        return out
    points = sorted(((rho_of(ev, c), gaps[c], c) for c in p.comparisons), key=lambda x: (x[0], x[2]))
    clear = [clear_sign(g) for _, g, _ in points]
    means = ["+" if g["mean"] > 0 else "-" for _, g, _ in points]
    text = (
        f"signs ordered by rho (clear: 95% CI excludes 0): {''.join(clear)} ("
        + ", ".join(f"{c}: {pct(g['mean'])}" for _, g, c in points)
        + ")"
    )
    measured = {c: g["mean"] for _, g, c in points}
    learners = guarded(ev, p.comparisons, p.may_collapse)

    def below_above(signs: list[str]) -> list[str]:
        return [
            f"{points[i][2]} ({pct(points[i][1]['mean'])}) at rho {100 * points[i][0]:.1f}% is positive below "
            f"{points[j][2]} ({pct(points[j][1]['mean'])}) at rho {100 * points[j][0]:.1f}%, negative"
            for i in range(len(points))
            for j in range(i + 1, len(points))
            if signs[i] == "+" and signs[j] == "-"
        ]

    if broken := below_above(clear):
        return Outcome("not reproduced", text, [f"sign: {b}" for b in broken], measured, must_have_learned=learners)
    if "+" not in clear or "-" not in clear:
        if "0" not in clear:
            word = "positive" if clear[0] == "+" else "negative"
            return Outcome(
                "not reproduced",
                text + f"; every gap is clearly {word}: the sign does not change with rho",
                [f"sign: no clearly {'negative' if word == 'positive' else 'positive'} gap"],
                measured,
                must_have_learned=learners,
            )
        missing = " and ".join(w for s, w in (("+", "positive"), ("-", "negative")) if s not in clear)
        return Outcome(
            "inconclusive",
            text + f"; no clearly {missing} gap, so nothing for a rho to split",
            [f"sign: no clearly {missing} gap"],
            measured,
            must_have_learned=learners,
        )
    if noisy := below_above(means):
        return Outcome(
            "inconclusive",
            text + "; out of order only within seed noise",
            [f"sign: {b} (within noise)" for b in noisy],
            measured,
            must_have_learned=learners,
        )
    return Outcome("reproduced", text, [], measured, must_have_learned=learners)


@dataclass(frozen=True)
class GapOrder:
    comparisons: tuple[str, ...]  # expected in increasing order of mean gap
    may_collapse: tuple[str, ...] = ()  # treatment rows whose collapse to chance is the finding (repro.claims.learned)


def gap_order(p: GapOrder, ev: Evidence) -> Outcome:
    gaps = [(c, gap_of(ev, c)) for c in p.comparisons]
    if (out := cannot_order(dict(gaps), guarded(ev, p.comparisons, p.may_collapse))) is not None:
        return out
    text = f"{gaps[0][0]} {pct(gaps[0][1]['mean'])}" + "".join(
        f" {relation(g1['mean'], g2['mean'])} {c2} {pct(g2['mean'])}" for (_, g1), (c2, g2) in zip(gaps, gaps[1:])
    )
    text += " (expected " + " < ".join(c for c, _ in gaps) + ")"
    inversions, unclear = ordered_pairs([(c1, g1, c2, g2) for (c1, g1), (c2, g2) in zip(gaps, gaps[1:])])
    return _ordering(
        text, inversions, unclear, {c: g["mean"] for c, g in gaps}, guarded(ev, p.comparisons, p.may_collapse)
    )


@dataclass(frozen=True)
class GapLargest:
    comparison: str
    others: tuple[str, ...]  # comparisons whose gaps it must exceed
    may_collapse: tuple[str, ...] = ()


def gap_largest(p: GapLargest, ev: Evidence) -> Outcome:
    own = gap_of(ev, p.comparison)
    others = [(c, gap_of(ev, c)) for c in p.others]
    learners = guarded(ev, (p.comparison, *p.others), p.may_collapse)
    if (out := cannot_order({p.comparison: own, **dict(others)}, learners)) is not None:
        return out
    text = f"{p.comparison} {pct(own['mean'])}: " + ", ".join(
        f"{relation(own['mean'], g['mean'])} {c} {pct(g['mean'])}" for c, g in others
    )
    inversions, unclear = ordered_pairs([(c, g, p.comparison, own) for c, g in others])
    return _ordering(
        text,
        inversions,
        unclear,
        {p.comparison: own["mean"], **{c: g["mean"] for c, g in others}},
        guarded(ev, (p.comparison, *p.others), p.may_collapse),
    )


@dataclass(frozen=True)
class GapNotRising:
    # each series: one method's comparisons in increasing order of class count
    series: dict[str, tuple[str, ...]]
    flat_pp: float = 1.0  # a rise of at most this many pp between two datasets counts as flat (the manifest says why)
    may_collapse: tuple[str, ...] = ()


def gap_not_rising(p: GapNotRising, ev: Evidence) -> Outcome:
    """Every series flat or declining: a step up by more than `flat_pp` and beyond seed noise refutes it; one up by
    more than `flat_pp` within noise leaves it undecided; a step with no 95% CI (one seed) decides nothing."""
    comps = tuple(c for cs in p.series.values() for c in cs)
    gaps = {c: gap_of(ev, c) for c in comps}
    learners = guarded(ev, comps, p.may_collapse)
    if all(len(cs) < 2 for cs in p.series.values()):  # a series of one dataset has no step to rise by
        return Outcome(
            "inconclusive",
            "no series spans two datasets: nothing to order",
            ["trend: needs a series of at least 2 comparisons"],
            {},
            must_have_learned=learners,
        )
    if (out := cannot_order(gaps, learners)) is not None:
        return out
    parts: list[str] = []
    rising: list[str] = []
    unclear: list[str] = []
    for name, cs in p.series.items():
        parts.append(
            f"{name}: {pct(gaps[cs[0]]['mean'])}"
            + "".join(
                f" {relation(gaps[a]['mean'], gaps[b]['mean'])} {pct(gaps[b]['mean'])}" for a, b in zip(cs, cs[1:])
            )
        )
        for a, b in zip(cs, cs[1:]):
            up = 100 * (gaps[b]["mean"] - gaps[a]["mean"])
            if not (has_ci(gaps[a]) and has_ci(gaps[b])):
                unclear.append(f"{a} -> {b}: no 95% CI (one seed)")
            elif up > p.flat_pp:
                beyond = up / 100 > math.hypot(half_width(gaps[a]), half_width(gaps[b]))
                (rising if beyond else unclear).append(
                    f"{a} -> {b} rises {up:+.2f}pp, {'beyond' if beyond else 'within'} seed noise"
                )
    text = "; ".join(parts) + f" (flat: a rise of at most {p.flat_pp:g}pp)"
    measured = {c: g["mean"] for c, g in gaps.items()}
    if rising:
        return Outcome(
            "not reproduced", text, [f"trend: {x}" for x in rising + unclear], measured, must_have_learned=learners
        )
    if unclear:
        return Outcome("inconclusive", text, [f"trend: {x}" for x in unclear], measured, must_have_learned=learners)
    return Outcome(passed(True), text, [], measured, must_have_learned=learners)


FAMILY = (
    Rule("monotonic_in_rho", MonotonicInRho, monotonic_in_rho, "mean gaps increase with the MoE row's rho"),
    Rule(
        "sign_follows_rho",
        SignFollowsRho,
        sign_follows_rho,
        "a rho splits the clearly negative gaps (below) from the clearly positive ones (above)",
    ),
    Rule("gap_order", GapOrder, gap_order, "mean gaps are in the stated increasing order"),
    Rule("gap_largest", GapLargest, gap_largest, "one mean gap exceeds every other listed"),
    Rule(
        "gap_not_rising",
        GapNotRising,
        gap_not_rising,
        "each series of gaps over datasets of growing class count is flat or declining",
    ),
)
