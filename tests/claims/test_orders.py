"""Orderings of gaps (repro.claims.orders): noise allowance, both signs needed, the measured relation printed."""

import pytest

from repro.claims import Evidence, evaluate
from repro.plan.manifest import Claim

from .helpers import gap, learned


def _ev(gaps_pp, rhos=None):
    """Comparisons c0.. with per-seed gaps (pp) and rho; rows moe<i> against one dense row, all learned."""
    metrics, rows = {}, {}
    for i, diffs in enumerate(gaps_pp):
        metrics[f"comparisons.c{i}.gap"] = gap(diffs)
        metrics[f"comparisons.c{i}.rho"] = rhos[i] if rhos else 0.1 * (i + 1)
        rows[f"c{i}"] = (f"moe{i}", "dense")
    return Evidence(
        "t",
        "table1",
        "full",
        metrics={**metrics, **learned("dense", *(r for r, _ in rows.values()))},
        comparison_rows=rows,
        kind="paper",
    )


def _decide(rule, ev, **params):
    return evaluate(Claim("c", "s", "4.2", rule, "empirical", params), ev)


def _tight(*means):
    return [[m - 0.05, m + 0.05, m] for m in means]


def test_sign_follows_rho_refuses_gaps_that_are_all_negative():
    # Six clearly negative gaps: no sign change with rho. The old rule read "no '+-' in the signs" and passed.
    v = _decide(
        "sign_follows_rho", _ev(_tight(-3, -2.5, -2, -1.5, -1, -0.5)), comparisons=tuple(f"c{i}" for i in range(6))
    )
    assert v.status == "not reproduced"
    assert v.failed == ["sign: no clearly positive gap"] and "the sign does not change with rho" in v.evidence


def test_sign_follows_rho_with_an_unclear_side_decides_nothing():
    # Negative gaps, and one that is positive only within noise: nothing shows a positive side.
    noisy = [[-2.0, 3.0, 0.5]]
    v = _decide("sign_follows_rho", _ev(_tight(-3, -2) + noisy), comparisons=("c0", "c1", "c2"))
    assert v.status == "inconclusive" and v.failed == ["sign: no clearly positive gap"]


def test_sign_follows_rho_allows_an_inversion_within_seed_noise():
    # By rho: -, +(within noise), -, +, +: the middle pair is out of order by means only.
    gaps = _tight(-2) + [[-1.0, 2.0, 0.2]] + _tight(-1, 1, 2)
    v = _decide("sign_follows_rho", _ev(gaps), comparisons=tuple(f"c{i}" for i in range(5)))
    assert v.status == "inconclusive" and "within noise" in v.failed[0]
    clear = _decide("sign_follows_rho", _ev(_tight(-2, 1, -1, 1, 2)), comparisons=tuple(f"c{i}" for i in range(5)))
    assert clear.status == "not reproduced" and clear.failed[0].startswith("sign: c1 (+1.00pp) at rho 20.0%")
    split = _decide("sign_follows_rho", _ev(_tight(-2, -1, 1, 2)), comparisons=("c0", "c1", "c2", "c3"))
    assert split.status == "reproduced" and split.failed == []


def test_gap_order_prints_the_measured_relation_not_the_expected_one():
    v = _decide("gap_order", _ev(_tight(0.0, -0.78)), comparisons=("c0", "c1"))
    assert v.evidence.startswith("c0 +0.00pp > c1 -0.78pp (expected c0 < c1)")
    assert v.status == "not reproduced" and v.failed == ["order: c0 (+0.00pp) > c1 (-0.78pp)"]
    assert _decide("gap_order", _ev(_tight(-1.0, 1.0)), comparisons=("c0", "c1")).evidence.startswith(
        "c0 -1.00pp < c1 +1.00pp"
    )


def test_gap_largest_allows_seed_noise():
    assert _decide("gap_largest", _ev(_tight(5, 1, 2)), comparison="c0", others=("c1", "c2")).status == "reproduced"
    v = _decide("gap_largest", _ev(_tight(1, 5, 2)), comparison="c0", others=("c1", "c2"))
    assert v.status == "not reproduced"
    assert v.failed == ["order: c1 (+5.00pp) > c0 (+1.00pp)", "order: c2 (+2.00pp) > c0 (+1.00pp)"]
    noisy = _decide("gap_largest", _ev([[0.0, 4.0, 2.0], [1.0, 4.0, 2.5]]), comparison="c0", others=("c1",))
    assert noisy.status == "inconclusive"


