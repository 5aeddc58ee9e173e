"""Verdict stability (repro.claims.stability): the share of bootstrap resamples of the seeds under which the same rule
gives the verdict again. The resampled gaps' statistics equal paired_gap's, the vectorised d_z interval the plain
bisection's, the figure is the same on every run, and only decided empirical verdicts have one."""

import dataclasses
import math

import numpy as np
import pytest

from repro.claims import Evidence, evaluate
from repro.claims.stability import RESAMPLES, gap_stats_batch, stability
from repro.claims.stats import _nct_sf, d_z_interval, d_z_intervals, paired_gap
from repro.plan.manifest import Claim, find_manifest

from .helpers import gap, learned


@pytest.mark.parametrize(
    "diffs",
    [
        [0.01, 0.03, -0.02, 0.015, 0.0],
        [0.02, 0.02, 0.02],
        [0.0, 0.0, 0.0],
        [0.05],
        [0.01, -0.01],
        [-0.031, -0.012, -0.044, -0.02, -0.009, -0.027, -0.05, -0.018, -0.04, -0.033],
    ],
)
def test_the_batch_gap_statistics_are_paired_gaps(diffs):
    expected = paired_gap({s: 0.5 + d for s, d in enumerate(diffs)}, {s: 0.5 for s in range(len(diffs))}).to_dict()
    (got,) = gap_stats_batch(np.array([diffs]))
    for key in ("n", "positive", "df"):
        assert got[key] == expected[key], key
    for key in ("mean", "sd", "sem", "t", "p", "d"):
        assert (got[key] is None) == (expected[key] is None), key
        if expected[key] is not None:
            assert got[key] == pytest.approx(expected[key], rel=1e-9, abs=1e-15), key
    assert (
        got["ci95"] == pytest.approx(expected["ci95"], rel=1e-9, abs=1e-15)
        if expected["ci95"][0] is not None
        else got["ci95"] == [None, None]
    )


def test_a_seed_missing_from_a_row_is_left_out_of_its_gap():
    (got,) = gap_stats_batch(np.array([[0.01, np.nan, 0.03]]))
    expected = paired_gap({0: 0.51, 2: 0.53}, {0: 0.5, 2: 0.5}).to_dict()
    assert got["n"] == 2 and got["mean"] == pytest.approx(expected["mean"]) and set(got["differences"]) == {"0", "2"}


def _plain_d_z_interval(d, n, level=0.95):
    """The bisection as one loop per bound: what d_z_intervals must equal, element by element."""
    df, t = n - 1, d * math.sqrt(n)

    def solve(tail):
        lo, hi = t - 10.0, t + 10.0
        while _nct_sf(t, df, lo) > tail:
            lo -= 2 * (hi - lo)
        while _nct_sf(t, df, hi) < tail:
            hi += 2 * (hi - lo)
        for _ in range(200):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if _nct_sf(t, df, mid) < tail else (lo, mid)
        return (lo + hi) / 2

    alpha = (1 - level) / 2
    return solve(alpha) / math.sqrt(n), solve(1 - alpha) / math.sqrt(n)


def test_the_vectorised_d_z_interval_equals_the_plain_bisection():
    ds = np.array([0.3, 1.01, -2.5, 9.52, 0.0])
    for n in (3, 5, 10):
        lo, hi = d_z_intervals(ds, n)
        for d, a, b in zip(ds, lo, hi):
            assert (a, b) == _plain_d_z_interval(float(d), n) == d_z_interval(float(d), n)


def _evidence(diffs_pp, paper_table="table1"):
    comps = {"c0": ("moe", "dense")}
    metrics = {
        "comparisons.c0.gap": gap(diffs_pp),
        **learned("moe", "dense", accuracy=tuple(0.8 + 0.001 * s for s in range(len(diffs_pp)))),
    }
    return Evidence("t", paper_table, "full", metrics=metrics, comparison_rows=comps, kind="paper")


def _claim(rule, **params):
    return Claim("c", "s", "4.2", rule, "empirical", params)


def test_stability_is_deterministic_and_counts_every_resample():
    claim = _claim("gap_matches_paper", comparison="c0", paper="std_h2048.gap")
    ev = _evidence([1.0, 0.8, 1.2, 0.9, 1.1])
    v = evaluate(claim, ev)
    assert v.status == "reproduced"
    first = stability(claim, ev, v)
    assert first == stability(claim, ev, v) == 1.0  # every resample of five positive seeds stays positive
    assert RESAMPLES >= 1000


def test_a_verdict_that_hangs_on_one_seed_is_unstable():
    # Ten seeds, two of them negative: p = 0.023, a significance that comes and goes with which seeds are drawn.
    claim = _claim("gap_matches_paper", comparison="c0", paper="std_h2048.gap")
    ev = _evidence([0.4, -0.1, 0.3, 0.2, 0.2, 0.1, -0.1, 0.3, 0.1, 0.05])
    v = evaluate(claim, ev)
    s = stability(claim, ev, v)
    assert v.status == "reproduced" and s == pytest.approx(0.686)
    shown = dataclasses.replace(v, stability=s).stability_text
    assert shown.startswith(f"{s:.2f}, unstable: fewer than 80% of resamples")


def test_only_decided_empirical_verdicts_have_a_stability():
    claim = _claim("gap_matches_paper", comparison="c0", paper="std_h2048.gap")
    ev = _evidence([1.0, 0.8, 1.2, 0.9, 1.1])
    v = evaluate(claim, ev)
    for status in ("inconclusive", "not run"):
        assert stability(claim, ev, dataclasses.replace(v, status=status)) is None
    assert stability(claim, ev, dataclasses.replace(v, scope="analytic")) is None
    assert dataclasses.replace(v, stability=None).stability_text == ""


def test_an_unpaired_rule_draws_each_row_apart():
    # row_above tests two independent groups (Welch): a resample that kept the seeds paired would hold both rows'
    # seed-to-seed swings together. Here the rows share one large swing per seed and differ by 0.2pp on each.
    t2 = find_manifest("table2")
    claim = next(c for c in t2.claims if c.id == "c100_wide_dw_moe_beats_standard_dense")
    swing = [0.0, 0.05, -0.04, 0.03, -0.02, 0.06, -0.05, 0.01, -0.03, 0.04]
    metrics = {f"rows.{r.id}.chance": 0.01 for r in t2.rows}
    metrics["rows.dw2_moe.accuracy"] = {s: 0.6 + w + 0.002 for s, w in enumerate(swing)}
    metrics["rows.std_dense.accuracy"] = {s: 0.6 + w for s, w in enumerate(swing)}
    ev = Evidence("table2", "table2", "full", metrics=metrics, kind="paper")
    v = evaluate(claim, ev)
    assert v.status == "inconclusive"  # Welch cannot see a 0.2pp shift under 3pp swings
    # Drawn together the two rows' means differ by 0.2pp in every resample, never significantly; drawn apart, by
    # chance a few resamples put the wide model significantly above
    above = stability(claim, ev, dataclasses.replace(v, status="reproduced"))
    assert 0 < above < 0.1
