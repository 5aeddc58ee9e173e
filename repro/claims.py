"""Claims: each finding of the paper as a decision rule evaluated on measured results.

A claim names a rule and its parameters in the manifest that provides its
evidence. A rule reads metrics ("rows.<id>.<metric>", "comparisons.<id>.<metric>")
and the paper's reported values, and returns a Verdict with the evidence. No
verdict is ever written by hand: with no measurement the verdict is `not run`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from repro.paper import PaperValue, paper_value
from repro.registry import Registry, closest
from repro.results import COMPARISON_METRICS, ROW_METRICS, Status, Verdict


RULES = Registry("claim rule")

@dataclass
class Evidence:
    """What claims are decided on: the measured metrics of one manifest at one profile."""

    manifest_id: str
    paper_table: str
    profile: str
    metrics: dict[str, Any] = field(default_factory=dict)  # metric path -> value (or per-seed dict, or stats)
    missing: dict[str, str] = field(default_factory=dict)  # metric path -> why it was not measured
    device: str = "cpu"
    paper_scale: bool = True  # False when produced by a reduced profile such as smoke

    def get(self, path: str) -> Any:
        return self.metrics.get(path)

    def why_missing(self, path: str) -> str:
        return self.missing.get(path, f"{path} was not measured")


class NotRun(Exception):
    """A metric the rule needs was not measured; carries the reason."""


def _need(ev: Evidence, path: str) -> Any:
    value = ev.get(path)
    if value is None:
        raise NotRun(ev.why_missing(path))
    return value


def _paper(ev: Evidence, key: str) -> PaperValue:
    value = paper_value(ev.paper_table, key)
    if value is None:  # check_references makes this unreachable for validated manifests
        raise KeyError(f"paper_tables/{ev.paper_table}.toml has no value '{key}'")
    return value


def _in_paper_units(value: float, pv: PaperValue) -> float:
    return value * 100 if pv.unit == "%" else value


def _fmt(value: float, pv: PaperValue) -> str:
    shown = _in_paper_units(value, pv)
    digits = max(pv.decimals + 2, 2)
    return f"{shown:.{digits}f}{pv.unit}"


# --------------------------------------------------------------------------- rules
@dataclass(frozen=True)
class MatchesPaper:
    metric: str  # metric path
    paper: str  # key in the manifest's paper table


@RULES.register("matches_paper", config=MatchesPaper, doc="a measured value equals the reported one within its printed precision")
def matches_paper(p: MatchesPaper, ev: Evidence) -> tuple[Status, str, list[str], dict, dict]:
    pv = _paper(ev, p.paper)
    value = _need(ev, p.metric)
    shown = _in_paper_units(value, pv)
    ok = abs(shown - pv.value) <= pv.tolerance + 1e-12
    kind = "approximate, a unit in the last digit" if pv.approx else "half a unit in the last printed digit"
    text = (f"measured {_fmt(value, pv)} vs reported {pv.printed} (tolerance ±{pv.tolerance:g}{pv.unit}: {kind})")
    failed = [] if ok else [f"value: {_fmt(value, pv)} is outside {pv.value:g}±{pv.tolerance:g}{pv.unit}"]
    return ("reproduced" if ok else "not reproduced"), text, failed, {p.metric: value}, {p.paper: pv.printed}


@dataclass(frozen=True)
class RatioMatchesPaper:
    numerator: str
    denominator: str
    paper: str


@RULES.register("ratio_matches_paper", config=RatioMatchesPaper, doc="a ratio of two measured values equals the reported ratio")
def ratio_matches_paper(p: RatioMatchesPaper, ev: Evidence):
    pv = _paper(ev, p.paper)
    ratio = _need(ev, p.numerator) / _need(ev, p.denominator)
    ok = abs(ratio - pv.value) <= pv.tolerance + 1e-12
    text = f"measured ratio {ratio:.2f}{pv.unit} vs reported {pv.printed} (tolerance ±{pv.tolerance:g})"
    failed = [] if ok else [f"ratio: {ratio:.2f} is outside {pv.value:g}±{pv.tolerance:g}"]
    return ("reproduced" if ok else "not reproduced"), text, failed, {"ratio": ratio}, {p.paper: pv.printed}


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


@RULES.register("compare", config=Compare, doc="a measured value is below/above a bound, another metric or a paper value")
def compare(p: Compare, ev: Evidence):
    value = _need(ev, p.metric)
    reported: dict[str, Any] = {}
    if p.other is not None:
        bound, what = _need(ev, p.other), p.other
    elif p.paper is not None:
        pv = _paper(ev, p.paper)
        bound = pv.value / 100 if pv.unit == "%" else pv.value
        what, reported = f"reported {pv.printed}", {p.paper: pv.printed}
    else:
        bound, what = p.bound, "the bound"
    ok = value < bound if p.relation == "<" else value > bound
    text = f"{p.metric} = {value:.6g} {p.relation} {what} ({bound:.6g})"
    failed = [] if ok else [f"inequality: {value:.6g} is not {p.relation} {bound:.6g}"]
    return ("reproduced" if ok else "not reproduced"), text, failed, {p.metric: value}, reported


@dataclass(frozen=True)
class Equal:
    metrics: tuple[str, ...]
    relative_tolerance: float = 1e-3


@RULES.register("equal", config=Equal, doc="measured values agree with each other within a relative tolerance")
def equal(p: Equal, ev: Evidence):
    values = {m: _need(ev, m) for m in p.metrics}
    lo, hi = min(values.values()), max(values.values())
    spread = (hi - lo) / abs(hi) if hi else 0.0
    ok = spread <= p.relative_tolerance
    text = f"values {', '.join(f'{v:.6g}' for v in values.values())}: relative spread {spread:.2e} (tolerance {p.relative_tolerance:g})"
    failed = [] if ok else [f"spread {spread:.2e} exceeds {p.relative_tolerance:g}"]
    return ("reproduced" if ok else "not reproduced"), text, failed, values, {}


@dataclass(frozen=True)
class Separates:
    threshold: str  # paper key of the threshold (e.g. "threshold.rho")
    row_metric: str  # the metric compared on each row, e.g. "rho"
    below: tuple[str, ...]  # rows the paper reports on the losing side
    above: tuple[str, ...]  # rows the paper reports on the winning side


@RULES.register("separates", config=Separates, doc="a reported threshold lies between two groups of measured values")
def separates(p: Separates, ev: Evidence):
    pv = _paper(ev, p.threshold)
    bound = pv.value / 100 if pv.unit == "%" else pv.value
    lows = {r: _need(ev, f"rows.{r}.{p.row_metric}") for r in p.below}
    highs = {r: _need(ev, f"rows.{r}.{p.row_metric}") for r in p.above}
    failed = [f"{r}: {v:.4g} is not below {bound:.4g}" for r, v in lows.items() if not v < bound]
    failed += [f"{r}: {v:.4g} is not above {bound:.4g}" for r, v in highs.items() if not v > bound]
    text = (f"reported threshold {pv.printed}; below: max {max(lows.values()):.4g} ({max(lows, key=lows.get)}), "
            f"above: min {min(highs.values()):.4g} ({min(highs, key=highs.get)})")
    measured = {**{f"rows.{r}.{p.row_metric}": v for r, v in lows.items()}, **{f"rows.{r}.{p.row_metric}": v for r, v in highs.items()}}
    return ("not reproduced" if failed else "reproduced"), text, failed, measured, {p.threshold: pv.printed}


# --------------------------------------------------------------------------- evaluation
def evaluate(claim, ev: Evidence) -> Verdict:
    """Decide one manifest claim on the evidence; never raises for missing data."""
    base = dict(claim=claim.id, statement=claim.statement, section=claim.section, scope=claim.scope,
                paper_scale=ev.paper_scale or claim.scope == "analytic", seeds_needed=_seeds_needed(claim, ev))
    if claim.scope == "gpu" and ev.device != "cuda":
        return Verdict(**base, status="not run",
                       evidence=f"needs a GPU (scope gpu); measured on {ev.device}, so not decided")
    rule = RULES.get(claim.rule)
    params = rule.config(**claim.params)
    try:
        status, text, failed, measured, reported = rule.builder(params, ev)
    except NotRun as why:
        return Verdict(**base, status="not run", evidence=str(why))
    note = ""
    if claim.scope in ("empirical", "extension") and not ev.paper_scale:
        note = f"decided on the '{ev.profile}' profile: not a paper-scale result"
    return Verdict(**base, status=status, evidence=text, failed=failed, measured=measured, reported=reported, note=note)


def _seeds_needed(claim, ev: Evidence) -> int | None:
    from repro.claims_gaps import seeds_needed

    key = claim.params.get("paper")
    pv = paper_value(ev.paper_table, key) if isinstance(key, str) else None
    return seeds_needed(pv) if pv is not None and claim.scope != "analytic" else None


def check_references(manifest, problems) -> None:
    """Every metric path, row and paper key a claim names must exist."""
    rows = {r.id for r in manifest.rows}
    comps = {c.id for c in manifest.comparisons}
    table = manifest.paper_table
    for i, claim in enumerate(manifest.claims):
        for key, value in claim.params.items():
            refs = value if isinstance(value, (list, tuple)) else [value]
            for ref in refs:
                if not isinstance(ref, str):
                    continue
                where = f"claims[{i}].{key}"
                if key in ("paper", "threshold"):
                    if paper_value(table, ref) is None:
                        problems.add(where, f"paper_tables/{table}.toml has no value '{ref}'")
                elif key in ("below", "above", "rows", "row", "baseline"):
                    if ref not in rows:
                        problems.add(where, f"no row '{ref}'{closest(ref, sorted(rows))}")
                elif key in ("comparison", "comparisons", "minus"):
                    if ref not in comps:
                        problems.add(where, f"no comparison '{ref}'{closest(ref, sorted(comps))}")
                elif key in ("metric", "other", "numerator", "denominator", "metrics"):
                    _check_metric_path(ref, rows, comps, where, problems)
                elif key == "row_metric" and ref not in ROW_METRICS:
                    problems.add(where, f"unknown metric '{ref}'{closest(ref, sorted(ROW_METRICS))}")


def _check_metric_path(path: str, rows: set[str], comps: set[str], where: str, problems) -> None:
    parts = path.split(".")
    if len(parts) != 3 or parts[0] not in ("rows", "comparisons"):
        problems.add(where, f"expected 'rows.<id>.<metric>' or 'comparisons.<id>.<metric>', got {path!r}")
        return
    kind, ident, metric = parts
    ids, metrics = (rows, ROW_METRICS) if kind == "rows" else (comps, COMPARISON_METRICS)
    if ident not in ids:
        problems.add(where, f"no {kind[:-1]} '{ident}'{closest(ident, sorted(ids))}")
    if metric not in metrics:
        problems.add(where, f"unknown metric '{metric}'{closest(metric, sorted(metrics))}; allowed: {', '.join(sorted(metrics))}")


from repro import claims_gaps  # noqa: E402,F401  (registers the accuracy rules)
from repro import claims_latency  # noqa: E402,F401  (registers the latency rules)
from repro.claims_extension import FAMILY as _EXTENSION_RULES  # noqa: E402

for _rule in _EXTENSION_RULES:
    RULES.register(_rule.name, config=_rule.config, doc=_rule.doc)(_rule.fn)
