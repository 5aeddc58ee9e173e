"""Rules for latency findings (Table 7, Section 5).

Absolute times and ratios measured on another machine than the paper's cannot
match its printed digits, so a latency value is judged within a factor of the
reported one. Orderings and the growth of operator calls with the number of
experts are judged as stated. The GPU-scoped claims that use these rules are
`not run` on a CPU (repro.claims.evaluate).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from repro.claims.core import Evidence, NotRun, Outcome, Rule, need, paper, passed
from repro.results.measurements import parse_metric_path, row_metric


@dataclass(frozen=True)
class WithinFactor:
    metric: str
    paper: str
    factor: float = 2.0  # measured / reported must lie in [1/factor, factor]

    def __post_init__(self) -> None:
        if self.factor < 1:
            raise ValueError("factor must be at least 1")


def within_factor(p: WithinFactor, ev: Evidence) -> Outcome:
    pv = paper(ev, p.paper)
    value = need(ev, p.metric)
    ratio = value / pv.value
    ok = 1 / p.factor <= ratio <= p.factor
    text = (
        f"measured {value:.4g}{pv.unit} vs reported {pv.printed}: {ratio:.2f}x of it "
        f"(allowed {1 / p.factor:.2f}-{p.factor:g}x)"
    )
    failed = [] if ok else [f"factor: {ratio:.2f}x is outside [{1 / p.factor:.2f}, {p.factor:g}]"]
    return Outcome(passed(ok), text, failed, {p.metric: value}, {p.paper: pv.printed}, tolerance=p.factor)


@dataclass(frozen=True)
class Ordered:
    metrics: tuple[str, ...]
    direction: Literal["decreasing", "increasing"] = "decreasing"


def ordered(p: Ordered, ev: Evidence) -> Outcome:
    values = {m: need(ev, m) for m in p.metrics}
    sign = ">" if p.direction == "decreasing" else "<"
    bad = [
        (a, b)
        for a, b in zip(p.metrics, p.metrics[1:])
        if not (values[a] > values[b] if sign == ">" else values[a] < values[b])
    ]
    text = f" {sign} ".join(f"{parse_metric_path(m)[1]} {v:.4g}" for m, v in values.items())
    failed = [f"order: {a} ({values[a]:.4g}) is not {sign} {b} ({values[b]:.4g})" for a, b in bad]
    return Outcome(passed(not failed), text, failed, values)


@dataclass(frozen=True)
class Largest:
    row: str
    rows: tuple[str, ...]  # the others
    row_metric: str = "model_latency_ms"


def largest(p: Largest, ev: Evidence) -> Outcome:
    top = need(ev, row_metric(p.row, p.row_metric))
    others = {r: need(ev, row_metric(r, p.row_metric)) for r in p.rows}
    runner_up = max(others, key=others.__getitem__)
    failed = [f"{r}: {v:.4g} is not below {top:.4g}" for r, v in others.items() if not v < top]
    text = (
        f"{p.row_metric}: {p.row} {top:.4g}; next {runner_up} {others[runner_up]:.4g} ({top / others[runner_up]:.2f}x)"
    )
    return Outcome(passed(not failed), text, failed, {p.row: top, **others})


@dataclass(frozen=True)
class ScalesWithExperts:
    metrics: tuple[str, ...]  # "rows.<id>.<metric>" of rows that differ in their number of experts
    expect: Literal["grows", "constant"]
    min_per_expert: float = 1.0  # grows: least-squares slope per added expert at least this
    tolerance: float = 0.0  # constant: relative spread allowed


def _experts(ev: Evidence, path: str) -> int:
    _, row, _ = parse_metric_path(path)
    return int(need(ev, row_metric(row, "num_experts")))


def scales_with_experts(p: ScalesWithExperts, ev: Evidence) -> Outcome:
    points = sorted((_experts(ev, m), need(ev, m)) for m in p.metrics)
    es = [e for e, _ in points]
    if len(set(es)) < 2:
        raise NotRun(f"needs rows at two or more numbers of experts; measured E = {es}")
    ys = [y for _, y in points]
    mean_e, mean_y = sum(es) / len(es), sum(ys) / len(ys)
    slope = sum((e - mean_e) * (y - mean_y) for e, y in points) / sum((e - mean_e) ** 2 for e in es)
    series = ", ".join(f"E={e}: {y:g}" for e, y in points)
    measured = {f"E={e}": y for e, y in points}
    if p.expect == "grows":
        rises = all(b > a for a, b in zip(ys, ys[1:]))
        failed = [] if rises else ["order: not strictly increasing in E"]
        if slope < p.min_per_expert:
            failed.append(f"slope: {slope:.2f} per expert is below {p.min_per_expert:g}")
        text = f"{series}; {slope:.1f} more per added expert (least squares)"
    else:
        spread = (max(ys) - min(ys)) / max(abs(max(ys)), 1e-12)
        failed = [] if spread <= p.tolerance else [f"spread: {spread:.2%} exceeds {p.tolerance:.2%}"]
        text = f"{series}; relative spread {spread:.2%} (allowed {p.tolerance:.2%})"
    if not math.isfinite(slope):
        failed.append("slope: not finite")
    return Outcome(
        passed(not failed), text, failed, measured, tolerance=p.tolerance if p.expect == "constant" else None
    )


FAMILY = (
    Rule(
        "within_factor",
        WithinFactor,
        within_factor,
        "a measured value lies within a factor of the reported one (latency on other hardware)",
    ),
    Rule("ordered", Ordered, ordered, "measured values are strictly decreasing (or increasing) in the order given"),
    Rule("largest", Largest, largest, "one row's metric exceeds every other listed row's"),
    Rule(
        "scales_with_experts",
        ScalesWithExperts,
        scales_with_experts,
        "a per-row count grows with the number of experts E (or stays constant in E)",
    ),
)
