"""Holm's adjustment (repro.results.family, its one place) on hand-computed p-values."""

import dataclasses

import pytest

from repro.claims import Evidence, evaluate, holm_adjust
from repro.plan.manifest import Claim
from repro.results.family import holm
from repro.results.measurements import Verdict

from tests.claims.helpers import gap, learned


def test_holm_golden_values():
    # sorted: 0.005 x4 = 0.02, 0.01 x3 = 0.03, 0.03 x2 = 0.06, 0.04 x1 = 0.04 -> max(0.06, 0.04) = 0.06
    assert holm([0.03, 0.04, 0.01, 0.005]) == pytest.approx([0.06, 0.06, 0.03, 0.02])
    assert holm([0.5, 0.6]) == pytest.approx([1.0, 1.0])  # 0.5 x 2 caps at 1; monotone after
    assert holm([0.02]) == [0.02] and holm([]) == []


def _verdict(claim, p, scope="empirical", status="reproduced", note=""):
    return Verdict(claim, "s", "0", scope, status, "e", p_value=p, note=note)


def test_holm_adjust_sets_p_holm_on_the_family_and_flags_what_adjustment_undoes():
    vs = [
        _verdict("a", 0.03),
        _verdict("b", 0.04, note="decided on 'quick'"),
        _verdict("c", 0.01),
        _verdict("d", 0.005),
        _verdict("flops", 0.001, scope="analytic"),
        _verdict("skipped", 0.001, status="not run"),
        _verdict("no_test", None),
    ]
    given = list(vs)
    vs, m = holm_adjust(vs)
    assert m == 4
    assert [v.p_holm for v in vs[:4]] == pytest.approx([0.06, 0.06, 0.03, 0.02])
    assert all(v.p_holm is None for v in vs[4:])
    assert vs[0].note == (
        "significant alone (p=0.03) but not after Holm's adjustment over the run's 4 tests "
        "(p_holm=0.06); the verdict follows the paper's per-test protocol"
    )
    assert vs[1].note.startswith("decided on 'quick'; significant alone (p=0.04)")
    assert vs[2].note == "" and vs[3].note == ""  # still significant after adjustment
    assert [v.status for v in vs[:4]] == ["reproduced"] * 4  # the verdict keeps the per-test protocol
    assert vs[4:] == given[4:]  # outside the family: the same verdicts
    # new values, none written into
    assert all(v.p_holm is None and v.note in ("", "decided on 'quick'") for v in given)
    vs, _ = holm_adjust(vs)
    assert vs[0].note.count("Holm") == 1  # idempotent


def test_a_verdict_is_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        _verdict("a", 0.03).p_holm = 0.06  # type: ignore[misc]


def test_rules_resting_on_a_test_carry_its_p():
    claim = Claim(
        "c", "s", "4.2", "gap_matches_paper", "empirical", {"comparison": "std_h2048", "paper": "std_h2048.gap"}
    )
    g = gap([0.4, 0.6, 0.5, 0.45])
    ev = Evidence(
        "table1",
        "table1",
        "full",
        metrics={"comparisons.std_h2048.gap": g, **learned("m", "d")},
        comparison_rows={"std_h2048": ("m", "d")},
    )
    assert evaluate(claim, ev).p_value == pytest.approx(g["p"])
    above = Claim("r", "s", "4.3", "row_above", "empirical", {"row": "m", "baseline": "d"})
    metrics = {**learned("d"), **learned("m", accuracy=(0.90, 0.91, 0.92))}
    v = evaluate(above, Evidence("t", "table2", "full", metrics=metrics))
    assert v.status == "reproduced" and 0 < v.p_value < 0.05
