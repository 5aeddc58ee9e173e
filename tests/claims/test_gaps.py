"""Gap verdicts (repro.claims.gaps) on made-up records: reproduced; failed on sign; failed on significance;
inconclusive."""

import pytest

from repro.claims import Evidence, Outcome, evaluate
from repro.claims.gaps import judge_gap, seeds_needed
from repro.plan.manifest import Claim
from repro.spec.paper import PaperValue

from .helpers import gap, learned

# The paper's CIFAR-10 w=0.72 headline: +1.28 +- 1.26 pp over 10 seeds, p=.011, d=1.01.
HEADLINE = PaperValue(
    "dw072.gap", "4.2", printed="+1.28 ± 1.26% (p=.011, d=1.01)", value=1.28, unit="%", sd=1.26, n=10, p=0.011, d=1.01
)


def test_reproduced_when_sign_significance_and_size_agree():
    out = judge_gap(gap([1.0, 2.5, 0.4, 1.9, 1.2, 0.8, 2.2, 1.5, 0.3, 1.1]), HEADLINE)
    assert isinstance(out, Outcome)
    assert out.status == "reproduced" and out.failed == [] and "10/10 seeds positive" in out.evidence


def test_failed_on_sign_with_enough_seeds():
    out = judge_gap(gap([-1.0, -2.5, -0.4, -1.9, -1.2, -0.8, -2.2, -1.5, -0.3, -1.1]), HEADLINE)
    assert out.status == "not reproduced" and out.failed[0].startswith("sign: measured negative, reported positive")


def test_an_underpowered_opposite_sign_is_inconclusive_and_says_so():
    out = judge_gap(gap([-0.5, 0.2, -0.9]), HEADLINE)  # 3 seeds < 10 needed, opposite sign, p > .05
    assert out.status == "inconclusive" and out.failed[0] == "sign: measured negative, reported positive"
    assert out.evidence.endswith("needs 10 seeds, 3 run); the opposite sign is not significant")


def test_failed_on_significance_with_enough_seeds():
    # positive on average but far too noisy: p > .05 with 12 seeds, above the 10 that 80% power needs
    out = judge_gap(gap([3, -2.6, 2.9, -2.5, 3.1, -2.7, 2.4, -2.2, 2.8, -2.9, 1.0, -0.5]), HEADLINE)
    assert seeds_needed(HEADLINE) == 10
    assert out.status == "not reproduced" and out.failed[0].startswith("significance")


def test_inconclusive_when_underpowered():
    out = judge_gap(gap([0.5, -0.2, 0.9]), HEADLINE)  # 3 seeds < 10 needed
    assert out.status == "inconclusive" and out.failed[0].startswith("significance")
    assert "needs 10 seeds, 3 run" in out.evidence
    assert "opposite sign" not in out.evidence  # the sign agrees; only significance is missing


def test_one_seed_is_inconclusive():
    out = judge_gap(gap([1.3]), HEADLINE)
    assert out.status == "inconclusive" and out.failed == ["seeds: need at least 2 paired seeds"]


def test_magnitude_outside_the_seed_variance_tolerance():
    out = judge_gap(gap([9.0, 9.5, 10.2, 9.7, 10.1, 9.9, 9.4, 10.3, 9.8, 9.6]), HEADLINE)
    assert out.status == "not reproduced" and out.failed[0].startswith("magnitude")
    assert out.tolerance is not None and f"magnitude tolerance ±{out.tolerance:.2f}pp" in out.evidence  # as data too


def test_all_seeds_must_share_the_sign_when_the_paper_says_all_did():
    all_pos = PaperValue("k2.gap", "4.6", printed="p=1.2x10^-4", sign="+", p=1.2e-4, n=5, positive_seeds=5)
    out = judge_gap(gap([1.2, 1.4, 1.1, 1.3, 1.5, 1.2, 1.3, -0.1, 1.6, 1.2]), all_pos)
    assert out.status == "not reproduced"
    assert out.failed == ["seeds: 9/10 seeds share the sign; the paper reports all 5"]


