"""Rules for routing findings (Section 5.3): where test-time routing goes, and how it relates to the gap.

They read per-seed routing metrics of a head's test-time top-1 choices (repro.measure.accuracy.routing_at_test_time):
`rows.<id>.routing_top_share` (the most used expert's share of the test images) and
`rows.<id>.routing_balance` (the usage's entropy over log E: 1 when every expert is used equally), and the
per-seed MoE - dense differences of a comparison's gap. Every compared row must have learned
(repro.claims.learned). FAMILY lists the rules for repro.claims.rules.

    routing_concentrated   on every seed, one expert takes more than `share` of the test-time routing
    gap_tracks_routing     across seeds, the gap falls (or rises) with a routing metric: the correlation within
                           each comparison, pooled
    balanced_yet_worst     a comparison's row routes near-perfectly balanced, yet its gap is the lowest (the order
                           judged as repro.claims.orders judges every order, so gap_order cannot disagree)
    routing_uniform        on every seed a row's routing is uniform: its balance at least `balance`
    concentrated_at_test   on every seed a row's test-time routing sits on a few experts while its last training
                           epoch keeps every expert active
    layers_active_non_uniform  on every seed every backbone MoE layer uses every expert, balanced yet not uniformly
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

from repro.claims.core import Evidence, NotRun, Outcome, Rule, need, pct
from repro.claims.orders import cannot_order, ordered_pairs
from repro.results.measurements import comparison_metric, row_metric

ALPHA = 0.05


@dataclass(frozen=True)
class RoutingConcentrated:
    row: str
    share: float = 0.5  # "the majority": more than half


def routing_concentrated(p: RoutingConcentrated, ev: Evidence) -> Outcome:
    shares = need(ev, row_metric(p.row, "routing_top_share"))
    values = [shares[s] for s in sorted(shares)]
    text = (
        f"{p.row}: the most used expert takes "
        + ", ".join(f"{100 * v:.1f}%" for v in values)
        + f" of test-time routing per seed (more than {100 * p.share:.0f}% claimed)"
    )
    above = sum(v > p.share for v in values)
    learned: dict[str, Any] = dict(must_have_learned=(p.row,))
    if above == len(values):
        return Outcome("reproduced", text, [], {p.row: values}, **learned)
    if above == 0:
        return Outcome("not reproduced", text, [f"share: no seed above {p.share:g}"], {p.row: values}, **learned)
    return Outcome(
        "inconclusive", text, [f"share: {above} of {len(values)} seeds above {p.share:g}"], {p.row: values}, **learned
    )


@dataclass(frozen=True)
class GapTracksRouting:
    comparisons: tuple[str, ...]
    row_metric: str = "routing_balance"  # of each comparison's treatment row, per seed
    direction: Literal["negative", "positive"] = "negative"  # lower metric, larger gap: negative


def _pooled_correlation(groups: list[list[tuple[float, float]]]) -> tuple[float, int]:
    """Pearson r of (x, y) pooled over groups after removing each group's means, and its degrees of freedom."""
    xs, ys = [], []
    for pairs in groups:
        mx, my = sum(x for x, _ in pairs) / len(pairs), sum(y for _, y in pairs) / len(pairs)
        xs += [x - mx for x, _ in pairs]
        ys += [y - my for _, y in pairs]
    sxx, syy = sum(x * x for x in xs), sum(y * y for y in ys)
    r = sum(x * y for x, y in zip(xs, ys)) / math.sqrt(sxx * syy) if sxx > 0 and syy > 0 else 0.0
    return r, len(xs) - 2 - (len(groups) - 1)


