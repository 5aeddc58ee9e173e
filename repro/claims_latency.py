"""Decision rules for latency findings (Table 7, Section 5).

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

from repro.claims import RULES, Evidence, NotRun, _need, _paper


@dataclass(frozen=True)
class WithinFactor:
    metric: str
    paper: str
    factor: float = 2.0  # measured / reported must lie in [1/factor, factor]

    def __post_init__(self) -> None:
        if self.factor < 1:
            raise ValueError("factor must be at least 1")


@RULES.register("within_factor", config=WithinFactor,
                doc="a measured value lies within a factor of the reported one (latency on other hardware)")
def within_factor(p: WithinFactor, ev: Evidence):
    pv = _paper(ev, p.paper)
    value = _need(ev, p.metric)
    ratio = value / pv.value
    ok = 1 / p.factor <= ratio <= p.factor
    text = f"measured {value:.4g}{pv.unit} vs reported {pv.printed}: {ratio:.2f}x of it (allowed {1 / p.factor:.2f}-{p.factor:g}x)"
    failed = [] if ok else [f"factor: {ratio:.2f}x is outside [{1 / p.factor:.2f}, {p.factor:g}]"]
    return ("reproduced" if ok else "not reproduced"), text, failed, {p.metric: value}, {p.paper: pv.printed}


@dataclass(frozen=True)
class Ordered:
    metrics: tuple[str, ...]
    direction: Literal["decreasing", "increasing"] = "decreasing"


@RULES.register("ordered", config=Ordered, doc="measured values are strictly decreasing (or increasing) in the order given")
def ordered(p: Ordered, ev: Evidence):
    values = {m: _need(ev, m) for m in p.metrics}
    pairs = list(zip(p.metrics, p.metrics[1:]))
    sign = ">" if p.direction == "decreasing" else "<"
    bad = [(a, b) for a, b in pairs if not (values[a] > values[b] if sign == ">" else values[a] < values[b])]
    text = f" {sign} ".join(f"{m.split('.')[1]} {v:.4g}" for m, v in values.items())
    failed = [f"order: {a} ({values[a]:.4g}) is not {sign} {b} ({values[b]:.4g})" for a, b in bad]
    return ("not reproduced" if failed else "reproduced"), text, failed, values, {}


@dataclass(frozen=True)
class Largest:
    row: str
    rows: tuple[str, ...]  # the others
    row_metric: str = "model_latency_ms"


@RULES.register("largest", config=Largest, doc="one row's metric exceeds every other listed row's")
def largest(p: Largest, ev: Evidence):
    top = _need(ev, f"rows.{p.row}.{p.row_metric}")
    others = {r: _need(ev, f"rows.{r}.{p.row_metric}") for r in p.rows}
    runner_up = max(others, key=others.get)
    failed = [f"{r}: {v:.4g} is not below {top:.4g}" for r, v in others.items() if not v < top]
    text = f"{p.row_metric}: {p.row} {top:.4g}; next {runner_up} {others[runner_up]:.4g} ({top / others[runner_up]:.2f}x)"
    return ("not reproduced" if failed else "reproduced"), text, failed, {p.row: top, **others}, {}


@dataclass(frozen=True)
class ScalesWithExperts:
    metrics: tuple[str, ...]  # "rows.<id>.<metric>" of rows that differ in their number of experts
    expect: Literal["grows", "constant"]
    min_per_expert: float = 1.0  # grows: least-squares slope per added expert at least this
    tolerance: float = 0.0  # constant: relative spread allowed


def _experts(ev: Evidence, path: str) -> int:
    _, row, _ = path.split(".")
    return int(_need(ev, f"rows.{row}.num_experts"))


@RULES.register("scales_with_experts", config=ScalesWithExperts,
                doc="a per-row count grows with the number of experts E (or stays constant in E)")
def scales_with_experts(p: ScalesWithExperts, ev: Evidence):
    points = sorted((_experts(ev, m), _need(ev, m)) for m in p.metrics)
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
    return ("not reproduced" if failed else "reproduced"), text, failed, measured, {}
