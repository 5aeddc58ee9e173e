"""Rules for accuracy findings: MoE - dense gaps paired by seed (repro.claims.stats), and their orderings.

A gap finding is judged on the parts the paper states: sign (the direction), significance (p < alpha, where
the paper reports a significant gap), magnitude (the reported size, within a tolerance derived from the seed
variance of both studies), effect size (the reported d inside the 95% CI of the measured d_z), and a band the
manifest chose for a vague word ("severe", "approaches"), written beside the claim as an assumption. When a part
fails with fewer seeds than 80% power at the paper's effect size needs, the verdict is `inconclusive`, not
`not reproduced`: too few seeds cannot refute a finding; a mean outside a band whose 95% CI still reaches it is
`inconclusive` too. Orderings of gaps are in repro.claims.orders.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any, Literal


from repro.claims.bands import one_sided
from repro.claims.core import Evidence, NotRun, Outcome, Rule, need, paper, passed, pct, reported_gap, sign_word
from repro.claims.orders import guarded
from repro.spec.paper import PaperValue
from repro.results.measurements import Status, comparison_metric, row_metric

ALPHA = 0.05

Part = Literal["seeds", "sign", "significance", "magnitude", "effect size", "band"]


@dataclass(frozen=True)
class Failure:
    part: Part
    detail: str
    decisive: bool = True  # False: outside only by its mean, within seed noise (the verdict is inconclusive)

    def __str__(self) -> str:
        return f"{self.part}: {self.detail}"


def _p(p: float | None) -> str:
    return "undefined (the per-seed differences do not vary)" if p is None else f"{p:.3g}"


@lru_cache(maxsize=256)
def seeds_needed(pv: PaperValue) -> int | None:
    """Seeds for 80% power at the effect size the paper's numbers imply (repro.claims.stats.seeds_needed); one
    search per reported value, however often a claim is decided (a bootstrap decides it a thousand times)."""
    from repro.claims.stats import seeds_needed as needed  # scipy: imported when a claim is decided

    return needed(pv)


@dataclass(frozen=True)
class Band:
    """Where a vague word puts a gap, in pp (the manifest chose it, and says so in an assumption)."""

    low: float
    high: float
    words: str  # what the band stands for, e.g. "severe: at least 5pp below dense"

    def __post_init__(self) -> None:
        if not self.low < self.high:
            raise ValueError(f"a band needs low < high, got [{self.low}, {self.high}]")

    def text(self) -> str:
        return f"[{self.low:+g}, {self.high:+g}]pp ({self.words})"


def judge_gap(gap: dict[str, Any], pv: PaperValue, alpha: float = ALPHA, band: Band | None = None) -> Outcome:
    """A measured gap (repro.claims.stats.GapStats.to_dict()) against a reported one, and a band where one is chosen."""
    n, mean, sd, p = gap["n"], gap["mean"], gap["sd"], gap["p"]  # sd, p are None when undefined
    needed = seeds_needed(pv)
    text = f"gap {100 * mean:+.2f}" + (f" ± {100 * sd:.2f}" if n > 1 and sd is not None else "") + "pp"
    text += f", p={_p(p)}" if n > 1 else ""
    text += f", {gap['positive']}/{n} seeds positive; reported {reported_gap(pv)}"
    if n < 2:
        return Outcome(
            "inconclusive", text + " (one seed: no test)", [str(Failure("seeds", "need at least 2 paired seeds"))]
        )
    if mean == 0 and not sd:
        return Outcome(
            "inconclusive",
            text + " (identical accuracy on every seed: no information)",
            [str(Failure("sign", "no difference on any seed"))],
        )
    failures: list[Failure] = []
    want = pv.implied_sign  # "+", "-", "<=0" (the text says only that it is not positive) or None
    if want == "<=0":
        sign_ok = mean <= 0
    else:
        sign_ok = want is None or (mean != 0 and (mean > 0) == (want == "+"))
    if not sign_ok:
        measured = "zero (no difference)" if mean == 0 else sign_word("+" if mean > 0 else "-")
        failures.append(Failure("sign", f"measured {measured}, reported {sign_word(want)}"))
    significant = p is not None and p < alpha
    # A direction the paper states needs a significant gap here too, unless the paper's own test
    # was not significant (then only the direction is claimed), or it states only that no gain appears.
    paper_not_significant = (pv.p is not None and pv.p_relation == "=" and pv.p >= alpha) or want == "<=0"
    tested = None if paper_not_significant and sign_ok else p  # the p this verdict rests on (Holm: results/family)
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
            failures.append(Failure("magnitude", f"{100 * mean:+.2f}pp is outside {pv.value:+.2f} ± {tol:.2f}pp"))
        text += f"; magnitude tolerance ±{tol:.2f}pp"
    if pv.d is not None and sign_ok and n > 1 and sd:
        text += _effect_size(gap, pv.d, failures)
    if band is not None and sign_ok:
        text += f"; band {band.text()}"
        _check_band(gap, band, failures)
    if not failures:
        return Outcome("reproduced", text, p_value=tested, tolerance=tol)
    failed = [str(f) for f in failures]
    powered = needed is not None and n >= needed
    power_note = (
        f" (80% power at the paper's effect size needs {needed} seeds, {n} run)"
        if needed
        else " (the text gives no effect size, so no seed count decides power)"
    )
    first = failures[0].part
    if first == "sign":
        if significant or powered:
            return Outcome("not reproduced", text + power_note, failed, p_value=tested, tolerance=tol)
        return Outcome(
            "inconclusive",
            text + power_note + "; the opposite sign is not significant",
            failed,
            p_value=tested,
            tolerance=tol,
        )
    if first in ("significance", "seeds") and not powered:
        return Outcome("inconclusive", text + power_note, failed, p_value=tested, tolerance=tol)
    if not any(f.decisive for f in failures):
        return Outcome(
            "inconclusive",
            text + "; outside the band by its mean only, within seed noise",
            failed,
            p_value=tested,
            tolerance=tol,
        )
    return Outcome("not reproduced", text + power_note, failed, p_value=tested, tolerance=tol)


def _effect_size(gap: dict[str, Any], reported_d: float, failures: list[Failure]) -> str:
    """The measured d_z with its 95% CI; the reported d outside it is a failed part. Text for the evidence."""
    from repro.claims.stats import d_z_interval

    d = gap["mean"] / gap["sd"]
    # a bootstrap's resampled gap carries the interval, computed for every resample at once (repro.claims.stability)
    lo, hi = gap.get("d_ci95") or d_z_interval(d, gap["n"])
    if not lo <= abs(reported_d) * (1 if d >= 0 else -1) <= hi:
        failures.append(
            Failure(
                "effect size", f"reported d={reported_d:g} is outside the measured d_z's 95% CI [{lo:.2f}, {hi:.2f}]"
            )
        )
    return f"; d_z {d:.2f} (95% CI {lo:.2f} to {hi:.2f}) vs reported d={reported_d:g}"


def _check_band(gap: dict[str, Any], band: Band, failures: list[Failure]) -> None:
    """A mean outside the band fails; decisively when its 95% CI misses the band too."""
    mean = 100 * gap["mean"]
    if band.low <= mean <= band.high:
        return
    lo, hi = gap.get("ci95") or (None, None)
    reaches = lo is None or hi is None or (100 * lo <= band.high and 100 * hi >= band.low)
    failures.append(
        Failure(
            "band",
            f"{mean:+.2f}pp is outside {band.text()}" + ("; its 95% CI reaches the band" if reaches else ""),
            decisive=not reaches,
        )
    )


def _magnitude_tolerance(gap: dict[str, Any], pv: PaperValue) -> float:
    """95% half-width, in pp, of the difference between our mean gap and the paper's."""
    n, sd = gap["n"], 100 * (gap["sd"] or 0.0)
    n_p = pv.n or n
    sd_p = pv.sd if pv.sd is not None else sd
    se = math.sqrt(sd**2 / n + sd_p**2 / n_p)
    return float(_sps().t.ppf(0.975, max(1, min(n, n_p) - 1))) * se + pv.tolerance