def test_sign_only_claims_and_the_rule_end_to_end():
    claim = Claim(
        "c", "s", "4.2", "gap_matches_paper", "empirical", {"comparison": "std_h2048", "paper": "std_h2048.gap"}
    )

    def verdict(diffs):
        ev = Evidence(
            "table1",
            "table1",
            "smoke",
            metrics={"comparisons.std_h2048.gap": gap(diffs), **learned("m", "d")},
            comparison_rows={"std_h2048": ("m", "d")},
        )
        return evaluate(claim, ev)

    assert verdict([0.4, 0.6, 0.5, 0.45]).status == "reproduced"  # the stated direction, significantly
    v = verdict([0.4, 0.9])  # the direction, but not significant with two seeds
    assert v.status == "inconclusive" and v.failed[0].startswith("significance")
    assert verdict([-0.4, -0.6, -0.5, -0.45]).status == "not reproduced"  # significantly the other way
    v = verdict([0.0, 0.0])
    assert v.status == "inconclusive" and "no information" in v.evidence


def test_a_finding_the_paper_itself_found_not_significant_needs_only_its_direction():
    tiny_w2 = PaperValue("dw2.gap", "4.3", printed="p=0.10", sign="+", p=0.10, n=5)
    assert judge_gap(gap([0.4, 0.9]), tiny_w2).status == "reproduced"
    assert judge_gap(gap([0.4, -0.3]), tiny_w2).status == "reproduced"  # mean +0.05
    assert judge_gap(gap([-0.4, 0.3]), tiny_w2).status in ("inconclusive", "not reproduced")


@pytest.mark.parametrize(
    "gaps,status", [([-2, -1, 1, 2, 3, 4], "reproduced"), ([-2, 3, -1, 2, 1, 4], "not reproduced")]
)
def test_monotonic_in_rho(gaps, status):
    comps = [f"c{i}" for i in range(6)]
    metrics = {}
    for i, (c, g) in enumerate(zip(comps, gaps)):
        metrics[f"comparisons.{c}.gap"] = gap([g - 0.05, g + 0.05, g])
        metrics[f"comparisons.{c}.rho"] = 0.1 * (i + 1)
    rows = {c: (f"moe{i}", "dense") for i, c in enumerate(comps)}
    ev = Evidence(
        "t",
        "table1",
        "smoke",
        metrics={**metrics, **learned("dense", *(r for r, _ in rows.values()))},
        comparison_rows=rows,
    )
    claim = Claim("m", "s", "4.2", "monotonic_in_rho", "empirical", {"comparisons": tuple(comps)})
    assert evaluate(claim, ev).status == status
    sign = Claim("s", "s", "4.2", "sign_follows_rho", "empirical", {"comparisons": tuple(comps)})
    assert evaluate(sign, ev).status == ("reproduced" if status == "reproduced" else "not reproduced")


NOT_POSITIVE = PaperValue("cifar10_sparse_std.gap", "4.2, 5", sign="<=0")


def test_a_gap_the_text_says_is_not_positive():
    # "only our depthwise co-optimized configuration achieves a positive gap": flat or negative reproduces,
    # with no significance needed; a significant gain refutes it; an unpowered gain decides nothing.
    assert judge_gap(gap([-0.2, 0.1, -0.3]), NOT_POSITIVE).status == "reproduced"
    assert judge_gap(gap([-0.2, 0.1, -0.3]), NOT_POSITIVE).p_value is None  # nothing significant is claimed
    out = judge_gap(gap([0.8, 0.9, 1.0, 0.85, 0.95]), NOT_POSITIVE)
    assert out.status == "not reproduced" and out.failed == ["sign: measured positive, reported not positive"]
    assert judge_gap(gap([0.8, -0.2, 0.1]), NOT_POSITIVE).status == "inconclusive"


def _gap_difference(k2, k1, dense):
    from repro.claims.stats import paired_gap

    accs = lambda xs: {s: x / 100 for s, x in enumerate(xs)}  # noqa: E731
    metrics = {
        "comparisons.k2.gap": paired_gap(accs(k2), accs(dense)).to_dict(),
        "comparisons.k1.gap": paired_gap(accs(k1), accs(dense)).to_dict(),
        **learned("k2_moe", "k1_moe", "dense"),
    }
    ev = Evidence(
        "table5",
        "table5",
        "smoke",
        metrics=metrics,
        kind="paper",
        comparison_rows={"k2": ("k2_moe", "dense"), "k1": ("k1_moe", "dense")},
    )
    c = Claim(
        "r",
        "s",
        "4.6",
        "gap_difference",
        "empirical",
        {"comparison": "k2", "minus": "k1", "paper": "k2_vs_k1.reversal"},
    )
    return evaluate(c, ev)


