"""Rules for accuracy findings: MoE - dense gaps paired by seed (repro.claims.stats), and their orderings.

A gap finding is judged on three parts, each only where the paper states it:
sign (the direction), significance (p < alpha, where the paper reports a
significant gap) and magnitude (the reported size, within a tolerance derived
from the seed variance of both studies). When a part fails with fewer seeds than
80% power at the paper's effect size needs, the verdict is `inconclusive`, not
`not reproduced`: too few seeds cannot refute a finding.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Literal


from repro.claims.core import Evidence, NotRun, Outcome, Rule, need, paper, passed, pct
from repro.spec.paper import PaperValue
from repro.results.measurements import comparison_metric, row_metric

ALPHA = 0.05

Part = Literal["seeds", "sign", "significance", "magnitude"]


@dataclass(frozen=True)
class Failure:
    part: Part
    detail: str

    def __str__(self) -> str:
        return f"{self.part}: {self.detail}"


def _p(p: float | None) -> str:
    return "undefined (the per-seed differences do not vary)" if p is None else f"{p:.3g}"


def seeds_needed(pv: PaperValue) -> int | None:
    """Seeds for 80% power at the effect size the paper's numbers imply (repro.claims.stats.seeds_needed)."""
    from repro.claims.stats import seeds_needed as needed  # scipy: imported when a claim is decided

    return needed(pv)


def judge_gap(gap: dict[str, Any], pv: PaperValue, alpha: float = ALPHA) -> Outcome:
    """A measured gap (repro.claims.stats.GapStats.to_dict()) against a reported one."""
    n, mean, sd, p = gap["n"], gap["mean"], gap["sd"], gap["p"]  # sd, p are None when undefined
    needed = seeds_needed(pv)
    text = f"gap {pct(mean)}" + (f" ± {100 * sd:.2f}pp" if n > 1 and sd is not None else "")
    text += f", p={_p(p)}" if n > 1 else ""
    text += f", {gap['positive']}/{n} seeds positive; reported {pv.printed or pv.implied_sign}"
    if n < 2:
        return Outcome("inconclusive", text + " (one seed: no test)", [str(Failure("seeds", "need at least 2 paired seeds"))])
    if mean == 0 and not sd:
        return Outcome("inconclusive", text + " (identical accuracy on every seed: no information)",
                       [str(Failure("sign", "no difference on any seed"))])
    failures: list[Failure] = []
    want = pv.implied_sign  # "+", "-", "<=0" (the text says only that it is not positive) or None
    if want == "<=0":
        sign_ok = mean <= 0
    else:
        sign_ok = want is None or (mean != 0 and (mean > 0) == (want == "+"))
    if not sign_ok:
        measured = "0 (no difference)" if mean == 0 else ("+" if mean > 0 else "-")
        failures.append(Failure("sign", f"measured {measured}, reported {'not positive' if want == '<=0' else want}"))
    significant = p is not None and p < alpha
    # A direction the paper states needs a significant gap here too, unless the paper's own test
    # was not significant (then only the direction is claimed), or it states only that no gain appears.
    paper_not_significant = (pv.p is not None and pv.p_relation == "=" and pv.p >= alpha) or want == "<=0"
    tested = None if paper_not_significant and sign_ok else p  # the p this verdict rests on (Holm: repro.claims.family)
    if sign_ok and not paper_not_significant and not significant:
        failures.append(Failure("significance", f"p={_p(p)} is not below {alpha}"))
    if sign_ok and pv.positive_seeds is not None and pv.n and pv.positive_seeds in (0, pv.n):
        agree = gap["positive"] if pv.positive_seeds else n - gap["positive"]
        if agree < n:
            failures.append(Failure("seeds", f"{agree}/{n} seeds share the sign; the paper reports all {pv.n}"))
    tol = None  # the magnitude's, where it is judged
    if pv.value is not None and sign_ok:
        tol = _magnitude_tolerance(gap, pv)
        if abs(100 * mean - pv.value) > tol:
            failures.append(Failure("magnitude", f"{100 * mean:+.2f} is outside {pv.value:+.2f} ± {tol:.2f}pp"))
        text += f"; magnitude tolerance ±{tol:.2f}pp"
    if not failures:
        return Outcome("reproduced", text, p_value=tested, tolerance=tol)
    failed = [str(f) for f in failures]
    powered = needed is not None and n >= needed
    power_note = (f" (80% power at the paper's effect size needs {needed} seeds, {n} run)" if needed
                  else " (the text gives no effect size, so no seed count decides power)")
    first = failures[0].part
    if first == "sign":
        if significant or powered:
            return Outcome("not reproduced", text + power_note, failed, p_value=tested, tolerance=tol)
        return Outcome("inconclusive", text + power_note + "; the opposite sign is not significant", failed,
                       p_value=tested, tolerance=tol)
    if first in ("significance", "seeds") and not powered:
        return Outcome("inconclusive", text + power_note, failed, p_value=tested, tolerance=tol)
    return Outcome("not reproduced", text + power_note, failed, p_value=tested, tolerance=tol)


