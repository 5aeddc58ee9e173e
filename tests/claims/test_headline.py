"""count_verdicts (repro.claims.headline): the run's claims by scope and status."""

import pytest

from repro.claims import count_verdicts
from repro.results.measurements import Verdict


def _v(scope, status):
    return Verdict("c", "s", "0", scope, status, "e")


def test_counts_by_scope_and_status_with_zeros():
    vs = [
        _v("analytic", "reproduced"),
        _v("analytic", "reproduced"),
        _v("analytic", "not reproduced"),
        _v("empirical", "not run"),
        _v("empirical", "inconclusive"),
        _v("gpu", "not run"),
    ]
    assert count_verdicts(vs) == {
        "analytic": {"reproduced": 2, "not reproduced": 1, "inconclusive": 0, "not run": 0},
        "property": {"reproduced": 0, "not reproduced": 0, "inconclusive": 0, "not run": 0},
        "self-test": {"reproduced": 0, "not reproduced": 0, "inconclusive": 0, "not run": 0},
        "empirical": {"reproduced": 0, "not reproduced": 0, "inconclusive": 1, "not run": 1},
        "gpu": {"reproduced": 0, "not reproduced": 0, "inconclusive": 0, "not run": 1},
        "extension": {"reproduced": 0, "not reproduced": 0, "inconclusive": 0, "not run": 0},
        "explainer": {"reproduced": 0, "not reproduced": 0, "inconclusive": 0, "not run": 0},
        "prediction": {"reproduced": 0, "not reproduced": 0, "inconclusive": 0, "not run": 0},
        "derived": {"reproduced": 0, "not reproduced": 0, "inconclusive": 0, "not run": 0},
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
    assert explainer == [
        "table5/bb_moe_k1_gap_size",
        "table5/bb_moe_k2_gap_size",
        "table6/rho_cifar_dw_near_half",
        "table7/cifar100_loop_36ms",
    ]
    assert sources["table5/bb_moe_k2_positive"] == sources["table5/bb_moe_k_reversal"] == "method-and-results"


def test_the_analytic_group_keeps_printed_numbers_properties_and_self_tests_apart():
    from repro.claims.headline import reproductions

    vs = [
        Verdict("printed", "s", "0", "analytic", "reproduced", "e", kind="printed"),
        Verdict("bound", "s", "0", "analytic", "reproduced", "e", kind="property"),
        Verdict("loop", "s", "0", "analytic", "reproduced", "e", kind="self-test"),
        Verdict("gap", "s", "0", "empirical", "not reproduced", "e"),
    ]
    counts = count_verdicts(vs)
    assert [counts[g]["reproduced"] for g in ("analytic", "property", "self-test")] == [1, 1, 1]
    assert reproductions(counts) == (2, 3)  # a self-test of this artifact's code is no reproduction of the paper


def test_the_shipped_analytic_claims_state_their_kind():
    from repro.plan.manifest import load_all

    kinds = {c.id: c.kind for m in load_all() for c in m.claims if c.scope == "analytic"}
    assert {k for k, v in kinds.items() if v == "self-test"} == {
        "loop_ops_grow_with_experts",
        "batched_ops_constant_in_experts",
    }
    assert {k for k, v in kinds.items() if v == "property"} == {
        "imagenet_heads_below_1pct_r18",
        "imagenet_heads_below_1pct_mnv2",
        "backbone_moe_rho_independent_of_k",
        "depthwise_raises_rho",
        "tiny_large_expert_exceeds_dense_head",
        "tiny_convolutions_dominate",
        "tiny_flops_reduction_negligible",
        "cifar100_sparse_head_cheaper_than_dense",
    }
    assert kinds["rho_r18_head"] == kinds["rho_backbone_moe"] == "printed"
    others = {c.id: c.kind for m in load_all() for c in m.claims if c.scope != "analytic"}
    assert {k for k, v in others.items() if v} == {"batched_head_within_2x_dense", "batched_model_within_2x_dense"}
    assert {others["batched_head_within_2x_dense"], others["batched_model_within_2x_dense"]} == {"prediction"}


def test_an_analytic_claim_without_its_kind_is_refused():
    import copy

    import pytest

    from checkout import MANIFESTS
    from repro.plan.manifest import parse_manifest
    from repro.core.schema import SchemaError, read_toml

    doc = copy.deepcopy(read_toml(MANIFESTS / "table6.toml"))
    del doc["claims"][0]["kind"]
    doc["claims"][1]["scope"], doc["claims"][1]["kind"] = "empirical", "printed"
    with pytest.raises(SchemaError) as exc:
        parse_manifest(doc, "table6.toml")
    assert any(p.startswith("claims[0].kind: an analytic claim states its kind") for p in exc.value.problems)
    assert any(p.startswith("claims[1].kind: kind is for analytic claims") for p in exc.value.problems)


def test_predictions_of_this_artifact_and_derived_claims_are_counted_apart_and_not_as_reproductions():
    from repro.claims.headline import reproductions

    prediction = Verdict("p", "s", "5", "gpu", "reproduced", "e", kind="prediction")
    derived = Verdict("d", "s", "4.2", "empirical", "reproduced", "e", derived_from=["m"])
    counts = count_verdicts([prediction, derived, _v("empirical", "reproduced")])
    assert counts["prediction"]["reproduced"] == counts["derived"]["reproduced"] == 1
    assert counts["empirical"]["reproduced"] == 1
    assert counts["gpu"]["reproduced"] == 0 and reproductions(counts) == (1, 1)
