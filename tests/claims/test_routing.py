"""Section 5.3's routing findings (repro.claims.routing) on hand-made per-seed routing, and the metrics from records."""

import math

import pytest

from repro.claims import Evidence, evaluate
from repro.plan.manifest import Claim, find_manifest
from repro.measure.accuracy import routing_at_test_time as routing_of

from .helpers import gap, learned


def _ev(metrics, rows):
    return Evidence(
        "table4",
        "table4",
        "full",
        metrics={**metrics, **learned(*{r for pair in rows.values() for r in pair})},
        comparison_rows=rows,
    )


def _claim(rule, **params):
    return Claim("c", "s", "5.3", rule, "empirical", params)


def test_test_time_routing_from_a_record_golden():
    # 2 classes x 4 experts: expert 0 takes 6 of 8 test images
    top, balance = routing_of({"test_usage_by_class": [[4, 1, 0, 0], [2, 0, 1, 0]]})
    assert top == pytest.approx(0.75)
    p = [6 / 8, 1 / 8, 1 / 8]
    assert balance == pytest.approx(-sum(x * math.log(x) for x in p) / math.log(4))
    assert routing_of({"test_usage_by_class": [[2, 2], [2, 2]]}) == (0.5, pytest.approx(1.0))
    assert routing_of({}) is None and routing_of({"test_usage_by_class": [[0, 0]]}) is None


def test_routing_concentrated_needs_every_seed_above_the_share():
    rows = {"r18_h512": ("moe", "dense")}
    c = _claim("routing_concentrated", row="moe", share=0.5)
    assert evaluate(c, _ev({"rows.moe.routing_top_share": {0: 0.7, 1: 0.8}}, rows)).status == "reproduced"
    assert evaluate(c, _ev({"rows.moe.routing_top_share": {0: 0.2, 1: 0.3}}, rows)).status == "not reproduced"
    mixed = evaluate(c, _ev({"rows.moe.routing_top_share": {0: 0.7, 1: 0.3}}, rows))
    assert mixed.status == "inconclusive" and mixed.failed == ["share: 1 of 2 seeds above 0.5"]


def _tracks(balance_a, gaps_a, balance_b, gaps_b):
    rows = {"a": ("moe_a", "dense"), "b": ("moe_b", "dense")}
    metrics = {
        "comparisons.a.gap": gap(gaps_a),
        "comparisons.b.gap": gap(gaps_b),
        "rows.moe_a.routing_balance": dict(enumerate(balance_a)),
        "rows.moe_b.routing_balance": dict(enumerate(balance_b)),
    }
    c = _claim("gap_tracks_routing", comparisons=("a", "b"), row_metric="routing_balance", direction="negative")
    return evaluate(c, _ev(metrics, rows))


def test_lower_entropy_less_negative_gap_is_a_within_comparison_correlation():
    # Within each expert size, the seeds with lower entropy have the less negative gaps.
    v = _tracks(
        [0.6, 0.7, 0.8, 0.9, 0.95],
        [-0.2, -0.5, -0.9, -1.3, -1.6],
        [0.97, 0.98, 0.99, 0.995, 0.999],
        [-2.0, -2.3, -2.6, -3.0, -3.3],
    )
    assert v.status == "reproduced" and v.measured["r"] < -0.7 and v.p_value < 0.05
    # The sizes alone (h=256 balanced and worse) would make a pooled correlation negative; within each it is positive.
    v = _tracks(
        [0.6, 0.7, 0.8, 0.9, 0.95],
        [-1.6, -1.3, -0.9, -0.5, -0.2],
        [0.97, 0.98, 0.99, 0.995, 0.999],
        [-3.3, -3.0, -2.6, -2.3, -2.0],
    )
    assert v.status == "not reproduced" and v.measured["r"] > 0.7
    v = _tracks([0.6, 0.7], [-0.2, -0.5], [0.97, 0.98], [-2.0, -2.3])
    assert v.status == "inconclusive"  # two seeds a size: no degrees of freedom left


def test_the_smallest_expert_balanced_yet_worst():
    rows = {"h256": ("moe256", "dense"), "h512": ("moe512", "dense")}
    c = _claim("balanced_yet_worst", comparison="h256", others=("h512",), balance=0.95)
    base = {"comparisons.h256.gap": gap([-3.0, -3.2]), "comparisons.h512.gap": gap([-1.0, -1.2])}
    assert evaluate(c, _ev({**base, "rows.moe256.routing_balance": {0: 0.99, 1: 0.98}}, rows)).status == "reproduced"
    v = evaluate(c, _ev({**base, "rows.moe256.routing_balance": {0: 0.7, 1: 0.8}}, rows))
    assert v.status == "not reproduced" and v.failed == ["balance: 0.750 is below 0.95"]