def _magnitude_tolerance(gap: dict[str, Any], pv: PaperValue) -> float:
    """95% half-width, in pp, of the difference between our mean gap and the paper's."""
    n, sd = gap["n"], 100 * (gap["sd"] or 0.0)
    n_p = pv.n or n
    sd_p = pv.sd if pv.sd is not None else sd
    se = math.sqrt(sd**2 / n + sd_p**2 / n_p)
    return float(_sps().t.ppf(0.975, max(1, min(n, n_p) - 1))) * se + pv.tolerance


def _gap(ev: Evidence, comparison: str) -> dict[str, Any]:
    return need(ev, comparison_metric(comparison, "gap"))


def _rho_of(ev: Evidence, comparison: str) -> float:
    return need(ev, comparison_metric(comparison, "rho"))


def _guarded(ev: Evidence, comparisons: tuple[str, ...], may_collapse: tuple[str, ...]) -> tuple[str, ...]:
    """The rows of the comparisons that must have learned: all but those whose collapse is the finding."""
    rows = [r for c in comparisons for r in ev.rows_of(c)]
    return tuple(dict.fromkeys(r for r in rows if r not in may_collapse))


def _half_width(gap: dict[str, Any]) -> float:
    lo, hi = gap.get("ci95") or (None, None)
    return 0.0 if lo is None or hi is None else (hi - lo) / 2


def _out_of_order(first: dict[str, Any], second: dict[str, Any]) -> bool:
    """True when an inversion of two mean gaps is larger than their combined 95% half-widths."""
    return first["mean"] - second["mean"] > math.hypot(_half_width(first), _half_width(second))


def _ordering(text: str, inversions: list[str], unclear: list[str], measured: dict[str, Any],
              learners: tuple[str, ...]) -> Outcome:
    if inversions:
        return Outcome("not reproduced", text, [f"order: {x}" for x in inversions], measured, must_have_learned=learners)
    if unclear:
        return Outcome("inconclusive", text + "; out of order within seed noise", [f"order: {x}" for x in unclear],
                       measured, must_have_learned=learners)
    return Outcome("reproduced", text, [], measured, must_have_learned=learners)


@dataclass(frozen=True)
class GapMatchesPaper:
    comparison: str
    paper: str
    alpha: float = ALPHA
    may_collapse: tuple[str, ...] = ()  # treatment rows whose collapse to chance is the finding (repro.claims.learned)


def gap_matches_paper(p: GapMatchesPaper, ev: Evidence) -> Outcome:
    pv = paper(ev, p.paper)
    gap = _gap(ev, p.comparison)
    judged = judge_gap(gap, pv, p.alpha)
    return replace(judged, measured={comparison_metric(p.comparison, "gap"): gap},
                   reported={p.paper: pv.printed or pv.implied_sign},
                   must_have_learned=_guarded(ev, (p.comparison,), p.may_collapse))


@dataclass(frozen=True)
class MonotonicInRho:
    comparisons: tuple[str, ...]  # comparisons whose row is a routed (MoE) model with a rho
    may_collapse: tuple[str, ...] = ()  # treatment rows whose collapse to chance is the finding (repro.claims.learned)
    # Comparisons whose gap sign the text states but that the claim leaves out, with the reason
    # (repro.claims.references.check_stated_signs).
    excluded: dict[str, str] = field(default_factory=dict)


def monotonic_in_rho(p: MonotonicInRho, ev: Evidence) -> Outcome:
    points = sorted((_rho_of(ev, c), _gap(ev, c), c) for c in p.comparisons)
    inversions, unclear = [], []
    for (r1, g1, c1), (r2, g2, c2) in zip(points, points[1:]):
        if g2["mean"] > g1["mean"]:
            continue
        (inversions if _out_of_order(g1, g2) else unclear).append(f"{c1} ({pct(g1['mean'])}) >= {c2} ({pct(g2['mean'])})")
    text = "by rho: " + ", ".join(f"{c} rho={100 * r:.1f}% gap {pct(g['mean'])}" for r, g, c in points)
    return _ordering(text, inversions, unclear, {c: {"rho": r, "gap": g["mean"]} for r, g, c in points},
                     _guarded(ev, p.comparisons, p.may_collapse))


