"""repro.claims.stats: hand-computed golden values, scipy equivalences, the paper's own numbers,
and power counts checked against G*Power, numerical integration and simulation."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import integrate, stats

from repro.claims.stats import from_summary, paired_gap, power_at, seeds_for_power, summarize, welch


# ---------------------------------------------------------------------------
# summarize


def test_summarize_golden():
    # values 1, 2, 4: mean 7/3; deviations -4/3, -1/3, 5/3; squares sum 42/9;
    # var = (42/9) / 2 = 7/3; sem = sqrt(7/3) / sqrt(3) = sqrt(7) / 3.
    s = summarize([1.0, 2.0, 4.0])
    assert s.n == 3
    assert s.mean == pytest.approx(7 / 3, abs=1e-12)
    assert s.sd == pytest.approx(math.sqrt(7 / 3), abs=1e-12)
    assert s.sem == pytest.approx(math.sqrt(7) / 3, abs=1e-12)
    assert s.text(2) == "2.33 ± 1.53 (n=3)"


def test_summarize_single_value_has_nan_spread():
    s = summarize([88.41])
    assert s.n == 1 and s.mean == 88.41
    assert math.isnan(s.sd) and math.isnan(s.sem)
    assert s.to_dict() == {"n": 1, "mean": 88.41, "sd": None, "sem": None}
    assert "nan" in s.text()


@pytest.mark.parametrize(
    "values, message",
    [
        ([1.0, float("nan"), 2.0], "value 1 of 3 is NaN"),
        ([1.0, float("inf")], "value 1 of 2 is infinite"),
        ([], "no values"),
    ],
)
def test_summarize_rejects_bad_input(values, message):
    with pytest.raises(ValueError, match=message):
        summarize(values)


# ---------------------------------------------------------------------------
# paired_gap


def test_paired_gap_three_seeds_by_hand():
    moe = {0: 71.0, 1: 72.5, 2: 70.0, 7: 69.0}
    dense = {0: 70.0, 1: 70.5, 2: 70.0, 5: 68.0}
    g = paired_gap(moe, dense)
    # Seeds 0, 1, 2 pair; 7 (MoE only) and 5 (dense only) drop.
    # differences 1.0, 2.0, 0.0 -> mean 1.0; deviations 0, 1, -1 -> var 2/2 = 1, sd 1;
    # sem = 1/sqrt(3); t = 1 / (1/sqrt(3)) = sqrt(3), df 2.
    # With df = 2 the t tail is closed-form, P(T > t) = (1 - t / sqrt(t^2 + 2)) / 2,
    # so p = 1 - sqrt(3)/sqrt(5) = 0.225403...; d_z = 1.0 / 1.0 = 1.
    # t_{0.975, 2} = 0.95 * sqrt(2 / (4 * 0.975 * 0.025)) = 4.302653 (df = 2 closed form),
    # so the CI is 1 ± 4.302653 / sqrt(3) = 1 ± 2.484138.
    assert g.differences == {0: 1.0, 1: 2.0, 2: 0.0}
    assert (g.n, g.df) == (3, 2)
    assert g.mean == pytest.approx(1.0, abs=1e-12)
    assert g.sd == pytest.approx(1.0, abs=1e-12)
    assert g.sem == pytest.approx(1 / math.sqrt(3), abs=1e-12)
    assert g.t == pytest.approx(math.sqrt(3), abs=1e-12)
    assert g.p == pytest.approx(1 - math.sqrt(3 / 5), abs=1e-12)
    assert g.d == pytest.approx(1.0, abs=1e-12)
    t_crit = 0.95 * math.sqrt(2 / (4 * 0.975 * 0.025))
    assert g.ci95[0] == pytest.approx(1 - t_crit / math.sqrt(3), abs=1e-9)
    assert g.ci95[1] == pytest.approx(1 + t_crit / math.sqrt(3), abs=1e-9)
    assert g.positive == 2  # seed 2's tie is not positive
    assert g.only_treatment == (7,) and g.only_baseline == (5,)
    assert "dropped unpaired seeds" in g.note


def test_paired_gap_matches_scipy_ttest_rel():
    rng = np.random.default_rng(0)
    dense = 70 + rng.normal(0, 0.5, size=10)
    moe = dense + rng.normal(0.3, 0.4, size=10)
    g = paired_gap(dict(enumerate(moe)), dict(enumerate(dense)))
    ref = stats.ttest_rel(moe, dense)
    assert g.t == pytest.approx(ref.statistic, rel=1e-12)
    assert g.p == pytest.approx(ref.pvalue, rel=1e-10)
    assert g.p == pytest.approx(stats.ttest_1samp(moe - dense, 0.0).pvalue, rel=1e-10)
    ci = ref.confidence_interval(0.95)
    assert g.ci95 == pytest.approx((ci.low, ci.high), rel=1e-10)
    diff = moe - dense
    assert g.d == pytest.approx(diff.mean() / diff.std(ddof=1), rel=1e-12)
    assert g.positive == int((diff > 0).sum())


def test_paired_gap_pairs_by_seed_not_by_order():
    # Same runs listed in a different order, plus unmatched seeds: identical statistics.
    moe = {3: 80.0, 1: 81.0, 2: 79.5, 9: 10.0}
    dense = {1: 80.5, 2: 79.0, 3: 78.0, 4: 99.0}
    g = paired_gap(moe, dense)
    assert g.differences == {1: 0.5, 2: 0.5, 3: 2.0}
    assert g.only_treatment == (9,) and g.only_baseline == (4,)
    assert g.mean == pytest.approx(1.0)


def test_paired_gap_one_seed_is_nan_not_a_crash():
    g = paired_gap({0: 71.0, 1: 70.0}, {0: 70.0})
    assert g.n == 1 and g.mean == 1.0 and g.positive == 1
    assert all(math.isnan(x) for x in (g.sd, g.sem, g.t, g.p, g.d, *g.ci95))
    assert g.to_dict()["p"] is None


def test_paired_gap_zero_variance():
    g = paired_gap({0: 71.0, 1: 72.0, 2: 73.0}, {0: 70.0, 1: 71.0, 2: 72.0})  # every gap exactly 1
    assert g.sd == 0.0 and g.p == 0.0
    assert g.t == math.inf and g.d == math.inf
    assert g.ci95 == (1.0, 1.0)
    assert "zero variance" in g.note
    tied = paired_gap({0: 70.0, 1: 71.0}, {0: 70.0, 1: 71.0})  # 0/0
    assert tied.mean == 0.0 and math.isnan(tied.p) and math.isnan(tied.d)
    negative = paired_gap({0: 69.0, 1: 70.0}, {0: 70.0, 1: 71.0})
    assert negative.t == -math.inf and negative.p == 0.0


def test_paired_gap_rejects_nan_and_disjoint_seeds():
    with pytest.raises(ValueError, match="baseline accuracy of seed 1 is nan"):
        paired_gap({0: 70.0, 1: 71.0}, {0: 70.0, 1: float("nan")})
    with pytest.raises(ValueError, match="no seed in both"):
        paired_gap({0: 70.0}, {1: 70.0})


def test_gap_to_dict_is_strict_json():
    g = paired_gap({0: 71.0, 1: 72.0}, {0: 70.0, 1: 71.0})  # zero variance: inf t and d
    record = g.to_dict()
    text = json.dumps(record, allow_nan=False)
    assert json.loads(text) == record
    assert record["t"] is None and record["p"] == 0.0
    assert record["differences"] == {"0": 1.0, "1": 1.0}
    assert record["ci95"] == [1.0, 1.0]


# ---------------------------------------------------------------------------
# from_summary: the paper's own summary numbers (Section 4.2)


# ---------------------------------------------------------------------------
# welch (two folders' seeds of one row: repro compare)


def test_welch_golden():
    # a = 1, 2, 3: mean 2, var 1, se^2 1/3; b = 4, 5, 6, 7: mean 5.5, var 5/3, se^2 5/12.
    # t = 3.5 / sqrt(3/4); df = (3/4)^2 / ((1/3)^2 / 2 + (5/12)^2 / 3) = 0.5625 / (1/18 + 25/432).
    w = welch([1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0])
    assert (w.n_a, w.n_b, w.mean_a, w.mean_b, w.difference) == (3, 4, 2.0, 5.5, 3.5)
    assert w.t == pytest.approx(3.5 / math.sqrt(0.75), abs=1e-12)
    assert w.df == pytest.approx(0.5625 / (1 / 18 + 25 / 432), abs=1e-12)
    assert w.p == pytest.approx(2 * stats.t.sf(w.t, w.df), abs=1e-14)


@pytest.mark.parametrize(
    "a,b",
    [
        ([0.5, 0.6], [0.55, 0.7]),
        ([0.1, 0.1], [0.2, 0.2]),
        ([0.1, 0.1], [0.1, 0.1]),
        ([0.3, 0.3, 0.3], [0.2, 0.4]),
        ([0.7], [0.1, 0.2]),
        (list(np.random.default_rng(3).normal(0.6, 0.02, 10)), [0.61, 0.58, 0.62]),
    ],
)
def test_welch_p_is_scipy_s(a, b):
    """The same p as scipy.stats.ttest_ind(equal_var=False), bit for bit, degenerate cases included (NaN for one
    value a side and for no variance and no difference, 0 for no variance and a difference)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        reference = stats.ttest_ind(b, a, equal_var=False).pvalue
    p = welch(a, b).p
    assert (math.isnan(p) and math.isnan(reference)) or p == reference


