"""The text's findings the audit found without a claim: the analytic ones decided from the counts, the empirical
ones from what the run records store (epoch-1 accuracy, test-time against training routing), and every other one
listed with why, as data (repro/spec/untested.toml) that the report and the appendix render."""

import pytest

from repro.claims import Evidence, evaluate
from repro.core.schema import SchemaError
from repro.measure.accuracy import routing_spread
from repro.measure.flop_check import analytic_summary
from repro.plan.manifest import find_manifest
from repro.spec.untested import parse_untested, shipped_untested

from claims.helpers import learned


def _claim(manifest, claim_id):
    return next(c for c in manifest.claims if c.id == claim_id)


def _counted(manifest) -> Evidence:
    """A table's analytic evidence: every FLOP row counted, each comparison's ratio and reduction derived."""
    from repro.results.measurements import Measured, derive_comparisons

    metrics = {
        f"rows.{r.id}.{k}": v
        for r in manifest.rows
        if "flops" in r.measures or not r.measures
        for k, v in analytic_summary(r.dataset, r.backbone, r.head).items()
    }
    measured = derive_comparisons(manifest.comparisons, Measured(metrics))
    return Evidence(manifest.id, manifest.paper_table, "smoke", metrics=measured.metrics, kind="pipeline")


@pytest.mark.parametrize(
    "table, claim, number",
    [
        ("table6", "tiny_large_expert_exceeds_dense_head", "rows.tiny_std_moe.total_macs = 1.64766e+08 > "),
        ("table6", "tiny_convolutions_dominate", "rows.tiny_dw12_moe.head_share = 0.3036 in 'convolutions dominate'"),
        ("table3", "tiny_flops_reduction_negligible", "comparisons.dw12.flops_reduction = -0.0433"),
        ("table7", "cifar100_sparse_head_cheaper_than_dense", "rows.cifar100_sparse_loop.head_macs = 1.2784e+06 < "),
    ],
)
def test_the_analytic_findings_are_claims_decided_from_the_counts(table, claim, number):
    # Tiny-ImageNet's std MoE 164.77 M against its dense twin's 163.24 M MACs; CIFAR-100's sparse head 1.28 M
    # against the matched dense head's 3.43 M: each had no claim.
    manifest = find_manifest(table)
    v = evaluate(_claim(manifest, claim), _counted(manifest))
    assert v.status == "reproduced" and v.scope == "analytic" and v.kind == "property"
    assert number in v.evidence


def test_routing_spread_counts_the_experts_that_cover_90_percent_at_test_and_those_active_in_training():
    # 100 test images: 60, 25, 10, 5 over four experts -> three cover 90%; training dispatches 1% or more on 7 of 8
    routing = {
        "test_usage_by_class": [[30, 20, 5, 0], [30, 5, 5, 5]],
        "expert_usage": [100, 100, 100, 100, 100, 100, 100, 3],
    }
    assert routing_spread(routing) == {"test_experts_90": 3, "train_experts_active": 7}
    assert routing_spread({}) == {}


def test_test_time_concentration_against_training_is_decided_per_seed():
    manifest = find_manifest("headline_cifar10")
    claim = _claim(manifest, "c10_w072_test_routing_concentrates")

    def decide(test, train):
        metrics = {
            **learned("dw072_moe"),
            "rows.dw072_moe.test_experts_90": dict(enumerate(test)),
            "rows.dw072_moe.train_experts_active": dict(enumerate(train)),
        }
        return evaluate(
            claim, Evidence("headline_cifar10", "headline_cifar10", "full", metrics=metrics, kind="paper")
        ).status

    assert decide((1, 3, 2), (8, 8, 8)) == "reproduced"
    assert decide((1, 4, 2), (8, 8, 8)) == "inconclusive"  # one seed spreads over four experts
    assert decide((5, 6, 4), (8, 8, 8)) == "not reproduced"
    assert decide((1, 1, 1), (6, 7, 5)) == "not reproduced"  # training did not keep 8/8 active


def test_epoch1_accuracy_is_a_row_metric_and_the_dense_head_is_judged_against_each_dispatch_method():
    from repro.results.measurements import ROW_METRICS

    assert "epoch1_accuracy" in ROW_METRICS
    t4 = find_manifest("table4")
    metrics = {
        **learned("r18_dense", "r18_soft", "r18_expert_choice", accuracy=(0.6, 0.62, 0.61), chance=0.001),
        "rows.r18_dense.epoch1_accuracy": {0: 0.60, 1: 0.61, 2: 0.62},
        "rows.r18_soft.epoch1_accuracy": {0: 0.05, 1: 0.07, 2: 0.06},
        "rows.r18_expert_choice.epoch1_accuracy": {0: 0.61, 1: 0.60, 2: 0.62},
    }
    ev = Evidence("table4", "table4", "full", metrics=metrics, kind="paper")
    assert evaluate(_claim(t4, "in_epoch1_dense_above_soft"), ev).status == "reproduced"
    assert evaluate(_claim(t4, "in_epoch1_dense_above_expert_choice"), ev).status == "inconclusive"


def test_every_finding_without_a_claim_is_listed_with_its_section_and_why():
    untested = shipped_untested()
    text = " ".join(f.finding for f in untested)
    assert "With k = 1, small experts collapse" in text  # the one of the audit's list no run can decide
    for decided in ("epoch", "Delta", "cheaper", "8/8", "convolutions dominate"):  # now claims: not listed
        assert decided not in text
    assert all(f.section and f.why for f in untested)


def test_a_bad_list_is_refused_naming_the_key():
    with pytest.raises(SchemaError) as exc:
        parse_untested({"findings": [{"section": "5", "finding": "", "reason": "x"}]}, "untested.toml")
    problems = exc.value.problems
    assert any(p.startswith("findings[0].reason: unknown key") for p in problems)
    assert any(p.startswith("findings[0].why: missing required key") for p in problems)


def test_the_report_and_the_appendix_list_the_findings_not_tested():
    from repro.plan.manifest import load_all
    from repro.plan.table_plan import plan_all
    from repro.report.appendix import appendix_inputs, build_appendix, render
    from repro.report.render import render_untested

    first = shipped_untested()[0]
    assert f"- Section {first.section}: {first.finding}. Not tested: {first.why}." in render_untested()
    manifests = load_all()
    appendix = build_appendix([(m, None) for m in manifests], "full", appendix_inputs(plan_all(manifests)), False)
    md, tex = render(appendix, "md"), render(appendix, "tex")
    assert "### Findings not tested" in md and first.why in md
    assert r"\subsection{Findings not tested}" in tex and len(appendix.untested) == len(shipped_untested())
