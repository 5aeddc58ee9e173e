"""Findings stated in words (repro.claims.bands and the gap band of gap_matches_paper): each band decides."""

import math

import pytest

from repro.claims import Evidence, evaluate
from repro.claims.gaps import Band, judge_gap
from repro.claims.core import reported_gap
from repro.plan.manifest import Claim
from repro.spec.paper import PaperValue

from .helpers import gap, learned

NEGATIVE = PaperValue("r18_soft.gap", "4.5", sign="-")
NOT_POSITIVE = PaperValue("r18_per_sample_soft.gap", "4.5", sign="<=0")
SEVERE = Band(-100, -5, "severe: at least 5pp below dense")
APPROACHES = Band(-2, 0, "approaches: at most 2pp below dense")


def _decide(rule, metrics, rows=None, **params):
    ev = Evidence("t", "table4", "full", metrics=metrics, comparison_rows=rows or {}, kind="paper")
    return evaluate(Claim("c", "s", "4.5", rule, "empirical", params), ev)


def test_severe_degradation_needs_its_size_not_only_a_significant_sign():
    # A significant -0.3pp used to reproduce "severe degradation".
    small = judge_gap(gap([-0.3, -0.32, -0.28, -0.31, -0.29]), NEGATIVE, band=SEVERE)
    assert small.status == "not reproduced" and small.failed == [
        "band: -0.30pp is outside [-100, -5]pp (severe: at least 5pp below dense)"
    ]
    assert judge_gap(gap([-30, -31, -29, -32, -28]), NEGATIVE, band=SEVERE).status == "reproduced"
    # A mean just short of the band whose 95% CI reaches into it decides nothing.
    edge = judge_gap(gap([-1.0, -8.0, -4.0, -2.0, -7.5]), NEGATIVE, band=SEVERE)
    assert edge.status == "inconclusive" and edge.failed[0].endswith("its 95% CI reaches the band")


def test_approaches_but_does_not_surpass_is_a_band_below_zero():
    # "approaches but does not surpass": -0.2pp reproduces (it was inconclusive as a '-' needing p < .05) ...
    assert judge_gap(gap([-0.2, -0.1, -0.3, 0.1, -0.5]), NOT_POSITIVE, band=APPROACHES).status == "reproduced"
    # ... a significant -5pp does not approach (it used to reproduce) ...
    far = judge_gap(gap([-5.0, -5.2, -4.8, -5.1, -4.9]), NOT_POSITIVE, band=APPROACHES)
    assert far.status == "not reproduced" and far.failed[0].startswith("band: -5.00pp is outside [-2, +0]pp")
    # ... and a significant gain surpasses dense.
    assert judge_gap(gap([1.0, 1.1, 0.9, 1.2, 1.0]), NOT_POSITIVE, band=APPROACHES).status == "not reproduced"


def test_the_reported_d_is_checked_against_the_measured_d_z():
    # Tiny-ImageNet w=1.2: p < 1e-4, d = 9.52 over 5 seeds. A gap with d_z about 1.5 is significant at n = 10 but
    # its 95% CI (about 0.5 to 2.4) excludes 9.52.
    tiny = PaperValue("dw12.gap", "4.3", printed="p<10^-4, d=9.52", sign="+", p=1e-4, p_relation="<", d=9.52, n=5)
    loose = judge_gap(gap([1.0, 2.0, 0.5, 2.5, 1.5, 0.2, 1.8, 2.2, 0.8, 1.5]), tiny)
    assert loose.status == "not reproduced" and loose.failed[0].startswith(
        "effect size: reported d=9.52 is outside the measured d_z's 95% CI"
    )
    tight = judge_gap(gap([2.0, 2.3, 1.8, 2.1, 1.9]), tiny)  # d_z about 10.7: a CI that holds 9.52
    assert tight.status == "reproduced" and "vs reported d=9.52" in tight.evidence