def test_welch_rejects_nan():
    with pytest.raises(ValueError, match="group b: value 1 of 2 is NaN"):
        welch([0.1, 0.2], [0.1, float("nan")])


def test_from_summary_equals_paired_gap_on_data_with_that_summary():
    rng = np.random.default_rng(1)
    z = rng.normal(size=10)
    diffs = 1.28 + 1.26 * (z - z.mean()) / z.std(ddof=1)  # mean 1.28, sd 1.26 exactly
    g = paired_gap(dict(enumerate(diffs)), dict.fromkeys(range(10), 0.0))
    s = from_summary(1.28, 1.26, 10)
    assert (s.t, s.p, s.d) == pytest.approx((g.t, g.p, g.d), rel=1e-10)
    assert s.df == 9


def test_paper_headline_w072_gives_back_its_p_and_d():
    # +1.28 ± 1.26 % over 10 seeds, reported p = .011, d = 1.01.
    s = from_summary(1.28, 1.26, 10)
    assert round(s.p, 3) == 0.011
    # 1.28 / 1.26 = 1.0159 would print 1.02: the paper's d came from unrounded numbers.
    # Within the rounding of mean and sd, d spans [1.275/1.265, 1.285/1.255] and holds 1.01.
    lo, hi = from_summary(1.275, 1.265, 10).d, from_summary(1.285, 1.255, 10).d
    assert lo <= 1.01 <= hi
    assert round(s.d, 2) == 1.02


