"""Value rules (repro.claims.values) on hand-made results: ones that should pass, and ones that should fail."""

import pytest

from repro.claims import evaluate

from .helpers import claim, ev


# The paper prints 0.06%: two decimals, so 0.055% <= rho <= 0.065% reproduces it.
@pytest.mark.parametrize(
    "rho,status",
    [
        (0.000592, "reproduced"),
        (0.00055, "reproduced"),
        (0.00065, "reproduced"),
        (0.000549, "not reproduced"),
        (0.00085, "not reproduced"),
    ],
)
def test_matches_paper_uses_the_printed_precision(rho, status):
    v = evaluate(claim("matches_paper", metric="rows.r18_head.rho", paper="r18_head.rho"), ev(rows__r18_head__rho=rho))
    assert v.status == status
    assert "reported 0.06%" in v.evidence
    assert bool(v.failed) == (status == "not reproduced")


def test_approximate_values_get_a_full_unit():
    c = claim("matches_paper", metric="rows.r18_backbone_moe.rho", paper="r18_backbone_moe.rho")  # "~38%"
    assert evaluate(c, ev(rows__r18_backbone_moe__rho=0.3899)).status == "reproduced"
    assert evaluate(c, ev(rows__r18_backbone_moe__rho=0.3901)).status == "not reproduced"


def test_matches_paper_evidence_text_and_numbers():
    v = evaluate(
        claim("matches_paper", metric="rows.r18_head.rho", paper="r18_head.rho"), ev(rows__r18_head__rho=0.000592)
    )
    assert v.evidence == (
        "measured 0.0592% vs reported 0.06% (tolerance ±0.005%: half a unit in the last printed digit)"
    )
    assert v.measured == {"rows.r18_head.rho": 0.000592} and v.reported == {"r18_head.rho": "0.06%"}


@pytest.mark.parametrize(
    "value,relation,status",
    [
        (0.005, "<", "reproduced"),
        (0.02, "<", "not reproduced"),
        (0.02, ">", "reproduced"),
        (0.005, ">", "not reproduced"),
    ],
)
def test_compare_with_a_bound(value, relation, status):
    c = claim("compare", metric="rows.a.rho", relation=relation, bound=0.01)
    assert evaluate(c, ev(rows__a__rho=value)).status == status


def test_compare_with_another_metric_and_with_a_paper_value():
    c = claim("compare", metric="rows.a.rho", relation=">", other="rows.b.rho")
    assert evaluate(c, ev(rows__a__rho=0.4, rows__b__rho=0.1)).status == "reproduced"
    assert evaluate(c, ev(rows__a__rho=0.1, rows__b__rho=0.4)).status == "not reproduced"
    c = claim("compare", metric="rows.a.rho", relation=">", paper="threshold.rho")  # ~7%
    assert evaluate(c, ev(rows__a__rho=0.071)).status == "reproduced"
    assert evaluate(c, ev(rows__a__rho=0.069)).status == "not reproduced"


def test_compare_needs_exactly_one_bound():
    with pytest.raises(ValueError, match="exactly one of bound, other, paper"):
        evaluate(
            claim("compare", metric="rows.a.rho", relation=">", bound=0.1, other="rows.b.rho"), ev(rows__a__rho=0.2)
        )


def test_ratio_matches_paper():
    c = claim("ratio_matches_paper", numerator="rows.m.rho", denominator="rows.r.rho", paper="mnv2_over_r18.rho_ratio")
    assert evaluate(c, ev(rows__m__rho=0.0084, rows__r__rho=0.0006)).status == "reproduced"  # 14.0x
    v = evaluate(c, ev(rows__m__rho=0.0051, rows__r__rho=0.0006))  # 8.5x
    assert v.status == "not reproduced" and v.failed[0].startswith("ratio: 8.50")


def test_separates_names_each_row_on_the_wrong_side():
    c = claim("separates", threshold="threshold.rho", row_metric="rho", below=("a", "b"), above=("c",))
    ok = ev(rows__a__rho=0.001, rows__b__rho=0.06, rows__c__rho=0.3)
    assert evaluate(c, ok).status == "reproduced"
    bad = ev(rows__a__rho=0.001, rows__b__rho=0.08, rows__c__rho=0.05)
    v = evaluate(c, bad)
    assert v.status == "not reproduced"
    assert v.failed == ["b: 0.08 is not below 0.07", "c: 0.05 is not above 0.07"]
    assert v.measured == {"rows.a.rho": 0.001, "rows.b.rho": 0.08, "rows.c.rho": 0.05}


def test_equal_within_relative_tolerance():
    c = claim("equal", metrics=("rows.a.rho", "rows.b.rho"), relative_tolerance=1e-3)
    assert evaluate(c, ev(rows__a__rho=0.4700, rows__b__rho=0.47001)).status == "reproduced"
    assert evaluate(c, ev(rows__a__rho=0.47, rows__b__rho=0.45)).status == "not reproduced"
