"""repro.claims.stats_audit: printed numbers as rounding intervals, the audit on the paper's
headline statistics (Section 4.2) and on records made inconsistent on purpose, and
the power plan."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from repro.spec.paper import PaperValue, paper_tables
from repro.claims.stats import from_summary
from repro.claims.stats_audit import (
    Interval,
    Printed,
    abs_ratio,
    audit,
    audit_value,
    p_interval,
    parse_number,
    power_plan,
    read_printed,
    rounding_interval,
)


def gap(key="t.gap", printed="", **kw) -> PaperValue:
    return PaperValue(key=key, section="4.2", printed=printed, **kw)


# The two CIFAR-10 headline gaps exactly as Section 4.2 prints them.
W072 = gap("w072.gap", "+1.28 ± 1.26%", value=1.28, unit="%", sd=1.26, n=10, p=0.011, d=1.01)
W20 = gap("w20.gap", "+0.54 ± 0.16%", value=0.54, unit="%", sd=0.16, n=10, p=1e-5, p_relation="<", d=3.31,
          positive_seeds=10)  # fmt: skip


def verdicts(rows):
    return {r.check: r.verdict for r in rows}


# ---------------------------------------------------------------------------
# Reading printed numbers


@pytest.mark.parametrize(
    "token, value, half",
    [
        (".011", 0.011, 0.0005),
        ("0.0013", 0.0013, 0.00005),
        ("0.10", 0.10, 0.005),
        ("1.28", 1.28, 0.005),
        ("10^-5", 1e-5, 5e-6),
        ("1.2×10^-4", 1.2e-4, 5e-6),
        ("$1.2{\\times}10^{-4}$", 1.2e-4, 5e-6),
        ("1.2e-4", 1.2e-4, 5e-6),
        ("9.52", 9.52, 0.005),
    ],
)
def test_parse_number(token, value, half):
    v, h = parse_number(token)
    assert v == pytest.approx(value, rel=1e-12) and h == pytest.approx(half, rel=1e-12)


def test_read_printed_finds_each_part():
    parts = read_printed("+0.54 ± 0.16% (p<10^-5, d=3.31)")
    assert (parts.mean, parts.sd, parts.p, parts.d) == ("+0.54", "0.16", "<10^-5", "3.31")
    latex = read_printed("$+1.28\\pm 1.26\\%$ ($p{=}.011$, $d{=}1.01$)")
    assert (latex.mean, latex.sd, latex.p, latex.d) == ("+1.28", "1.26", "=.011", "1.01")
    assert read_printed("$p{=}1.2{\\times}10^{-4}$").p == "=1.2×10^-4"
    assert read_printed("88.41%") == Printed(mean="88.41")


def test_rounding_intervals():
    assert rounding_interval(1.28, "+1.28") == Interval(pytest.approx(1.275), pytest.approx(1.285))
    # Without a printed token, the coarsest rounding the float allows (0.1 could be "0.1").
    assert rounding_interval(0.1, None) == Interval(pytest.approx(0.05), pytest.approx(0.15))
    assert rounding_interval(0.1, "0.10") == Interval(pytest.approx(0.095), pytest.approx(0.105))
    assert rounding_interval(3.0, None) == Interval(2.5, 3.5)
    assert rounding_interval(38.0, "38", approx=True) == Interval(37.0, 39.0)  # "~38": a full unit
    # A token that does not match the stored value is not used for its precision.
    assert rounding_interval(1.26, "5.0") == Interval(pytest.approx(1.255), pytest.approx(1.265))


def test_p_intervals():
    assert p_interval(0.011, "=") == Interval(pytest.approx(0.0105), pytest.approx(0.0115))
    assert p_interval(0.011, "=", "=.011") == p_interval(0.011, "=")
    assert p_interval(1e-5, "<", "<10^-5") == Interval(0.0, 1e-5)
    assert p_interval(1.2e-4, "=", "=1.2×10^-4") == Interval(pytest.approx(1.15e-4), pytest.approx(1.25e-4))
    assert p_interval(0.10, "=", "=0.10") == Interval(pytest.approx(0.095), pytest.approx(0.105))


def test_abs_ratio_box_corners_and_sign():
    r = abs_ratio(Interval(0.535, 0.545), Interval(0.155, 0.165))
    assert (r.lo, r.hi) == pytest.approx((0.535 / 0.165, 0.545 / 0.155))
    neg = abs_ratio(Interval(-2.085, -2.075), Interval(0.5, 0.6))
    assert (neg.lo, neg.hi) == pytest.approx((2.075 / 0.6, 2.085 / 0.5))
    straddle = abs_ratio(Interval(-0.05, 0.05), Interval(0.0, 0.1))
    assert straddle.lo == 0.0 and straddle.hi == math.inf


# ---------------------------------------------------------------------------
# The audit on the paper's numbers


@pytest.mark.parametrize("printed", ["+1.28 ± 1.26%", "$+1.28\\pm 1.26\\%$ ($p{=}.011$, $d{=}1.01$)", ""])
def test_w072_headline_is_consistent(printed):
    v = gap("w072.gap", printed, value=1.28, unit="%", sd=1.26, n=10, p=0.011, d=1.01)
    rows = audit_value(v)
    assert verdicts(rows) == {
        "d from mean and sd": "consistent",
        "p from mean, sd, n": "consistent",
        "p from d, n": "consistent",
    }
    d_row = next(r for r in rows if r.check == "d from mean and sd")
    assert d_row.recomputed == "[1.008, 1.024]" and d_row.reported_interval == "[1.005, 1.015]"


def test_w20_headline_is_consistent_within_rounding():
    rows = audit_value(W20)
    assert set(verdicts(rows).values()) == {"consistent"}
    d_row = next(r for r in rows if r.check == "d from mean and sd")
    assert d_row.recomputed == "[3.242, 3.516]"  # 0.54/0.16 = 3.375 misses 3.31, the box does not
    assert "10 of 10 seeds positive vs mean, sd" in verdicts(rows)


def test_a_point_in_the_box_reproduces_p_and_d_together():
    # Brute force over the rounding box, independent of the interval arithmetic.
    means, sds = np.linspace(1.275, 1.285, 41), np.linspace(1.255, 1.265, 41)
    tests = [from_summary(m, s, 10) for m in means for s in sds]
    assert any(1.005 <= t.d <= 1.015 and 0.0105 <= t.p <= 0.0115 for t in tests)
    assert min(t.p for t in tests) > 0.0015  # so p = .001 cannot come from +1.28 ± 1.26 over 10 seeds


def test_made_up_inconsistent_records_are_flagged():
    wrong_p = gap(value=1.28, sd=1.26, n=10, p=0.001)
    assert verdicts(audit_value(wrong_p)) == {"p from mean, sd, n": "inconsistent"}
    wrong_d = gap(printed="+1.28 ± 1.26%", value=1.28, sd=1.26, n=10, d=1.10)
    assert verdicts(audit_value(wrong_d)) == {"d from mean and sd": "inconsistent"}
    d_vs_p = gap(n=5, d=9.52, p=0.01)  # d = 9.52 over 5 seeds gives p ~ 3e-5
    assert verdicts(audit_value(d_vs_p))["p from d, n"] == "inconsistent"
    wrong_bound = gap(value=0.54, sd=0.16, n=3, p=1e-5, p_relation="<")  # n = 3: p ~ 0.03
    assert verdicts(audit_value(wrong_bound)) == {"p from mean, sd, n": "inconsistent"}


def test_all_seeds_positive_check():
    # Non-negative data always have mean/sd >= 1/sqrt(n), with equality at (a, 0, ..., 0).
    rng = np.random.default_rng(0)
    x = rng.exponential(size=(20_000, 5)) ** 3  # (draws, n), heavy tailed
    assert (x.mean(1) / x.std(1, ddof=1)).min() >= 1 / math.sqrt(5)
    edge = np.array([1.0, 0, 0, 0, 0])
    assert edge.mean() / edge.std(ddof=1) == pytest.approx(1 / math.sqrt(5))

    small = verdicts(audit_value(gap(value=0.1, sd=1.0, n=10, positive_seeds=10)))
    assert small["10 of 10 seeds positive vs mean, sd"] == "inconsistent"  # |d_z| <= 0.105 < 0.316
    wrong_sign = verdicts(audit_value(gap(value=-0.5, sd=0.1, n=5, positive_seeds=5)))
    assert wrong_sign["5 of 5 seeds positive vs mean, sd"] == "inconsistent"
    k1 = verdicts(audit_value(gap(printed="-2.08%", value=-2.08, n=5, positive_seeds=0)))
    assert k1["0 of 5 seeds positive vs sign of mean"] == "consistent"
    c100 = verdicts(audit_value(gap(printed="p=0.0013", p=0.0013, n=10, positive_seeds=10)))
    assert c100["10 of 10 seeds positive vs p, n"] == "consistent"
    mixed = verdicts(audit_value(gap(value=0.3, sd=0.5, n=10, positive_seeds=7)))
    assert mixed["7 of 10 seeds positive"].startswith("not checkable")
    too_many = verdicts(audit_value(gap(value=0.3, n=5, positive_seeds=6)))
    assert too_many["6 of 5 seeds positive"] == "inconsistent"


def test_not_checkable_and_skipped_values():
    rows = audit_value(gap(printed="p=0.004", p=0.004, n=5))
    assert len(rows) == 1 and rows[0].verdict == "not checkable: only n, p given, nothing over-determined"
    assert rows[0].recomputed.startswith("|d_z| in [")
    spread = audit_value(gap("rho.gap", printed="+0.4 ± 0.3", value=0.4, sd=0.3, n=5))
    assert spread[0].verdict.startswith("not checkable") and spread[0].recomputed.startswith("p in [")
    # An absolute accuracy's mean ± sd states no test, and a bare number no statistic.
    accuracy = PaperValue(key="w20.accuracy", section="4.2", printed="88.41%", value=88.41, sd=0.2, n=10)
    assert audit_value(accuracy) == []
    assert audit_value(gap(printed="22.7%", value=22.7)) == []


def test_audit_rows_are_strict_json():
    rows = audit([W072, W20, gap(n=5, p=1e-3, p_relation="<")])
    text = json.dumps([r.to_dict() for r in rows], allow_nan=False)
    assert json.loads(text)[0]["key"] == "w072.gap"
    fields = {"key", "section", "check", "reported", "reported_interval", "recomputed", "verdict"}
    assert fields == set(rows[0].to_dict())


def test_audit_runs_on_every_stored_paper_value():
    values = [v for table in paper_tables().values() for v in table.values]
    if not values:
        pytest.skip("no paper_tables/*.toml yet")
    rows = audit(values)
    allowed = ("consistent", "inconsistent")
    assert all(r.verdict in allowed or r.verdict.startswith("not checkable: ") for r in rows)
    assert all(r.reported for r in rows)


# ---------------------------------------------------------------------------
# Power plan


def test_power_plan():
    p_only = gap("bb.gap", printed="p=1.2×10^-4", p=1.2e-4, n=5, positive_seeds=5)
    bound = gap("mnv2.gap", printed="p<0.001", p=1e-3, p_relation="<", n=5)
    spread = gap("rho.gap", value=0.4, sd=0.3, n=5)
    rows = {r.key: r for r in power_plan([W072, W20, p_only, bound, spread])}
    assert (rows["w072.gap"].seeds_needed, rows["w072.gap"].source) == (10, "d")
    assert rows["w072.gap"].power_at_paper_n == pytest.approx(0.811, abs=1e-3)
    assert rows["w20.gap"].seeds_needed == 3
    assert rows["bb.gap"].source == "p, n" and not rows["bb.gap"].bound
    # p = 1.2e-4 two-sided with df 4 is |t| = 14.84, so d_z = 14.84 / sqrt(5) = 6.637.
    assert rows["bb.gap"].effect_size == pytest.approx(6.637, abs=1e-3)
    assert rows["mnv2.gap"].bound and rows["mnv2.gap"].seeds_needed <= 5
    assert rows["rho.gap"].effect_size == pytest.approx(0.4 / 0.3) and rows["rho.gap"].seeds_needed == 7
    json.dumps([r.to_dict() for r in rows.values()], allow_nan=False)