def test_evidence_prints_gaps_in_pp_and_a_stated_sign_in_words():
    headline = PaperValue(
        "dw072.gap",
        "4.2",
        printed="+1.28 ± 1.26% (p=.011, d=1.01)",
        value=1.28,
        unit="%",
        sd=1.26,
        n=10,
        p=0.011,
        d=1.01,
    )
    assert reported_gap(headline) == "+1.28 ± 1.26pp (p=0.011, d=1.01)"
    assert reported_gap(PaperValue("r", "4.5", printed="p=0.004", sign="-", p=0.004, n=5)) == "negative (p=0.004)"
    out = judge_gap(gap([-0.5, -0.6, -0.4]), NEGATIVE)
    assert out.evidence.endswith("reported negative") and "%" not in out.evidence
    c100 = PaperValue("c100_soft.gap", "5", printed="-36%", value=-36, unit="%")
    assert "reported -36pp" in judge_gap(gap([-35, -37, -36]), c100).evidence


def test_near_random_is_the_learned_guards_margin():
    # Tiny-ImageNet: chance 0.5%; near-random below 0.5 + 0.05 x 99.5 = 5.475%.
    rows = {"tiny_soft": ("soft", "dense")}
    at_chance = {**learned("dense"), "rows.soft.accuracy": {0: 0.006, 1: 0.004, 2: 0.005}, "rows.soft.chance": 0.005}
    v = _decide("near_chance", at_chance, rows, row="soft", baseline="dense")
    assert v.status == "reproduced" and "below 5.47%" in v.evidence
    learned_well = {**at_chance, "rows.soft.accuracy": {0: 0.20, 1: 0.22, 2: 0.21}}
    assert _decide("near_chance", learned_well, rows, row="soft", baseline="dense").status == "not reproduced"
    noisy = {**at_chance, "rows.soft.accuracy": {0: 0.02, 1: 0.12, 2: 0.05}}  # above the margin, not significantly
    assert _decide("near_chance", noisy, rows, row="soft", baseline="dense").status == "inconclusive"


def test_in_bands_from_negligible_to_near_parity():
    params = dict(
        metrics=("rows.std.rho", "rows.dw.rho"), low=(0.0, 0.4), high=(0.01, 0.6), words=("negligible", "near-parity")
    )
    ok = evaluate(
        Claim("c", "s", "5.3", "in_bands", "analytic", params),
        Evidence("table6", "table6", "smoke", metrics={"rows.std.rho": 0.004, "rows.dw.rho": 0.47}),
    )
    assert ok.status == "reproduced"
    # The standard CIFAR head at 8.2%: above the dw one, but not negligible (the old rule tested only dw > std).
    no = evaluate(
        Claim("c", "s", "5.3", "in_bands", "analytic", params),
        Evidence("table6", "table6", "smoke", metrics={"rows.std.rho": 0.082, "rows.dw.rho": 0.47}),
    )
    assert no.status == "not reproduced"
    assert no.failed == ["band: rows.std.rho = 0.082 is outside 'negligible' [0, 0.01]"]


def test_row_beyond_well_below_the_training_peak():
    params = dict(row="low", row_metric="late_drop", bound=0.05, words="well below the training peak")
    ev = lambda xs: {**learned("low"), "rows.low.late_drop": dict(enumerate(xs))}  # noqa: E731
    assert _decide("row_beyond", ev([0.12, 0.15, 0.10, 0.14]), **params).status == "reproduced"
    small = _decide("row_beyond", ev([0.01, 0.012, 0.008, 0.011]), **params)  # a relative drop, not well below
    assert small.status == "not reproduced" and small.failed == ["band: significantly not > 5pp"]
    assert _decide("row_beyond", ev([0.01, 0.12, 0.03, 0.09]), **params).status == "inconclusive"


def test_recovering_the_majority_of_the_deficit_is_tested_per_seed():
    rows = {"ps": ("ps_row", "dense"), "soft": ("soft_row", "dense")}
    base = learned("ps_row", "dense", "soft_row")
    most = {
        **base,
        "comparisons.ps.gap": gap([-0.6, -0.7, -0.5, -0.8]),
        "comparisons.soft.gap": gap([-40, -42, -39, -41]),
    }
    v = _decide("recovers_share", most, rows, comparison="ps", deficit="soft", share=0.5)
    assert v.status == "reproduced" and v.measured["recovered"] == pytest.approx(1 - 0.65 / 40.5)
    little = {
        **base,
        "comparisons.ps.gap": gap([-30, -31, -29, -32]),
        "comparisons.soft.gap": gap([-40, -42, -39, -41]),
    }
    assert _decide("recovers_share", little, rows, comparison="ps", deficit="soft").status == "not reproduced"
    none = {**base, "comparisons.ps.gap": gap([0.1, 0.2]), "comparisons.soft.gap": gap([0.5, 0.4])}
    assert _decide("recovers_share", none, rows, comparison="ps", deficit="soft").status == "inconclusive"