def test_table4_and_table9_decide_the_findings_the_checklist_lacked():
    claims = {c.id: c for c in find_manifest("table4").claims}
    assert claims["in_r18_test_routing_concentrates"].rule == "routing_concentrated"
    assert claims["in_mnv2_lower_entropy_less_negative"].params["comparisons"] == ("mnv2_h512", "mnv2_h256")
    assert claims["in_mnv2_smallest_expert_balanced_worst"].params["comparison"] == "mnv2_h256"
    t9 = {c.id: c for c in find_manifest("table9").claims}
    assert t9["t9_cifar10_sparse_std_not_positive"].params == {
        "comparison": "cifar10_sparse_std",
        "paper": "cifar10_sparse_std.gap",
    }


def test_training_routing_from_a_record_golden():
    from repro.measure.accuracy import routing_in_training

    # a head's last epoch: 4 experts used 25/25/25/25; two backbone layers, one with an expert at 2 of 100
    record = {
        "expert_usage": [25, 25, 25, 25],
        "layers": {
            "layer3.0.conv1": {"expert_usage": [50, 30, 18, 2]},
            "layer3.0.conv2": {"expert_usage": [25, 25, 25, 25]},
        },
    }
    out = routing_in_training(record)
    low = -sum(x * math.log(x) for x in (0.5, 0.3, 0.18, 0.02)) / math.log(4)
    assert out == pytest.approx(
        {
            "train_routing_balance": 1.0,
            "moe_layers": 2,
            "layer_min_share": 0.02,
            "layer_balance_min": low,
            "layer_balance_max": 1.0,
        }
    )
    assert routing_in_training({}) == {}


def test_exactly_uniform_and_majority_on_one_expert_cannot_both_hold_on_one_evidence():
    # Section 4.6 says the head-only k=1 model converged to exactly uniform routing; Section 5.3 that ResNet-18's
    # head-only MoE sends the majority of test images to one expert. Read on the same test-time routing, a share
    # above one half caps the balance at 0.80 with 8 experts, so at most one of the two claims reproduces.
    rows = {"r18_h512": ("moe", "dense")}
    uniform = _claim("routing_uniform", row="moe", balance=0.99)
    majority = _claim("routing_concentrated", row="moe", share=0.5)
    for top in (0.13, 0.3, 0.51, 0.9):
        rest = (1 - top) / 7
        balance = -(top * math.log(top) + 7 * rest * math.log(rest)) / math.log(8)
        ev = _ev(
            {"rows.moe.routing_top_share": {0: top, 1: top}, "rows.moe.routing_balance": {0: balance, 1: balance}}, rows
        )
        both = [evaluate(c, ev).status for c in (uniform, majority)]
        assert both.count("reproduced") <= 1, (top, both)
    at_one_eighth = _ev(
        {"rows.moe.routing_balance": {0: 0.999, 1: 0.995}, "rows.moe.train_routing_balance": {0: 1.0}}, rows
    )
    v = evaluate(uniform, at_one_eighth)
    assert v.status == "reproduced" and "training balance 1.000" in v.evidence


def test_every_backbone_layer_active_balanced_and_not_uniform():
    rows = {"k2": ("moe", "dense")}
    c = _claim("layers_active_non_uniform", row="moe", layers=8, min_share=0.01, balanced=0.9, uniform=0.99)

    def ev(count=8, share=0.05, low=0.93, high=0.98):
        per_seed = lambda x: {0: x, 1: x}  # noqa: E731
        return _ev(
            {
                "rows.moe.moe_layers": per_seed(count),
                "rows.moe.layer_min_share": per_seed(share),
                "rows.moe.layer_balance_min": per_seed(low),
                "rows.moe.layer_balance_max": per_seed(high),
            },
            rows,
        )

    assert evaluate(c, ev()).status == "reproduced"
    assert evaluate(c, ev(share=0.0)).status == "not reproduced"  # an expert never used: not every one is active
    assert evaluate(c, ev(high=0.995)).status == "not reproduced"  # a layer routes uniformly
    assert evaluate(c, ev(low=0.7)).status == "not reproduced"  # a layer not balanced
    assert evaluate(c, ev(count=4)).status == "not reproduced"  # not the eight layers the text counts
