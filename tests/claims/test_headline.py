"""count_verdicts (repro.claims.headline): the run's claims by scope and status."""

import pytest

from repro.claims import count_verdicts
from repro.results.measurements import Verdict


def _v(scope, status):
    return Verdict("c", "s", "0", scope, status, "e")


def test_counts_by_scope_and_status_with_zeros():
    vs = [_v("analytic", "reproduced"), _v("analytic", "reproduced"), _v("analytic", "not reproduced"),
          _v("empirical", "not run"), _v("empirical", "inconclusive"), _v("gpu", "not run")]
    assert count_verdicts(vs) == {
        "analytic": {"reproduced": 2, "not reproduced": 1, "inconclusive": 0, "not run": 0},
        "empirical": {"reproduced": 0, "not reproduced": 0, "inconclusive": 1, "not run": 1},
        "gpu": {"reproduced": 0, "not reproduced": 0, "inconclusive": 0, "not run": 1},
        "extension": {"reproduced": 0, "not reproduced": 0, "inconclusive": 0, "not run": 0},
        "explainer": {"reproduced": 0, "not reproduced": 0, "inconclusive": 0, "not run": 0},
    }
    assert list(count_verdicts([])["gpu"]) == ["reproduced", "not reproduced", "inconclusive", "not run"]


def test_an_unknown_scope_is_refused():
    with pytest.raises(ValueError, match="scope 'cpu'"):
        count_verdicts([_v("cpu", "reproduced")])


def test_claims_judged_against_the_explainers_numbers_are_counted_apart():
    from_explainer = Verdict("x", "s", "0", "analytic", "reproduced", "e", source="explainer-and-summary")
    counts = count_verdicts([_v("analytic", "reproduced"), from_explainer])
    assert counts["analytic"]["reproduced"] == 1 and counts["explainer"]["reproduced"] == 1


def test_which_claims_rest_on_the_explainer():
    from repro.claims import Evidence, evaluate
    from repro.plan.manifest import load_all

    sources = {}
    for m in load_all():
        ev = Evidence(m.id, m.paper_table, "smoke")
        sources.update({f"{m.id}/{c.id}": evaluate(c, ev).source for c in m.claims})
    explainer = sorted(k for k, s in sources.items() if s == "explainer-and-summary")
    # ~49% (the method text says "nearly half"), Table 5's gap sizes, and the 36 ms loop latency
    assert explainer == ["table5/bb_moe_k1_gap_size", "table5/bb_moe_k2_gap_size", "table6/rho_cifar_dw_near_half",
                         "table7/cifar100_loop_36ms"]
    assert sources["table5/bb_moe_k2_positive"] == sources["table5/bb_moe_k_reversal"] == "method-and-results"