def gap_tracks_routing(p: GapTracksRouting, ev: Evidence) -> Outcome:
    groups, rows = [], []
    for comp in p.comparisons:
        row, _ = ev.rows_of(comp)
        rows.append(row)
        # seeds as strings: a gap's per-seed differences come from JSON-ready dicts, row metrics may not
        diffs = {str(s): d for s, d in (need(ev, comparison_metric(comp, "gap")).get("differences") or {}).items()}
        metric = {str(s): v for s, v in need(ev, row_metric(row, p.row_metric)).items()}
        pairs = [(float(metric[s]), float(diffs[s])) for s in diffs if s in metric]
        if len(pairs) >= 2:
            groups.append(pairs)
    r, df = _pooled_correlation(groups) if groups else (0.0, 0)
    text = (
        f"{p.row_metric} against the gap over seeds, within {len(groups)} comparison(s): r = {r:+.2f} "
        f"on {sum(len(g) for g in groups)} seeds (claimed {p.direction})"
    )
    learned = tuple(dict.fromkeys(r for c in p.comparisons for r in ev.rows_of(c)))
    measured = {"r": r, "seeds": sum(len(g) for g in groups)}
    if df < 1 or abs(r) >= 1:
        pval = None if df < 1 else 0.0
    else:
        pval = float(_sps().t.sf(abs(r) * math.sqrt(df / (1 - r * r)), df) * 2)
    if pval is None:
        return Outcome(
            "inconclusive",
            text + "; too few seeds for a test",
            ["seeds: too few for a correlation"],
            measured,
            must_have_learned=learned,
        )
    text += f", p={pval:.3g}"
    agrees = (r < 0) == (p.direction == "negative") and r != 0
    if agrees and pval < ALPHA:
        return Outcome("reproduced", text, [], measured, must_have_learned=learned, p_value=pval)
    if not agrees and pval < ALPHA:
        return Outcome(
            "not reproduced",
            text,
            [f"sign: r = {r:+.2f}, significantly"],
            measured,
            must_have_learned=learned,
            p_value=pval,
        )
    return Outcome(
        "inconclusive",
        text,
        [f"significance: p={pval:.3g} is not below {ALPHA}"],
        measured,
        must_have_learned=learned,
        p_value=pval,
    )


@dataclass(frozen=True)
class BalancedYetWorst:
    comparison: str
    others: tuple[str, ...]  # comparisons whose gaps it must trail
    balance: float = 0.95  # "near-perfect balance": at least this share of the maximal routing entropy


def balanced_yet_worst(p: BalancedYetWorst, ev: Evidence) -> Outcome:
    row, _ = ev.rows_of(p.comparison)
    balance = need(ev, row_metric(row, "routing_balance"))
    mean_balance = sum(balance.values()) / len(balance)
    gaps = {c: need(ev, comparison_metric(c, "gap")) for c in (p.comparison, *p.others)}
    own = gaps[p.comparison]
    learned = tuple(dict.fromkeys(r for c in gaps for r in ev.rows_of(c)))
    if (out := cannot_order(gaps, learned)) is not None:
        return out
    text = (
        f"{row}: routing balance {mean_balance:.3f} (near-perfect: at least {p.balance:g}); gap {pct(own['mean'])} "
        "against " + ", ".join(f"{c} {pct(g['mean'])}" for c, g in gaps.items() if c != p.comparison)
    )
    failed = [] if mean_balance >= p.balance else [f"balance: {mean_balance:.3f} is below {p.balance:g}"]
    inversions, unclear = ordered_pairs([(p.comparison, own, c, g) for c, g in gaps.items() if c != p.comparison])
    measured = {"balance": mean_balance, **{c: g["mean"] for c, g in gaps.items()}}
    balanced = not failed
    failed += [f"order: {x}" for x in inversions + unclear]
    if not balanced or inversions:
        return Outcome("not reproduced", text, failed, measured, must_have_learned=learned)
    if unclear:
        return Outcome(
            "inconclusive", text + "; out of order within seed noise", failed, measured, must_have_learned=learned
        )
    return Outcome("reproduced", text, [], measured, must_have_learned=learned)


def _per_seed(values: dict, ok) -> tuple[int, int]:
    """(seeds that pass, seeds) of per-seed values."""
    return sum(bool(ok(v)) for v in values.values()), len(values)


def _by_seeds(passing: int, seeds: int, text: str, failure: str, measured: dict, row: str) -> Outcome:
    learned: dict[str, Any] = dict(must_have_learned=(row,))
    if passing == seeds:
        return Outcome("reproduced", text, [], measured, **learned)
    if passing == 0:
        return Outcome("not reproduced", text, [f"{failure}: no seed"], measured, **learned)
    return Outcome("inconclusive", text, [f"{failure}: {passing} of {seeds} seeds"], measured, **learned)


@dataclass(frozen=True)
class RoutingUniform:
    row: str
    balance: float = 0.99  # "exactly uniform": the usage's entropy over log E at least this (the manifest says why)
    at: Literal["test", "train"] = "test"  # test-time top-1 routing, or the last training epoch's dispatch


def routing_uniform(p: RoutingUniform, ev: Evidence) -> Outcome:
    metric = "routing_balance" if p.at == "test" else "train_routing_balance"
    values = need(ev, row_metric(p.row, metric))
    other = ev.get(row_metric(p.row, "train_routing_balance" if p.at == "test" else "routing_balance"))
    text = (
        f"{p.row}: {'test-time' if p.at == 'test' else 'training'} routing balance "
        + ", ".join(f"{values[s] + 0.0:.3f}" for s in sorted(values))
        + f" per seed (uniform: at least {p.balance:g})"
    )
    if other:
        text += f"; {'training' if p.at == 'test' else 'test-time'} balance " + ", ".join(
            f"{other[s] + 0.0:.3f}" for s in sorted(other)
        )
    return _by_seeds(
        *_per_seed(values, lambda v: v >= p.balance),
        text,
        f"balance: at least {p.balance:g}",
        {p.row: dict(values)},
        p.row,
    )