def _gap(ev: Evidence, comparison: str) -> dict[str, Any]:
    return need(ev, comparison_metric(comparison, "gap"))


@dataclass(frozen=True)
class GapMatchesPaper:
    comparison: str
    paper: str
    alpha: float = ALPHA
    may_collapse: tuple[str, ...] = ()  # treatment rows whose collapse to chance is the finding (repro.claims.learned)
    # Where a vague word ("severe", "approaches") puts the gap, in pp, and the words it stands for; the
    # manifest gives the reason in an assumption.
    band: tuple[float, float] | None = None
    band_words: str = ""

    def __post_init__(self) -> None:
        if self.band is not None:
            if len(self.band) != 2 or not self.band_words:
                raise ValueError("band is [low, high] in pp, with band_words saying what it stands for")
            Band(*self.band, self.band_words)


def gap_matches_paper(p: GapMatchesPaper, ev: Evidence) -> Outcome:
    pv = paper(ev, p.paper)
    gap = _gap(ev, p.comparison)
    judged = judge_gap(gap, pv, p.alpha, Band(*p.band, p.band_words) if p.band is not None else None)
    return replace(
        judged,
        measured={comparison_metric(p.comparison, "gap"): gap},
        reported={p.paper: reported_gap(pv)},
        must_have_learned=guarded(ev, (p.comparison,), p.may_collapse),
    )