@dataclass(frozen=True)
class SignFollowsRho:
    comparisons: tuple[str, ...]
    may_collapse: tuple[str, ...] = ()  # treatment rows whose collapse to chance is the finding (repro.claims.learned)
    excluded: dict[str, str] = field(default_factory=dict)  # as MonotonicInRho.excluded


def sign_follows_rho(p: SignFollowsRho, ev: Evidence) -> Outcome:
    points = sorted((_rho_of(ev, c), _gap(ev, c)["mean"], c) for c in p.comparisons)
    signs = "".join("+" if g > 0 else "-" for _, g, _ in points)
    text = f"signs ordered by rho: {signs} (" + ", ".join(f"{c}: {pct(g)}" for _, g, c in points) + ")"
    ok = "+-" not in signs
    failed = [] if ok else [f"sign: a positive gap sits below a negative one in rho ({signs})"]
    return Outcome(passed(ok), text, failed, {c: g for _, g, c in points},
                   must_have_learned=_guarded(ev, p.comparisons, p.may_collapse))


def _welch_p(a: list[float], b: list[float]) -> float:
    """Two-sided Welch p (repro.claims.stats.welch); NaN with fewer than two values a side, or none varying and
    the means equal."""
    from repro.claims.stats import welch  # scipy: imported when a claim is decided

    return welch(a, b).p


@dataclass(frozen=True)
class RowAbove:
    row: str
    baseline: str
    row_metric: str = "accuracy"  # a per-seed row metric: accuracy, late_drop
    paper: str | None = None  # the reported finding, when the paper states it as a value or a sign
    may_collapse: tuple[str, ...] = ()  # treatment rows whose collapse to chance is the finding (repro.claims.learned)


def row_above(p: RowAbove, ev: Evidence) -> Outcome:
    a = list(need(ev, row_metric(p.row, p.row_metric)).values())
    b = list(need(ev, row_metric(p.baseline, p.row_metric)).values())
    diff = sum(a) / len(a) - sum(b) / len(b)
    pval = _welch_p(a, b)
    text = (f"{p.row_metric}: {p.row} {100 * sum(a) / len(a):.2f}% vs {p.baseline} {100 * sum(b) / len(b):.2f}%: "
            f"{pct(diff)} (Welch p={pval:.3g})")
    measured = {row_metric(p.row, p.row_metric): a, row_metric(p.baseline, p.row_metric): b}
    reported = {}
    if p.paper is not None:
        pv = paper(ev, p.paper)
        reported = {p.paper: pv.printed or pv.implied_sign}
        text += f"; reported: {pv.note or pv.printed}"
    significant = pval < ALPHA  # False for NaN (one seed, or no variance)
    tested = dict(must_have_learned=tuple(r for r in (p.row, p.baseline) if r not in p.may_collapse),
                  p_value=None if math.isnan(pval) else pval)
    if diff > 0 and significant:
        return Outcome("reproduced", text, [], measured, reported, **tested)
    if diff > 0:
        return Outcome("inconclusive", text, ["significance: above, not significantly"], measured, reported, **tested)
    if significant:
        return Outcome("not reproduced", text, ["sign: significantly below"], measured, reported, **tested)
    return Outcome("inconclusive", text, ["sign: not above, not significantly"], measured, reported, **tested)


@dataclass(frozen=True)
class GapOrder:
    comparisons: tuple[str, ...]  # expected in increasing order of mean gap
    may_collapse: tuple[str, ...] = ()  # treatment rows whose collapse to chance is the finding (repro.claims.learned)


def gap_order(p: GapOrder, ev: Evidence) -> Outcome:
    gaps = [(c, _gap(ev, c)) for c in p.comparisons]
    text = " < ".join(f"{c} {pct(g['mean'])}" for c, g in gaps)
    inversions, unclear = [], []
    for (c1, g1), (c2, g2) in zip(gaps, gaps[1:]):
        if g1["mean"] < g2["mean"]:
            continue
        (inversions if _out_of_order(g1, g2) else unclear).append(f"{c1} >= {c2}")
    return _ordering(text, inversions, unclear, {c: g["mean"] for c, g in gaps}, _guarded(ev, p.comparisons, p.may_collapse))