def test_paper_headline_w20_gives_back_its_p_and_d():
    # +0.54 ± 0.16 % over 10 seeds, reported p < 10^-5, d = 3.31.
    s = from_summary(0.54, 0.16, 10)
    assert s.p < 1e-5
    assert s.d == pytest.approx(3.375)  # the point estimate misses 3.31 ...
    lo, hi = from_summary(0.535, 0.165, 10).d, from_summary(0.545, 0.155, 10).d
    assert lo <= 3.31 <= hi  # ... the rounding box does not
    assert from_summary(0.535, 0.165, 10).p < 1e-5  # p < 10^-5 at every corner


def test_from_summary_edge_cases():
    assert math.isnan(from_summary(1.0, float("nan"), 1).p)
    assert from_summary(0.5, 0.0, 5).p == 0.0
    assert math.isnan(from_summary(0.0, 0.0, 5).p)
    with pytest.raises(ValueError, match="sd must be >= 0"):
        from_summary(1.0, -0.1, 5)


# ---------------------------------------------------------------------------
# Power


def power_by_integration(d: float, n: int, alpha: float = 0.05) -> float:
    """Power without the noncentral t: T = (Z + d sqrt(n)) / sqrt(V / df), V ~ chi2(df),
    so P(|T| > c) = E_V[Phi(d sqrt(n) - c s) + Phi(-d sqrt(n) - c s)], s = sqrt(V / df)."""
    df, delta = n - 1, d * math.sqrt(n)
    c = stats.t.isf(alpha / 2, df)

    def integrand(v: float) -> float:
        s = math.sqrt(v / df)
        return stats.chi2.pdf(v, df) * (stats.norm.cdf(delta - c * s) + stats.norm.cdf(-delta - c * s))

    return integrate.quad(integrand, 0, np.inf, limit=200)[0]


