"""Claims beyond the paper (repro.claims.extension): the router-order rule on hand-made gaps; the manifest."""

import pytest

from repro.claims import RULES, Evidence, evaluate
from repro.claims.extension import RouterOrderStable, order_at, router_order_stable
from repro.plan.manifest import Claim, find_manifest


def gap(mean, half=0.0):
    return {"mean": mean, "ci95": (mean - half, mean + half), "n": 3, "sd": 0.01, "p": 0.01, "positive": 3}


def evidence(gaps):
    return Evidence(
        "x",
        "x",
        "smoke",
        metrics={f"comparisons.{c}.gap": g for c, g in gaps.items()},
        paper_scale=False,
        comparison_rows={c: (f"{c}_moe", f"dense_{c[-1]}") for c in gaps},
    )


ROUTERS = ("a", "b", "c")
COMPS = ("a_1", "a_2", "b_1", "b_2", "c_1", "c_2")  # router-major, two configurations


def test_grid_and_validation():
    p = RouterOrderStable(ROUTERS, COMPS)
    assert p.grid() == [["a_1", "b_1", "c_1"], ["a_2", "b_2", "c_2"]]
    with pytest.raises(ValueError, match="whole number"):
        RouterOrderStable(ROUTERS, COMPS[:5])
    with pytest.raises(ValueError, match="label every configuration"):
        RouterOrderStable(ROUTERS, COMPS, configs=("one",))
    with pytest.raises(ValueError, match="two routers"):
        RouterOrderStable(("a",), ("a_1",))


def test_order_at_golden():
    order, ties = order_at([gap(0.01, 0.005), gap(0.03), gap(0.012, 0.005)], ROUTERS)
    assert order == ("b", "c", "a")
    assert ties == {frozenset(("a", "c"))}  # 0.2pp apart, half-widths 0.5pp each


def test_same_order_everywhere_holds():
    g = {"a_1": gap(0.03), "b_1": gap(0.02), "c_1": gap(-0.01), "a_2": gap(0.05), "b_2": gap(0.0), "c_2": gap(-0.02)}
    d = router_order_stable(RouterOrderStable(ROUTERS, COMPS), evidence(g))
    assert d.status == "reproduced" and d.failed == []
    assert d.measured["a_1"] == {"a": 0.03, "b": 0.02, "c": -0.01}
    d = router_order_stable(RouterOrderStable(ROUTERS, COMPS, configs=("h128", "h512")), evidence(g))
    assert d.evidence == "order by mean gap: h128: a > b > c; h512: a > b > c"


def test_a_clear_swap_breaks_the_order_and_a_noisy_one_is_inconclusive():
    g = {"a_1": gap(0.03), "b_1": gap(0.02), "c_1": gap(-0.01), "a_2": gap(0.00), "b_2": gap(0.04), "c_2": gap(-0.02)}
    d = router_order_stable(RouterOrderStable(ROUTERS, COMPS), evidence(g))
    assert d.status == "not reproduced" and d.failed == ["order at a_2: b > a > c (swapped: a/b)"]
    g.update(a_2=gap(0.035, 0.01), b_2=gap(0.04, 0.01))
    d = router_order_stable(RouterOrderStable(ROUTERS, COMPS), evidence(g))
    assert d.status == "inconclusive"


def test_evaluated_as_an_extension_claim():
    claim = Claim("c", "s", "4.2", "router_order_stable", "extension", {"routers": ROUTERS, "comparisons": COMPS})
    v = evaluate(claim, evidence({}))
    assert v.status == "not run"  # nothing measured
    assert "router_order_stable" in RULES


def test_ext_routers_manifest_validates_and_shares_table1_rows():
    ext, t1 = find_manifest("ext_routers"), find_manifest("table1")
    for row in (r for r in t1.rows if r.role == "main"):  # table1's sensitivity rows are its own
        assert ext.row(row.id) == row  # the same configuration: the same runs
    assert {c.scope for c in ext.claims} == {"extension"}
    assert {c.series for c in ext.comparisons} == {"paper", "tgr", "relu", "cluster"}
    assert len(ext.rows) == 30 and len(ext.comparisons) == 24