@dataclass(frozen=True)
class AccuracyMatchesPaper:
    row: str
    paper: str


def accuracy_matches_paper(p: AccuracyMatchesPaper, ev: Evidence) -> Outcome:
    """A row's mean accuracy against the paper's mean: both are means over seeds, so the tolerance is the
    95% half-width of their difference (Welch), the paper's spread taken as ours where the text gives none;
    the printed precision adds only its rounding."""
    pv = paper(ev, p.paper)
    xs = [100 * v for v in need(ev, row_metric(p.row, "accuracy")).values()]
    n, mean = len(xs), sum(xs) / len(xs)
    if n < 2:
        return Outcome("inconclusive", f"{mean:.2f}% from one seed vs reported {pv.printed}", ["seeds: need at least 2"])
    sd = math.sqrt(sum((x - mean) ** 2 for x in xs) / (n - 1))
    n_p, sd_p = pv.n or ev.paper_seeds or n, pv.sd if pv.sd is not None else sd
    ours, theirs = sd**2 / n, sd_p**2 / n_p
    se = math.sqrt(ours + theirs)
    df = (ours + theirs) ** 2 / (ours**2 / (n - 1) + theirs**2 / max(1, n_p - 1)) if se > 0 else 1.0
    tol = float(_sps().t.ppf(0.975, df)) * se + pv.tolerance
    spread = "" if pv.sd is not None else ", the paper's s.d. taken as ours"
    text = (f"{mean:.2f} ± {sd:.2f}% over {n} seeds vs reported {pv.printed} over {n_p} seeds "
            f"(tolerance ±{tol:.2f}pp: 95% of the difference of two means{spread})")
    failed = [] if abs(mean - pv.value) <= tol else [f"magnitude: {mean:.2f} outside {pv.value:g} ± {tol:.2f}"]
    return Outcome(passed(not failed), text, failed, {p.row: mean}, {p.paper: pv.printed}, tolerance=tol)


@dataclass(frozen=True)
class GapDifference:
    comparison: str
    minus: str
    paper: str
    alpha: float = ALPHA
    may_collapse: tuple[str, ...] = ()  # treatment rows whose collapse to chance is the finding (repro.claims.learned)


def gap_difference(p: GapDifference, ev: Evidence) -> Outcome:
    """gap(comparison) - gap(minus), paired by seed and judged as a gap (sign, significance, magnitude, power).

    Per seed the difference of the two gaps; where they share a baseline (Table 5's k = 2 and k = 1 against
    one dense model) it cancels, so the test is the paired one of the two treatments, not two independent gaps.
    """
    from repro.claims.stats import paired_gap

    pv = paper(ev, p.paper)
    a, b = _gap(ev, p.comparison), _gap(ev, p.minus)
    da, db = a.get("differences") or {}, b.get("differences") or {}
    if not set(da) & set(db):
        raise NotRun(f"no seed has both gaps {p.comparison} and {p.minus}")
    diff = paired_gap(da, db).to_dict()
    judged = judge_gap(diff, pv, p.alpha)
    text = f"{p.comparison} - {p.minus} per seed: {judged.evidence}"
    return replace(judged, evidence=text, measured={"difference": diff},
                   reported={p.paper: pv.printed}, must_have_learned=_guarded(ev, (p.comparison, p.minus), p.may_collapse))


FAMILY = (
    Rule("gap_matches_paper", GapMatchesPaper, gap_matches_paper,
         "a paired MoE - dense gap has the reported sign, significance and size"),
    Rule("monotonic_in_rho", MonotonicInRho, monotonic_in_rho, "mean gaps increase with the MoE row's rho"),
    Rule("sign_follows_rho", SignFollowsRho, sign_follows_rho,
         "every negative gap sits at lower rho than every positive one"),
    Rule("row_above", RowAbove, row_above, "one row's per-seed metric exceeds another's on average (Welch t-test)"),
    Rule("gap_order", GapOrder, gap_order, "mean gaps are in the stated increasing order"),
    Rule("accuracy_matches_paper", AccuracyMatchesPaper, accuracy_matches_paper,
         "a row's mean accuracy equals the reported one within its 95% CI and the printed precision"),
    Rule("gap_difference", GapDifference, gap_difference, "the difference of two gaps matches the reported reversal"),
)


def _sps():
    """scipy.stats, imported on first use: loading it costs about a second, which `repro --help` and
    manifest validation (which only need the rules' parameter types) should not pay."""
    from scipy import stats

    return stats