def power_by_simulation(d: float, n: int, reps: int, seed: int, alpha: float = 0.05) -> float:
    """Rejection rate of the two-sided one-sample t-test on normal data with mean d, sd 1: |t| above the
    critical t, the rule scipy's ttest_1samp applies (checked on the first rows; its p-values cost 10x)."""
    rng = np.random.default_rng(seed)
    critical = stats.t.ppf(1 - alpha / 2, n - 1)
    hits = 0
    for start in range(0, reps, 100_000):
        x = rng.normal(d, 1.0, size=(min(100_000, reps - start), n))  # (reps, n)
        t = x.mean(axis=1) / (x.std(axis=1, ddof=1) / math.sqrt(n))
        rejected = np.abs(t) > critical
        if start == 0:
            assert np.array_equal(rejected[:2000], stats.ttest_1samp(x[:2000], 0.0, axis=1).pvalue < alpha)
        hits += int(rejected.sum())
    return hits / reps


# G*Power 3, "t tests - means: difference from constant (one sample case)",
# two tails, alpha = .05, power = .80: d = 0.5 -> N = 34, 0.8 -> 15, 1.0 -> 10.
GPOWER = {0.5: 34, 0.8: 15, 1.0: 10}


@pytest.mark.parametrize("d, n", GPOWER.items())
def test_seeds_for_power_matches_gpower_and_integration(d, n):
    assert seeds_for_power(d) == n
    assert seeds_for_power(-d) == n  # two-sided
    at_n, below = power_by_integration(d, n), power_by_integration(d, n - 1)
    assert at_n >= 0.8 > below
    assert power_at(d, n) == pytest.approx(at_n, abs=1e-7)
    assert power_at(d, n - 1) == pytest.approx(below, abs=1e-7)


@pytest.mark.parametrize("d, n, reps", [(0.5, 34, 400_000), (1.0, 10, 1_000_000)])
def test_power_by_brute_force_simulation(d, n, reps):
    # One test per G*Power row: simulated rejection rates agree with the noncentral t
    # within 4 standard errors and fall on the two sides of 0.8 at n and n - 1.
    for m in (n, n - 1):
        sim = power_by_simulation(d, m, reps, seed=m)
        se = math.sqrt(sim * (1 - sim) / reps)
        assert abs(sim - power_at(d, m)) < 4 * se
        assert (sim >= 0.8) == (m == n)


def test_seeds_for_power_paper_effect_sizes_and_extremes():
    assert seeds_for_power(1.01) == 10  # w=0.72 headline: the paper's 10 seeds are just enough
    assert seeds_for_power(3.31) == 3
    assert power_at(9.52, 2) < 0.8 <= power_at(9.52, 3)  # df = 1 has a critical t of 12.7
    assert seeds_for_power(9.52) == 3
    # Small effects: the normal approximation ((z_.975 + z_.8) / d)^2 is ~3140 at d = 0.05.
    n = seeds_for_power(0.05)
    assert power_at(0.05, n) >= 0.8 > power_at(0.05, n - 1)
    assert 3135 < n < 3150
    assert seeds_for_power(1.0, power=0.9) > seeds_for_power(1.0)
    with pytest.raises(ValueError, match="non-zero"):
        seeds_for_power(0.0)
    with pytest.raises(ValueError, match="alpha < power"):
        seeds_for_power(1.0, power=0.01)


def test_the_t_and_noncentral_t_functions_equal_scipy_stats_exactly():
    """repro.claims.stats calls the ufuncs scipy.stats.t and scipy.stats.nct call, without importing scipy.stats."""
    import math

    from scipy import stats as sst

    from repro.claims.stats import _nct_sf, p_from_t, t_from_p

    for df in (1, 2, 4, 9, 29, 99):
        for t in (0.0, 0.3, 1.7, 2.26, 5.0, 40.0):
            assert p_from_t(t, df) == float(2.0 * sst.t.sf(abs(t), df))
            assert p_from_t(-t, df) == p_from_t(t, df)
        for p in (1e-9, 0.01, 0.05, 0.5, 1.0):
            assert t_from_p(p, df) == float(sst.t.isf(p / 2.0, df))
        crit = float(sst.t.isf(0.025, df))
        for nc in (-30.0, -3.0, -0.1, 0.0, 0.5, 2.0, 9.4, 30.0):
            assert _nct_sf(crit, df, nc) == float(sst.nct.sf(crit, df, nc))
    assert math.isinf(t_from_p(0.0, 3))


@pytest.mark.slow
def test_importing_the_statistics_leaves_scipy_stats_out():
    import subprocess
    import sys

    code = "import sys, repro.claims.stats; print('scipy.stats' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "False", out.stderr