def test_d_z_interval_inverts_the_noncentral_t():
    from scipy import stats

    from repro.claims.stats import d_z_interval

    lo, hi = d_z_interval(1.0, 10)
    t = math.sqrt(10)
    assert stats.nct.sf(t, 9, lo * math.sqrt(10)) == pytest.approx(0.025)
    assert stats.nct.sf(t, 9, hi * math.sqrt(10)) == pytest.approx(0.975)
    assert (round(lo, 2), round(hi, 2)) == (0.21, 1.75)  # Cumming and Finch (2001) style interval for d = 1, n = 10


def test_the_shipped_claims_decide_the_vague_words_with_the_bands_their_assumptions_give():
    from repro.plan.manifest import find_manifest
    from repro.spec.paper import paper_value

    def claims(table):
        return {c.id: c for c in find_manifest(table).claims}

    t4, t8, t9 = claims("table4"), claims("table8"), claims("table9")
    for severe in ("in_soft_moe_degrades", "in_expert_choice_degrades"):
        assert t4[severe].params["band"] == (-100.0, -5.0)
    # "approaches but does not surpass" (4.5) is Table 8's -0.66 pp on the same runs: decided there, shown in table4
    assert t8["per_sample_below_dense_imagenet"].params["band"] == (-2.0, 0.0)
    assert "table8:per_sample_below_dense_imagenet" in find_manifest("table4").shows
    assert paper_value("table8", "imagenet_per_sample_soft.gap").value == -0.66
    assert t4["in_per_sample_recovers_majority"].params == {
        "comparison": "r18_per_sample_soft",
        "deficit": "r18_soft",
        "share": 0.5,
        "may_collapse": ("r18_soft",),
    }
    assert t9["t9_soft_worsens_with_complexity"].params["comparisons"][0] == "imagenet_soft"  # "universally"
    assert t9["t9_tiny_soft_near_random"].rule == "near_chance"
    assert claims("temperature_ablation")["temp_linear_low_well_below_peak"].params["bound"] == 0.05
    assert claims("table6")["depthwise_raises_rho"].params["words"] == ("negligible", "near-parity")
    assert claims("table5")["bb_moe_layers_active_non_uniform"].params["layers"] == 8
    for table, assumption in (
        ("table4", "vague-word-bands"),
        ("table9", "flat-band"),
        ("table9", "near-random"),
        ("temperature_ablation", "well-below-band"),
        ("table6", "rho-bands"),
        ("table5", "layer-usage-bands"),
    ):
        assert assumption in {a.id for a in find_manifest(table).assumptions}


@pytest.mark.parametrize(
    "table, claim_id, comparison, rows",
    [
        ("table3", "tiny_std_gap_negative", "std", ("std_moe", "std_dense")),
        ("table9", "t9_tiny_expert_choice_negative", "tiny_expert_choice", ("tiny_expert_choice", "tiny_dense")),
    ],
)
def test_a_small_negative_gap_on_tiny_imagenet_is_held_to_its_size(table, claim_id, comparison, rows):
    # Section 4.3 calls the standard-backbone gaps of our sparse MoE and Expert Choice on Tiny-ImageNet small:
    # a significant -8pp reproduced them on its sign alone.
    from repro.plan.manifest import find_manifest

    shipped = {c.id: c for c in find_manifest(table).claims}[claim_id]

    def decide(diffs_pp):
        metrics = {f"comparisons.{comparison}.gap": gap(diffs_pp), **learned(*rows, chance=0.005)}
        ev = Evidence(table, table, "full", metrics=metrics, comparison_rows={comparison: rows}, kind="paper")
        return evaluate(shipped, ev)

    far = decide([-8.0, -8.2, -7.8, -8.1, -7.9])
    assert far.status == "not reproduced" and far.failed[0].startswith("band: -8.00pp is outside [-2, +0]pp")
    assert decide([-0.6, -0.5, -0.7, -0.4, -0.8]).status == "reproduced"