def test_gap_difference_pairs_the_two_gaps_by_seed_so_a_shared_baseline_cancels():
    # The dense baseline swings by 4 points between seeds; k2 - k1 is 3.25 +- 0.1 on every seed. As two
    # independent gaps the difference would carry the baseline's spread twice; paired, it is exact.
    dense = [70.0, 74.0, 71.0, 75.0, 72.0]
    k2 = [d + 1.2 + e for d, e in zip(dense, (0.0, 0.1, -0.1, 0.05, 0.0))]
    k1 = [x - 3.25 + e for x, e in zip(k2, (0.05, -0.05, 0.0, 0.1, -0.1))]
    v = _gap_difference(k2, k1, dense)
    assert v.status == "reproduced", v.evidence
    assert v.p_value is not None and v.p_value < 1e-5
    assert v.measured["difference"]["mean"] == pytest.approx(0.0325, abs=1e-3)


def test_gap_difference_at_two_seeds_is_a_test_with_a_power_gate_not_12_standard_errors():
    # Two seeds: 3.0 and 3.6 points. p = 0.057 with one degree of freedom: not significant, and the text gives
    # no effect size for the reversal, so the verdict is inconclusive, not reproduced within t(0.975, 1) = 12.7 SE.
    dense = [70.0, 72.0]
    k2 = [71.2, 73.1]
    k1 = [k2[0] - 3.0, k2[1] - 3.6]
    v = _gap_difference(k2, k1, dense)
    assert v.status == "inconclusive" and v.failed[0].startswith("significance"), v.evidence
    assert "the text gives no effect size" in v.evidence
    v = _gap_difference([71.2, 73.1], [73.2, 75.0], dense)  # k1 above k2 on both seeds: the sign is wrong
    assert v.status in ("inconclusive", "not reproduced") and v.failed[0].startswith("sign")


def test_accuracy_tolerance_is_the_spread_of_two_means_not_the_printed_digits():
    # 88.41% over the paper's 10 seeds; ours 10 seeds at s.d. 0.235: a difference of two means has
    # 95% half-width t(18) 0.235 sqrt(2/10) + 0.005 = 0.23, not the paper's printed precision 0.005 nor
    # our mean's own 0.17 (the paper's mean is as uncertain as ours).
    from repro.claims.gaps import AccuracyMatchesPaper, accuracy_matches_paper

    xs = [88.41 - 0.20 + 0.3 * z for z in (-1.4, -0.9, -0.5, -0.2, 0.0, 0.1, 0.3, 0.6, 0.9, 1.1)]
    sd = (sum((x - sum(xs) / 10) ** 2 for x in xs) / 9) ** 0.5
    ev = Evidence(
        "headline_cifar10",
        "headline_cifar10",
        "full",
        paper_seeds=10,
        metrics={"rows.dw2_moe.accuracy": {s: x / 100 for s, x in enumerate(xs)}},
    )
    out = accuracy_matches_paper(AccuracyMatchesPaper("dw2_moe", "dw2_moe.accuracy"), ev)
    from scipy import stats

    tol = stats.t.ppf(0.975, 18) * sd * (2 / 10) ** 0.5 + 0.005
    assert f"±{tol:.2f}pp" in out.evidence
    assert out.status == "reproduced"  # 0.20 below 88.41: inside 0.23, outside the one-sample 0.17
    assert stats.t.ppf(0.975, 9) * sd / 10**0.5 + 0.005 < abs(sum(xs) / 10 - 88.41)


def test_row_above_says_why_it_has_no_p_instead_of_printing_nan():
    """At smoke, table3's tiny_dw_moe_beats_standard_dense read '+0.00pp (Welch p=nan)'."""
    above = Claim("r", "s", "4.3", "row_above", "empirical", {"row": "m", "baseline": "d"})

    def evidence(m, d):
        metrics = {**learned("d", accuracy=d), **learned("m", accuracy=m)}
        return evaluate(above, Evidence("t", "table2", "full", metrics=metrics)).evidence

    same = evidence((0.5, 0.5), (0.5, 0.5))
    assert (
        "nan" not in same and "(Welch p undefined: neither row varies across seeds and their means are equal)" in same
    )
    one = evidence((0.6,), (0.5, 0.55))
    assert "nan" not in one and "(Welch p undefined: one seed on a side)" in one
    assert "(Welch p=" in evidence((0.9, 0.91, 0.92), (0.80, 0.82, 0.78))
