"""Decision rules for claims beyond the paper (scope "extension"): do other routers follow rho?

No paper value exists for these; the question is whether the paper's pattern holds
when the router changes. Rules here read the same comparisons as the paper's
(``comparisons.<id>.gap`` paired by seed, ``comparisons.<id>.rho``):

    router_order_stable   routers ranked by mean gap at each configuration: the same order at every one
                          (pairs closer than their 95% half-widths are ties, which cannot break the order)

Whether the sign follows rho for one router is the paper's own rule, sign_follows_rho,
applied to that router's comparisons. Every compared row must have learned
(repro.claims.learned). FAMILY lists the rules for repro.claims.rules.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from typing import Any

from repro.claims.core import Evidence, Outcome, Rule, need
from repro.results.measurements import comparison_metric


def _half_width(gap: dict[str, Any]) -> float:
    lo, hi = gap.get("ci95") or (None, None)
    return 0.0 if lo is None or hi is None else (hi - lo) / 2


@dataclass(frozen=True)
class RouterOrderStable:
    routers: tuple[str, ...]  # router labels, e.g. ("paper", "teacher_guided", ...)
    # router-major: the first len(comparisons) / len(routers) belong to routers[0], in one shared
    # order of configurations, then routers[1]'s in that order, and so on
    comparisons: tuple[str, ...]
    configs: tuple[str, ...] = ()  # a label for each configuration; default: routers[0]'s comparison ids

    def __post_init__(self) -> None:
        if self.configs and len(self.configs) * len(self.routers) != len(self.comparisons):
            raise ValueError(
                f"configs ({len(self.configs)}) must label every configuration "
                f"({len(self.comparisons) // max(1, len(self.routers))})"
            )
        if len(self.routers) < 2:
            raise ValueError("router_order_stable needs at least two routers")
        if not self.comparisons or len(self.comparisons) % len(self.routers):
            raise ValueError(
                f"comparisons ({len(self.comparisons)}) must be a whole number of configurations "
                f"for each of the {len(self.routers)} routers"
            )

    def grid(self) -> list[list[str]]:
        """comparisons as [configuration][router]."""
        n = len(self.comparisons) // len(self.routers)
        return [[self.comparisons[r * n + j] for r in range(len(self.routers))] for j in range(n)]


def order_at(gaps: list[dict[str, Any]], routers: tuple[str, ...]) -> tuple[tuple[str, ...], set[frozenset]]:
    """Routers by decreasing mean gap at one configuration, and the pairs too close to order (ties)."""
    ranked = sorted(range(len(routers)), key=lambda i: -gaps[i]["mean"])
    ties = {
        frozenset((routers[i], routers[j]))
        for i in range(len(routers))
        for j in range(i + 1, len(routers))
        if abs(gaps[i]["mean"] - gaps[j]["mean"]) <= math.hypot(_half_width(gaps[i]), _half_width(gaps[j]))
    }
    return tuple(routers[i] for i in ranked), ties


def _inverted(order: tuple[str, ...], ref: tuple[str, ...]) -> set[frozenset]:
    pos = {r: i for i, r in enumerate(ref)}
    return {frozenset((a, b)) for i, a in enumerate(order) for b in order[i + 1 :] if pos[a] > pos[b]}


def router_order_stable(p: RouterOrderStable, ev: Evidence) -> Outcome:
    grid = p.grid()
    learned = tuple(dict.fromkeys(r for comps in grid for c in comps for r in ev.rows_of(c)))
    rows = []  # (configuration label, order, ties)
    measured: dict[str, Any] = {}
    for j, comps in enumerate(grid):
        gaps = [need(ev, comparison_metric(c, "gap")) for c in comps]
        order, ties = order_at(gaps, p.routers)
        label = p.configs[j] if p.configs else comps[0]
        rows.append((label, order, ties))
        measured[label] = {r: g["mean"] for r, g in zip(p.routers, gaps)}
    modal = Counter(order for _, order, _ in rows).most_common(1)[0][0]
    text = "order by mean gap: " + "; ".join(f"{c}: {' > '.join(o)}" for c, o, _ in rows)
    broken: list[str] = []
    unclear: list[str] = []
    for comp, order, ties in rows:
        inv = _inverted(order, modal)
        if not inv:
            continue
        names = ", ".join(sorted("/".join(sorted(pair)) for pair in inv))
        (unclear if inv <= ties else broken).append(f"order at {comp}: {' > '.join(order)} (swapped: {names})")
    if broken:
        return Outcome("not reproduced", text, broken + unclear, measured, {}, must_have_learned=learned)
    if unclear:
        return Outcome(
            "inconclusive",
            text + "; the differing orders are within seed noise",
            unclear,
            measured,
            {},
            must_have_learned=learned,
        )
    return Outcome("reproduced", text, [], measured, {}, must_have_learned=learned)


FAMILY = (
    Rule(
        "router_order_stable",
        RouterOrderStable,
        router_order_stable,
        "routers ranked by mean gap keep one order at every configuration",
    ),
)