def _welch_p(a: list[float], b: list[float]) -> float:
    """Two-sided Welch p (repro.claims.stats.welch); NaN with fewer than two values a side, or none varying and
    the means equal."""
    from repro.claims.stats import welch  # scipy: imported when a claim is decided

    return welch(a, b).p


def _welch_text(pval: float, a: list[float], b: list[float]) -> str:
    """'p=0.293', or why there is no p (it printed 'p=nan')."""
    if not math.isnan(pval):
        return f"p={pval:.3g}"
    if min(len(a), len(b)) < 2:
        return "p undefined: one seed on a side"
    return "p undefined: neither row varies across seeds and their means are equal"


@dataclass(frozen=True)
class RowAbove:
    row: str
    baseline: str
    row_metric: str = "accuracy"  # a per-seed row metric: accuracy, late_drop
    paper: str | None = None  # the reported finding, when the paper states it as a value or a sign
    may_collapse: tuple[str, ...] = ()  # treatment rows whose collapse to chance is the finding (repro.claims.learned)
    # Where the text says the baseline avoids what the row suffers ("sigmoid schedules avoid this collapse"): the
    # baseline's mean must also stay below this bound, by a one-sided t-test (repro.claims.bands.one_sided); a
    # baseline significantly beyond it refutes the claim, whatever the row does. In the metric's own units.
    baseline_below: float | None = None
    below_words: str = ""  # what the bound stands for, e.g. "no late collapse"


def row_above(p: RowAbove, ev: Evidence) -> Outcome:
    """The row's per-seed metric above the baseline's (Welch); with `baseline_below`, the baseline within it too."""
    out = _row_above(p, ev)
    if p.baseline_below is None:
        return out
    xs = list(need(ev, row_metric(p.baseline, p.row_metric)).values())
    mean, bound = sum(xs) / len(xs), p.baseline_below
    pval, side = one_sided(xs, bound, "<")
    words = f" ({p.below_words})" if p.below_words else ""
    text = f"{out.evidence}; {p.baseline} {p.row_metric} {100 * mean:.2f}pp, claimed < {100 * bound:g}pp{words}" + (
        f", one-sided p={pval:.3g}" if pval is not None else " (one seed: no test)"
    )
    failed = list(out.failed)
    if side == "against":
        failed.append(
            f"band: {p.baseline} {p.row_metric} {100 * mean:.2f}pp is significantly not below {100 * bound:g}pp{words}"
        )
        return replace(out, status="not reproduced", evidence=text, failed=failed)
    if side == "undecided":
        failed.append(
            f"band: {p.baseline} {p.row_metric} {100 * mean:.2f}pp is not significantly below {100 * bound:g}pp"
        )
        status: Status = "not reproduced" if out.status == "not reproduced" else "inconclusive"
        return replace(out, status=status, evidence=text, failed=failed)
    return replace(out, evidence=text)