@pytest.mark.parametrize(
    "means,status", [((-1, -1.5, -4), "reproduced"), ((-1, -0.5, -4), "reproduced"), ((-4, -1, -1.2), "not reproduced")]
)
def test_gap_not_rising_counts_a_rise_of_at_most_flat_pp_as_flat(means, status):
    v = _decide("gap_not_rising", _ev(_tight(*means)), series={"sparse": ("c0", "c1", "c2")}, flat_pp=1.0)
    assert v.status == status, v.evidence
    if status == "not reproduced":
        assert v.failed == ["trend: c0 -> c1 rises +3.00pp, beyond seed noise"]


def test_gap_not_rising_within_noise_and_on_one_seed_decides_nothing():
    v = _decide("gap_not_rising", _ev([[-4.0, 1.0, -3.0], [0.0, 0.2, 0.1]]), series={"s": ("c0", "c1")})
    assert v.status == "inconclusive" and "within seed noise" in v.failed[0]
    one = _decide("gap_not_rising", _ev([[-1.0], [-2.0]]), series={"s": ("c0", "c1")})
    assert one.status == "inconclusive" and one.failed == ["trend: c0 -> c1: no 95% CI (one seed)"]


def test_balanced_yet_worst_and_gap_order_read_one_pair_alike():
    # The same MobileNet-V2 pair: h256 above h512 by means only, within seed noise. The order claim said
    # "inconclusive" and the balance claim "not reproduced" on this evidence; both now judge the order alike.
    ev = _ev([[-1.0, -2.0, 1.5], [-1.2, -1.0, -1.1]])
    ev.metrics["rows.moe0.routing_balance"] = {0: 0.99, 1: 0.98, 2: 0.99}
    order = _decide("gap_order", ev, comparisons=("c0", "c1"))
    worst = _decide("balanced_yet_worst", ev, comparison="c0", others=("c1",), balance=0.95)
    assert order.status == worst.status == "inconclusive"
    assert [f for f in worst.failed if f.startswith("order")] == order.failed


def _nan_at(ev, comparison, mean):
    """The evidence with one comparison's mean gap replaced (NaN in memory, None as results.json stores NaN)."""
    metrics = dict(ev.metrics)
    metrics[f"comparisons.{comparison}.gap"] = {**metrics[f"comparisons.{comparison}.gap"], "mean": mean}
    return Evidence(
        ev.manifest_id, ev.paper_table, ev.profile, metrics=metrics, comparison_rows=ev.comparison_rows, kind=ev.kind
    )


@pytest.mark.parametrize("mean", [float("nan"), None])
@pytest.mark.parametrize("at", ["c0", "c2"])
def test_a_gap_with_no_mean_makes_sign_follows_rho_inconclusive_wherever_it_sits(mean, at):
    # By rho c0 < c1 < c2 < c3: -, -, +, + clearly. A NaN mean read as "-" at the lowest rho passed the rule
    # (reproduced), and as "0" mid-sweep left it inconclusive: the verdict hung on where the NaN sat.
    ev = _nan_at(_ev(_tight(-2, -1, 1, 2)), at, mean)
    v = _decide("sign_follows_rho", ev, comparisons=("c0", "c1", "c2", "c3"))
    assert v.status == "inconclusive" and v.failed == [f"order: {at} has no mean gap"]


@pytest.mark.parametrize("rule", ["monotonic_in_rho", "gap_order", "sign_follows_rho"])
def test_one_comparison_orders_nothing(rule):
    # One comparison passed monotonic_in_rho and gap_order vacuously (no pair to be out of order).
    v = _decide(rule, _ev(_tight(1.0)), comparisons=("c0",))
    assert v.status == "inconclusive" and v.failed == ["order: needs at least 2 comparisons"]


def test_gap_largest_and_a_flat_series_of_one_dataset_order_nothing():
    assert _decide("gap_largest", _ev(_tight(1.0)), comparison="c0", others=()).status == "inconclusive"
    v = _decide("gap_not_rising", _ev(_tight(1.0, 2.0)), series={"a": ("c0",), "b": ("c1",)})
    assert v.status == "inconclusive" and v.failed == ["trend: needs a series of at least 2 comparisons"]


def test_monotonic_in_rho_with_a_nan_gap_is_inconclusive():
    v = _decide("monotonic_in_rho", _nan_at(_ev(_tight(-1, 0, 1)), "c1", float("nan")), comparisons=("c0", "c1", "c2"))
    assert v.status == "inconclusive" and v.failed == ["order: c1 has no mean gap"]