@dataclass(frozen=True)
class ConcentratedAtTest:
    row: str
    at_most: int = 3  # "concentrates on 1-3 experts": the fewest experts taking 90% of the test images
    experts: int = 8  # "8/8 active": every expert takes at least 1% of the last training epoch's dispatches


def concentrated_at_test(p: ConcentratedAtTest, ev: Evidence) -> Outcome:
    """Section 5: test-time routing on at most `at_most` experts (rows.<row>.test_experts_90) despite training
    keeping all `experts` active (rows.<row>.train_experts_active), on every seed (repro.measure.accuracy's bands)."""
    test, train = need(ev, row_metric(p.row, "test_experts_90")), need(ev, row_metric(p.row, "train_experts_active"))
    seeds = sorted(set(test) & set(train), key=str)
    if not seeds:
        raise NotRun(f"no seed of {p.row} has both its test-time and its training routing")
    text = (
        f"{p.row} per seed: "
        + "; ".join(
            f"90% of test images on {test[s]} expert(s), {train[s]} of {p.experts} active in training" for s in seeds
        )
        + f" (claimed: at most {p.at_most} at test, all {p.experts} in training)"
    )
    ok = {s: test[s] <= p.at_most and train[s] == p.experts for s in seeds}
    measured = {"test_experts_90": dict(test), "train_experts_active": dict(train)}
    return _by_seeds(*_per_seed(ok, bool), text, "concentrated at test, all active in training", measured, p.row)


@dataclass(frozen=True)
class LayersActiveNonUniform:
    row: str
    layers: int = 8  # the MoE layers the text counts
    min_share: float = 0.01  # "active": every expert takes at least this share of its layer's assignments
    balanced: float = 0.90  # "balanced": every layer's usage entropy over log E at least this
    uniform: float = 0.99  # "non-uniform": every layer's below this (RoutingUniform's "exactly uniform")


def layers_active_non_uniform(p: LayersActiveNonUniform, ev: Evidence) -> Outcome:
    count, share = need(ev, row_metric(p.row, "moe_layers")), need(ev, row_metric(p.row, "layer_min_share"))
    low, high = need(ev, row_metric(p.row, "layer_balance_min")), need(ev, row_metric(p.row, "layer_balance_max"))
    seeds = sorted(count)
    text = (
        f"{p.row} per seed (last training epoch): "
        + "; ".join(
            f"{count[s]} layers, least-used expert {100 * share[s]:.1f}%, balance {low[s]:.3f}-{high[s]:.3f}"
            for s in seeds
        )
        + f" (claimed: {p.layers} layers, every expert at least {100 * p.min_share:g}%, balance in "
        f"[{p.balanced:g}, {p.uniform:g}))"
    )
    ok = {
        s: count[s] == p.layers and share[s] >= p.min_share and low[s] >= p.balanced and high[s] < p.uniform
        for s in seeds
    }
    measured = {
        "moe_layers": dict(count),
        "layer_min_share": dict(share),
        "layer_balance_min": dict(low),
        "layer_balance_max": dict(high),
    }
    return _by_seeds(*_per_seed(ok, bool), text, "layers active, balanced, not uniform", measured, p.row)


FAMILY = (
    Rule(
        "routing_concentrated",
        RoutingConcentrated,
        routing_concentrated,
        "on every seed one expert takes more than a share of the test-time routing",
    ),
    Rule(
        "gap_tracks_routing",
        GapTracksRouting,
        gap_tracks_routing,
        "across seeds the gap falls (or rises) with a routing metric, within each comparison",
    ),
    Rule(
        "balanced_yet_worst",
        BalancedYetWorst,
        balanced_yet_worst,
        "a comparison's row routes near-perfectly balanced yet has the lowest gap",
    ),
    Rule("routing_uniform", RoutingUniform, routing_uniform, "on every seed a row's routing is uniform"),
    Rule(
        "concentrated_at_test",
        ConcentratedAtTest,
        concentrated_at_test,
        "on every seed test-time routing sits on a few experts while training keeps every expert active",
    ),
    Rule(
        "layers_active_non_uniform",
        LayersActiveNonUniform,
        layers_active_non_uniform,
        "on every seed every backbone MoE layer uses every expert, balanced yet not uniformly",
    ),
)


def _sps():
    """scipy.stats on first use (manifest validation needs only the parameter types)."""
    from scipy import stats

    return stats