def _row_above(p: RowAbove, ev: Evidence) -> Outcome:
    a = list(need(ev, row_metric(p.row, p.row_metric)).values())
    b = list(need(ev, row_metric(p.baseline, p.row_metric)).values())
    diff = sum(a) / len(a) - sum(b) / len(b)
    pval = _welch_p(a, b)
    text = (
        f"{p.row_metric}: {p.row} {100 * sum(a) / len(a):.2f}% vs {p.baseline} {100 * sum(b) / len(b):.2f}%: "
        f"{pct(diff)} (Welch {_welch_text(pval, a, b)})"
    )
    measured = {row_metric(p.row, p.row_metric): a, row_metric(p.baseline, p.row_metric): b}
    reported = {}
    if p.paper is not None:
        pv = paper(ev, p.paper)
        reported = {p.paper: reported_gap(pv)}
        text += f"; reported: {pv.note or pv.printed}"
    significant = pval < ALPHA  # False for NaN (one seed, or no variance)
    tested: dict[str, Any] = dict(
        must_have_learned=tuple(r for r in (p.row, p.baseline) if r not in p.may_collapse),
        p_value=None if math.isnan(pval) else pval,
    )
    if diff > 0 and significant:
        return Outcome("reproduced", text, [], measured, reported, **tested)
    if diff > 0:
        return Outcome("inconclusive", text, ["significance: above, not significantly"], measured, reported, **tested)
    if significant:
        return Outcome("not reproduced", text, ["sign: significantly below"], measured, reported, **tested)
    return Outcome("inconclusive", text, ["sign: not above, not significantly"], measured, reported, **tested)


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
        return Outcome(
            "inconclusive", f"{mean:.2f}% from one seed vs reported {pv.printed}", ["seeds: need at least 2"]
        )
    sd = math.sqrt(sum((x - mean) ** 2 for x in xs) / (n - 1))
    n_p, sd_p = pv.n or ev.paper_seeds or n, pv.sd if pv.sd is not None else sd
    ours, theirs = sd**2 / n, sd_p**2 / n_p
    se = math.sqrt(ours + theirs)
    df = (ours + theirs) ** 2 / (ours**2 / (n - 1) + theirs**2 / max(1, n_p - 1)) if se > 0 else 1.0
    tol = float(_sps().t.ppf(0.975, df)) * se + pv.tolerance
    spread = "" if pv.sd is not None else ", the paper's s.d. taken as ours"
    text = (
        f"{mean:.2f} ± {sd:.2f}% over {n} seeds vs reported {pv.printed} over {n_p} seeds "
        f"(tolerance ±{tol:.2f}pp: 95% of the difference of two means{spread})"
    )
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
    return replace(
        judged,
        evidence=text,
        measured={"difference": diff},
        reported={p.paper: pv.printed},
        must_have_learned=guarded(ev, (p.comparison, p.minus), p.may_collapse),
    )


FAMILY = (
    Rule(
        "gap_matches_paper",
        GapMatchesPaper,
        gap_matches_paper,
        "a paired MoE - dense gap has the reported sign, significance and size",
    ),
    Rule("row_above", RowAbove, row_above, "one row's per-seed metric exceeds another's on average (Welch t-test)"),
    Rule(
        "accuracy_matches_paper",
        AccuracyMatchesPaper,
        accuracy_matches_paper,
        "a row's mean accuracy equals the reported one within its 95% CI and the printed precision",
    ),
    Rule("gap_difference", GapDifference, gap_difference, "the difference of two gaps matches the reported reversal"),
)


def _sps():
    """scipy.stats, imported on first use: loading it costs about a second, which `repro --help` and
    manifest validation (which only need the rules' parameter types) should not pay."""
    from scipy import stats

    return stats
