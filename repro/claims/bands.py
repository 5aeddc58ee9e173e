"""Rules for findings the text states in words, not numbers: each decides against a band the manifest chose.

"near-random", "negligible", "near-parity", "well below the training peak", "the majority of the deficit":
the claim's parameters hold the band, the manifest's assumptions say why it was chosen, and the evidence
prints it beside the measured value, so a reader can disagree with the band without re-reading code.

    near_chance      a row's accuracy sits within the margin the learned guard calls "did not learn"
    in_bands         each measured value lies in its band (analytic counts: rho "negligible", "near-parity")
    row_beyond       a per-seed row metric lies beyond a bound (one-sided t-test over seeds)
    recovers_share   a comparison recovers more than a share of another's deficit, per seed
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

from repro.claims.core import Evidence, Outcome, Rule, need, passed, pct
from repro.claims.learned import MIN_LEARNED, learning
from repro.results.measurements import comparison_metric, row_metric

ALPHA = 0.05


@dataclass(frozen=True)
class NearChance:
    row: str  # the row the text says collapses to chance
    baseline: str  # a row it is compared with, which must have learned


def near_chance(p: NearChance, ev: Evidence) -> Outcome:
    """'Near-random': the mean accuracy closes less than the learned guard's share of the distance from chance to
    perfect accuracy (repro.claims.learned.MIN_LEARNED), so one definition serves both. Above it and clearly so
    (the guard's own test says the row learned) refutes it; above it only by noise decides nothing."""
    lr = learning(ev, p.row)
    text = (
        f"{p.row}: {100 * lr.accuracy:.2f}% vs chance {100 * lr.chance:.2f}%; near-random: below "
        f"{100 * lr.needed:.2f}% (chance + {MIN_LEARNED:g} of the distance to 100%)"
    )
    measured = {row_metric(p.row, "accuracy"): lr.accuracy, row_metric(p.row, "chance"): lr.chance}
    learned: dict[str, Any] = dict(must_have_learned=(p.baseline,))
    if lr.accuracy < lr.needed:
        return Outcome("reproduced", text, [], measured, **learned)
    if lr.learned:
        return Outcome(
            "not reproduced",
            text,
            [
                f"band: {p.row} learned (one-sided t against chance: p={lr.p:.3g})"
                if lr.p is not None
                else f"band: {p.row} is above the margin"
            ],
            measured,
            **learned,
        )
    return Outcome(
        "inconclusive", text, ["band: above the margin, not significantly above chance"], measured, **learned
    )


@dataclass(frozen=True)
class InBands:
    metrics: tuple[str, ...]  # metric paths, each a fraction (rho) or plain number
    low: tuple[float, ...]  # each metric's band, in its own units
    high: tuple[float, ...]
    words: tuple[str, ...]  # what each band stands for, e.g. "negligible"

    def __post_init__(self) -> None:
        if not len(self.metrics) == len(self.low) == len(self.high) == len(self.words):
            raise ValueError("metrics, low, high and words must have one entry per metric")
        if any(not lo < hi for lo, hi in zip(self.low, self.high)):
            raise ValueError("every band needs low < high")


def in_bands(p: InBands, ev: Evidence) -> Outcome:
    values = {m: need(ev, m) for m in p.metrics}
    parts, failed = [], []
    for m, lo, hi, words in zip(p.metrics, p.low, p.high, p.words):
        v = values[m]
        inside = lo <= v <= hi
        parts.append(f"{m} = {v:.4g} {'in' if inside else 'outside'} '{words}' [{lo:g}, {hi:g}]")
        if not inside:
            failed.append(f"band: {m} = {v:.4g} is outside '{words}' [{lo:g}, {hi:g}]")
    return Outcome(passed(not failed), "; ".join(parts), failed, values)


@dataclass(frozen=True)
class RowBeyond:
    row: str
    row_metric: str  # a per-seed row metric, e.g. late_drop
    bound: float  # in the metric's own units (fractions for accuracies)
    relation: Literal[">", "<"] = ">"
    words: str = ""  # what the bound stands for, e.g. "well below the training peak"
    may_collapse: tuple[str, ...] = ()


def one_sided(xs: list[float], bound: float, relation: Literal[">", "<"]) -> tuple[float | None, str]:
    """(p, side) of a one-sided one-sample t-test of mean(xs) `relation` bound: side "beyond" when significantly
    so (p < 0.05), "against" when significantly on the other side, else "undecided"; p None with one value."""
    n, mean = len(xs), sum(xs) / len(xs)
    if n < 2:
        return None, "undecided"
    sign = 1 if relation == ">" else -1
    sd = math.sqrt(sum((x - mean) ** 2 for x in xs) / (n - 1))
    if sd == 0:
        side = "beyond" if sign * (mean - bound) > 0 else "against" if sign * (mean - bound) < 0 else "undecided"
        return (0.0 if side == "beyond" else 1.0), side
    t = sign * (mean - bound) / (sd / math.sqrt(n))
    pval = float(_sps().t.sf(t, n - 1))
    return pval, "beyond" if pval < ALPHA else "against" if float(_sps().t.cdf(t, n - 1)) < ALPHA else "undecided"


def row_beyond(p: RowBeyond, ev: Evidence) -> Outcome:
    """The mean over seeds beyond the bound, by a one-sided one-sample t-test (p < 0.05); significantly on the
    wrong side refutes it; otherwise undecided."""
    xs = list(need(ev, row_metric(p.row, p.row_metric)).values())
    n, mean = len(xs), sum(xs) / len(xs)
    text = f"{p.row} {p.row_metric}: {100 * mean:.2f}pp over {n} seeds; claimed {p.relation} {100 * p.bound:g}pp" + (
        f" ({p.words})" if p.words else ""
    )
    measured = {row_metric(p.row, p.row_metric): xs}
    learned: dict[str, Any] = dict(must_have_learned=tuple(r for r in (p.row,) if r not in p.may_collapse))
    if n < 2:
        return Outcome("inconclusive", text + " (one seed: no test)", ["seeds: need at least 2"], measured, **learned)
    pval, side = one_sided(xs, p.bound, p.relation)
    text += f", one-sided p={pval:.3g}"
    if side == "beyond":
        return Outcome("reproduced", text, [], measured, p_value=pval, **learned)
    if side == "against":
        return Outcome(
            "not reproduced",
            text,
            [f"band: significantly not {p.relation} {100 * p.bound:g}pp"],
            measured,
            p_value=pval,
            **learned,
        )
    return Outcome(
        "inconclusive", text, [f"significance: p={pval:.3g} is not below {ALPHA}"], measured, p_value=pval, **learned
    )


@dataclass(frozen=True)
class RecoversShare:
    comparison: str  # the variant that recovers (e.g. per-sample Soft MoE against dense)
    deficit: str  # the comparison whose deficit it recovers (token-mixing Soft MoE against the same dense)
    share: float = 0.5  # "the majority": more than half
    may_collapse: tuple[str, ...] = ()  # the deficit's row may sit at chance: its collapse is the finding


def recovers_share(p: RecoversShare, ev: Evidence) -> Outcome:
    """gap(comparison) > (1 - share) x gap(deficit), paired by seed: per seed the recovered part of the deficit
    beyond `share` of it, tested against zero (paired t). With no deficit (a gap not below zero) it decides nothing."""
    from repro.claims.stats import paired_gap

    rec, dfc = need(ev, comparison_metric(p.comparison, "gap")), need(ev, comparison_metric(p.deficit, "gap"))
    dr, dd = (g.get("differences") or {} for g in (rec, dfc))
    seeds = sorted(set(dr) & set(dd))
    share_text = f"more than {100 * p.share:g}% of the deficit"
    rows = tuple(dict.fromkeys(r for c in (p.comparison, p.deficit) for r in ev.rows_of(c) if r not in p.may_collapse))
    if dfc["mean"] >= 0:
        return Outcome(
            "inconclusive",
            f"{p.deficit} {pct(dfc['mean'])}: no deficit, so no share of one to recover",
            ["deficit: the gap is not negative"],
            {p.deficit: dfc["mean"]},
            must_have_learned=rows,
        )
    recovered = 1 - rec["mean"] / dfc["mean"]
    text = (
        f"{p.comparison} {pct(rec['mean'])} against {p.deficit} {pct(dfc['mean'])}: recovers "
        f"{100 * recovered:.1f}% of the deficit ({share_text} claimed)"
    )
    measured = {"recovered": recovered, p.comparison: rec["mean"], p.deficit: dfc["mean"]}
    if len(seeds) < 2:
        return Outcome(
            "inconclusive",
            text + " (fewer than 2 paired seeds: no test)",
            ["seeds: need at least 2"],
            measured,
            must_have_learned=rows,
        )
    beyond = paired_gap({s: dr[s] for s in seeds}, {s: (1 - p.share) * dd[s] for s in seeds})
    text += f"; per seed beyond the share: {pct(beyond.mean)}, p={beyond.p:.3g}"
    if beyond.mean > 0 and beyond.p < ALPHA:
        return Outcome("reproduced", text, [], measured, must_have_learned=rows, p_value=beyond.p)
    if beyond.mean < 0 and beyond.p < ALPHA:
        return Outcome(
            "not reproduced",
            text,
            [f"share: recovers significantly less than {100 * p.share:g}%"],
            measured,
            must_have_learned=rows,
            p_value=beyond.p,
        )
    return Outcome(
        "inconclusive",
        text,
        [f"significance: p={beyond.p:.3g} is not below {ALPHA}"],
        measured,
        must_have_learned=rows,
        p_value=beyond.p,
    )


FAMILY = (
    Rule(
        "near_chance",
        NearChance,
        near_chance,
        "a row's accuracy stays within the margin above chance that the learned guard calls 'did not learn'",
    ),
    Rule("in_bands", InBands, in_bands, "each measured value lies in the band a vague word was given"),
    Rule("row_beyond", RowBeyond, row_beyond, "a per-seed row metric lies beyond a bound (one-sided t-test)"),
    Rule(
        "recovers_share",
        RecoversShare,
        recovers_share,
        "a comparison recovers more than a share of another's deficit, paired by seed",
    ),
)


def _sps():
    """scipy.stats on first use (manifest validation needs only the parameter types)."""
    from scipy import stats

    return stats
