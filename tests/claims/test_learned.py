"""The learned-anything guard (repro.claims.learned) on hand-computed cases, and its effect on verdicts."""

import pytest

from repro.claims import Evidence, evaluate
from repro.claims.learned import MIN_LEARNED, learning
from repro.plan.manifest import Claim, find_manifest

from .helpers import gap, learned


def _ev(metrics, **kw):
    return Evidence("t", "table1", "full", metrics=metrics, **kw)


def test_margin_scales_with_the_room_above_chance():
    assert MIN_LEARNED == 0.05
    cifar10 = learning(_ev({"rows.a.accuracy": {0: 0.5}, "rows.a.chance": 0.10}), "a")
    cifar100 = learning(_ev({"rows.a.accuracy": {0: 0.5}, "rows.a.chance": 0.01}), "a")
    assert cifar10.needed == pytest.approx(0.145) and cifar100.needed == pytest.approx(0.0595)


def test_one_sided_t_against_chance_golden():
    # mean 0.3, sd 0.1, n 3: t = 0.2 / (0.1 / sqrt 3) = 3.4641; df 2: p = (1 - t / sqrt(t^2 + 2)) / 2 = 0.037090
    lr = learning(_ev({"rows.a.accuracy": {0: 0.2, 1: 0.3, 2: 0.4}, "rows.a.chance": 0.10}), "a")
    assert lr.p == pytest.approx(0.037090, abs=1e-6) and lr.learned
    # two seeds, mean 0.26 sd 0.198: t = 1.1429, df 1: p = 1/2 - atan(t)/pi = 0.2288; above the margin, not significant
    noisy = learning(_ev({"rows.a.accuracy": {0: 0.12, 1: 0.40}, "rows.a.chance": 0.10}), "a")
    assert noisy.p == pytest.approx(0.2288, abs=1e-4) and not noisy.learned


def test_two_seeds_half_a_point_above_chance_do_not_pass():
    lr = learning(_ev({"rows.a.accuracy": {0: 0.105, 1: 0.106}, "rows.a.chance": 0.10}), "a")
    assert lr.p == pytest.approx(0.0289, abs=1e-4)  # t = 11, df 1: the t-test alone would pass
    assert not lr.learned  # 10.55% < 14.5%
    assert lr.describe().startswith("a did not learn (10.55% vs chance 10.00%; needs at least 14.50%")


def test_one_seed_is_judged_by_the_margin_alone():
    assert learning(_ev({"rows.a.accuracy": {0: 0.15}, "rows.a.chance": 0.10}), "a").learned
    assert not learning(_ev({"rows.a.accuracy": {0: 0.14}, "rows.a.chance": 0.10}), "a").learned


GAP_CLAIM = Claim(
    "c", "s", "4.2", "gap_matches_paper", "empirical", {"comparison": "std_h2048", "paper": "std_h2048.gap"}
)


def test_a_chance_level_baseline_gives_inconclusive():
    at_chance = {"rows.dense.accuracy": {0: 0.101, 1: 0.099, 2: 0.102, 3: 0.098}, "rows.dense.chance": 0.10}
    metrics = {"comparisons.std_h2048.gap": gap([0.4, 0.6, 0.5, 0.45]), **learned("moe"), **at_chance}
    v = evaluate(GAP_CLAIM, _ev(metrics, comparison_rows={"std_h2048": ("moe", "dense")}))
    assert v.status == "inconclusive"
    assert v.failed == [
        "learned: dense did not learn (10.00% vs chance 10.00%; needs at least 14.50% and p < 0.05, "
        "one-sided t over 4 seeds: p=0.5)"
    ]
    assert v.evidence.startswith("gap +0.49 ± 0.09pp") and v.p_value is None  # measured evidence still shown
    trained = {**metrics, **learned("dense")}
    assert evaluate(GAP_CLAIM, _ev(trained, comparison_rows={"std_h2048": ("moe", "dense")})).status == "reproduced"


def test_a_chance_level_treatment_gives_inconclusive_too():
    metrics = {
        "comparisons.std_h2048.gap": gap([0.4, 0.6, 0.5, 0.45]),
        **learned("dense"),
        "rows.moe.accuracy": {0: 0.1, 1: 0.1},
        "rows.moe.chance": 0.10,
    }
    v = evaluate(GAP_CLAIM, _ev(metrics, comparison_rows={"std_h2048": ("moe", "dense")}))
    assert v.status == "inconclusive" and v.failed[0].startswith("learned: moe did not learn (10.00% vs chance 10.00%")


def test_without_chance_or_rows_the_guard_cannot_run():
    metrics = {"comparisons.std_h2048.gap": gap([0.4, 0.6, 0.5, 0.45]), **learned("dense", "moe")}
    del metrics["rows.moe.chance"]
    v = evaluate(GAP_CLAIM, _ev(metrics, comparison_rows={"std_h2048": ("moe", "dense")}))
    assert v.status == "not run" and v.note == "cannot check that the models learned: rows.moe.chance was not measured"
    assert evaluate(GAP_CLAIM, _ev(metrics)).evidence.startswith("the rows of comparison 'std_h2048' are not in")


def _collapse_evidence(manifest, soft, dense, chance=0.01):
    rows = {c.id: (c.row, c.baseline) for c in manifest.comparisons}
    metrics = {
        "rows.c100_soft.accuracy": dict(enumerate(soft)),
        "rows.c100_soft.chance": chance,
        "rows.c100_dense.accuracy": dict(enumerate(dense)),
        "rows.c100_dense.chance": chance,
        "comparisons.c100_soft.gap": gap([100 * (s - d) for s, d in zip(soft, dense)]),
    }
    return Evidence("table8", "table8", "full", metrics=metrics, comparison_rows=rows)


def test_soft_moe_collapse_at_chance_with_a_learned_baseline_is_decided():
    table8 = find_manifest("table8")
    claim = next(c for c in table8.claims if c.id == "soft_batch_axis_collapses_c100")
    assert claim.params["may_collapse"] == ("c100_soft",)
    soft = [0.010, 0.011, 0.009, 0.010, 0.012, 0.010, 0.009, 0.011, 0.010, 0.010]  # at chance: the finding
    dense = [0.37, 0.372, 0.368, 0.371, 0.369, 0.37, 0.373, 0.367, 0.37, 0.371]  # -36 pp: the paper's size
    ev = _collapse_evidence(table8, [0.80 + s for s in soft], dense)  # sanity: the gap from a learned Soft MoE
    v = evaluate(claim, _collapse_evidence(table8, soft, dense))
    assert v.status == "reproduced" and v.failed == []
    assert evaluate(claim, ev).status == "not reproduced"  # sign: +44 pp is not a collapse
    unguarded = Claim(
        claim.id,
        claim.statement,
        claim.section,
        claim.rule,
        claim.scope,
        {k: v for k, v in claim.params.items() if k != "may_collapse"},
    )
    assert evaluate(unguarded, _collapse_evidence(table8, soft, dense)).status == "inconclusive"


def test_soft_moe_collapse_still_needs_a_learned_baseline():
    table8 = find_manifest("table8")
    claim = next(c for c in table8.claims if c.id == "soft_batch_axis_collapses_c100")
    soft, dense = [0.010, 0.011, 0.009], [0.011, 0.010, 0.012]
    v = evaluate(claim, _collapse_evidence(table8, soft, dense))
    assert v.status == "inconclusive"
    assert v.failed[0].startswith("learned: c100_dense did not learn (1.10% vs chance 1.00%")
