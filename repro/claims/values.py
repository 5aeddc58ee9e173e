"""Rules on measured values: equal to a reported one, beyond a bound, agreeing, or split by a threshold.

These decide the analytic claims (FLOPs, rho) and any single-number finding: a value matches the
paper within half a unit of its last printed digit (a full unit when printed as approximate).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from repro.claims.core import Evidence, Outcome, Rule, fmt, from_paper_units, in_paper_units, need, paper, passed
from repro.results.measurements import row_metric


@dataclass(frozen=True)
class MatchesPaper:
    metric: str  # metric path
    paper: str  # key in the manifest's paper table


def matches_paper(p: MatchesPaper, ev: Evidence) -> Outcome:
    pv = paper(ev, p.paper)
    value = need(ev, p.metric)
    shown = in_paper_units(value, pv)
    ok = abs(shown - pv.number) <= pv.tolerance + 1e-12
    kind = "approximate, a unit in the last digit" if pv.approx else "half a unit in the last printed digit"
    text = f"measured {fmt(value, pv)} vs reported {pv.printed} (tolerance ±{pv.tolerance:g}{pv.unit}: {kind})"
    failed = [] if ok else [f"value: {fmt(value, pv)} is outside {pv.value:g}±{pv.tolerance:g}{pv.unit}"]
    return Outcome(passed(ok), text, failed, {p.metric: value}, {p.paper: pv.printed}, tolerance=pv.tolerance)


@dataclass(frozen=True)
class RatioMatchesPaper:
    numerator: str
    denominator: str
    paper: str


def ratio_matches_paper(p: RatioMatchesPaper, ev: Evidence) -> Outcome:
    pv = paper(ev, p.paper)
    ratio = need(ev, p.numerator) / need(ev, p.denominator)
    ok = abs(ratio - pv.value) <= pv.tolerance + 1e-12
    text = f"measured ratio {ratio:.2f}{pv.unit} vs reported {pv.printed} (tolerance ±{pv.tolerance:g})"
    failed = [] if ok else [f"ratio: {ratio:.2f} is outside {pv.value:g}±{pv.tolerance:g}"]
    return Outcome(passed(ok), text, failed, {"ratio": ratio}, {p.paper: pv.printed}, tolerance=pv.tolerance)


@dataclass(frozen=True)
class Compare:
    metric: str
    relation: Literal["<", ">"]
    bound: float | None = None  # a number in the metric's own units (fractions for rho)
    other: str | None = None  # or another metric path
    paper: str | None = None  # or a paper value (converted from its printed unit)

    def __post_init__(self) -> None:
        if sum(x is not None for x in (self.bound, self.other, self.paper)) != 1:
            raise ValueError("give exactly one of bound, other, paper")


def compare(p: Compare, ev: Evidence) -> Outcome:
    value = need(ev, p.metric)
    reported: dict[str, Any] = {}
    if p.other is not None:
        bound, what = need(ev, p.other), p.other
    elif p.paper is not None:
        pv = paper(ev, p.paper)
        bound = from_paper_units(pv)
        what, reported = f"reported {pv.printed}", {p.paper: pv.printed}
    else:
        bound, what = p.bound, "the bound"
    ok = value < bound if p.relation == "<" else value > bound
    text = f"{p.metric} = {value:.6g} {p.relation} {what} ({bound:.6g})"
    failed = [] if ok else [f"inequality: {value:.6g} is not {p.relation} {bound:.6g}"]
    return Outcome(passed(ok), text, failed, {p.metric: value}, reported)


@dataclass(frozen=True)
class Equal:
    metrics: tuple[str, ...]
    relative_tolerance: float = 1e-3


def equal(p: Equal, ev: Evidence) -> Outcome:
    values = {m: need(ev, m) for m in p.metrics}
    lo, hi = min(values.values()), max(values.values())
    spread = (hi - lo) / abs(hi) if hi else 0.0
    ok = spread <= p.relative_tolerance
    shown = ", ".join(f"{v:.6g}" for v in values.values())
    text = f"values {shown}: relative spread {spread:.2e} (tolerance {p.relative_tolerance:g})"
    failed = [] if ok else [f"spread {spread:.2e} exceeds {p.relative_tolerance:g}"]
    return Outcome(passed(ok), text, failed, values, {}, tolerance=p.relative_tolerance)


@dataclass(frozen=True)
class Separates:
    threshold: str  # paper key of the threshold (e.g. "threshold.rho")
    row_metric: str  # the metric compared on each row, e.g. "rho"
    below: tuple[str, ...]  # rows the paper reports on the losing side
    above: tuple[str, ...]  # rows the paper reports on the winning side
    # Rows whose gap sign the text states but that the claim leaves out, each with the reason: every row with
    # a stated sign must be in below, above or here (repro.claims.references.check_stated_signs).
    excluded: dict[str, str] = field(default_factory=dict)
    # "paper": the claim must read every setting whose gap sign the text states in any table, not only in its own
    # (repro.claims.across.check_paper_signs). Each row then names the settings it counts, "<manifest>:<comparison>"
    # (the comparison whose MoE row it is), and `excluded` is keyed by such settings.
    stated_signs: Literal["table", "paper"] = "table"
    settings: dict[str, tuple[str, ...]] = field(default_factory=dict)


def separates(p: Separates, ev: Evidence) -> Outcome:
    pv = paper(ev, p.threshold)
    bound = from_paper_units(pv)
    lows = {r: need(ev, row_metric(r, p.row_metric)) for r in p.below}
    highs = {r: need(ev, row_metric(r, p.row_metric)) for r in p.above}
    failed = [f"{r}: {v:.4g} is not below {bound:.4g}" for r, v in lows.items() if not v < bound]
    failed += [f"{r}: {v:.4g} is not above {bound:.4g}" for r, v in highs.items() if not v > bound]
    text = (
        f"reported threshold {pv.printed}; "
        f"below: max {max(lows.values()):.4g} ({max(lows, key=lows.__getitem__)}), "
        f"above: min {min(highs.values()):.4g} ({min(highs, key=highs.__getitem__)})"
    )
    if max(lows.values()) < min(highs.values()):
        text += f"; these rows are split anywhere in ({max(lows.values()):.4g}, {min(highs.values()):.4g})"
    else:
        text += "; no threshold splits these rows"
    if p.excluded:
        text += "; left out: " + "; ".join(f"{r} ({why})" for r, why in p.excluded.items())
    measured = {row_metric(r, p.row_metric): v for r, v in (lows | highs).items()}
    return Outcome(passed(not failed), text, failed, measured, {p.threshold: pv.printed})


FAMILY = (
    Rule(
        "matches_paper",
        MatchesPaper,
        matches_paper,
        "a measured value equals the reported one within its printed precision",
    ),
    Rule(
        "ratio_matches_paper",
        RatioMatchesPaper,
        ratio_matches_paper,
        "a ratio of two measured values equals the reported ratio",
    ),
    Rule("compare", Compare, compare, "a measured value is below/above a bound, another metric or a paper value"),
    Rule("equal", Equal, equal, "measured values agree with each other within a relative tolerance"),
    Rule("separates", Separates, separates, "a reported threshold lies between two groups of measured values"),
)
