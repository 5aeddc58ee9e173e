"""repro.cost.claim_cost: a claim costs what the cost model prices for the rows it reads, labelled as the model
labels it."""

import dataclasses

import pytest

from repro.cost import calibration as cal
from repro.cost import estimate as est
from repro.cost.claim_cost import claim_cost, claim_plan
from repro.cost.wall_time import Rate, Rates
from repro.plan.table_plan import build_plan
from inline_manifests import inline_manifest

GPU = cal.Throughput("A100", "gpu", 1e12, 0.003, "reference, not measured: test")


@pytest.fixture
def fixed(monkeypatch, tmp_path):
    monkeypatch.setattr(est, "gpu_throughput", lambda *a: GPU)
    monkeypatch.setattr(est, "estimate_macs", lambda *a: {"backbone_macs": 1e6, "head_macs": 1e5})
    return lambda: est.CostModel(data_dir=tmp_path / "data", cache=tmp_path / "cache")


def _row(i, measures=("flops", "accuracy"), hidden=64):
    return {
        "id": i,
        "label": i,
        "dataset": "cifar10",
        "measures": list(measures),
        "backbone": {"name": "cifar_standard"},
        "head": {"name": "dense", "hidden": [hidden]},
    }


MANIFEST = {
    "id": "t",
    "title": "T",
    "paper_ref": "Table 1",
    "description": "d",
    "paper_table": "table1",
    "profiles": {"full": {"description": "f", "evidence": "paper", "device": "cuda", "seeds": 3}},
    "rows": [_row("a"), _row("b", hidden=32), _row("c", hidden=16), _row("f", ("flops",), 8)],
    "comparisons": [
        {"id": "ab", "label": "ab", "row": "a", "baseline": "b"},
        {"id": "cb", "label": "cb", "row": "c", "baseline": "b"},
    ],
    "claims": [
        {
            "id": "one",
            "statement": "s",
            "section": "1",
            "scope": "empirical",
            "rule": "row_above",
            "row": "a",
            "baseline": "b",
        },
        {
            "id": "all",
            "statement": "s",
            "section": "1",
            "scope": "empirical",
            "rule": "gap_order",
            "comparisons": ["ab", "cb"],
        },
        {
            "id": "count",
            "statement": "s",
            "section": "1",
            "scope": "analytic",
            "rule": "compare",
            "metric": "rows.f.rho",
            "relation": "<",
            "bound": 0.5,
            "kind": "property",
        },
    ],
}


def test_a_claim_costs_the_runs_of_the_rows_it_reads(fixed):
    m = inline_manifest(MANIFEST)
    model = fixed()
    one, every = (claim_cost(build_plan(m, "full"), c, model) for c in m.claims[:2])
    assert one.runs == 2 * 3 and every.runs == 3 * 3  # rows x seeds, each run once
    trained = dataclasses.replace(m, rows=m.rows[:3])
    assert every.device_seconds == pytest.approx(model.cost([build_plan(trained, "full")]).device_seconds)
    two_rows = build_plan(dataclasses.replace(m, rows=m.rows[:2]), "full")
    assert one.device_seconds == pytest.approx(model.cost([two_rows]).device_seconds)
    assert (one.kind, one.device_basis) == ("gpu", "reference")
    assert one.text().endswith("(6 runs, reference)")
    assert one.text().startswith(est.device_time(one.device_seconds, "gpu"))


def test_a_claim_on_counts_alone_costs_its_counting_at_the_rate_and_basis_given(fixed):
    m = inline_manifest(MANIFEST)
    rates = Rates(flop_model=Rate(2.0, "fitted", "test"))
    count = claim_cost(build_plan(m, "full"), m.claims[2], fixed(), rates)
    assert count.runs == 0 and count.device_seconds == 0
    assert (count.counting_seconds, count.counting_basis, count.basis) == (2.0, "fitted", "fitted")  # one model
    assert count.text() == "~2.0 s wall, no training (fitted)"


def test_an_analytic_claim_on_trained_rows_costs_their_counting_not_their_runs(fixed):
    """Table 3's tiny_flops_reduction_negligible reads a comparison's FLOP reduction: the appendix priced it at
    its two rows' training (2.8 GPU-h) though counting decides it."""
    on_counts = {**MANIFEST["claims"][2], "id": "reduction", "metric": "comparisons.ab.flops_reduction"}
    m = inline_manifest({**MANIFEST, "claims": [*MANIFEST["claims"], on_counts]})
    rates = Rates(flop_model=Rate(2.0, "fitted", "test"))
    model = fixed()
    reduction = claim_cost(build_plan(m, "full"), m.claims[3], model, rates)
    assert (reduction.runs, reduction.device_seconds) == (0, 0.0)
    assert reduction.counting_seconds == 2 * 2.0 and reduction.text() == "~4.0 s wall, no training (fitted)"
    empirical = dataclasses.replace(m.claims[3], scope="empirical")  # the same rows, read for their accuracy
    assert claim_cost(build_plan(m, "full"), empirical, model, rates).runs == 2 * 3


def test_the_claims_table_keeps_only_its_rows_and_the_comparisons_between_them():
    m = inline_manifest(MANIFEST)
    own = claim_plan(build_plan(m, "full"), m.claims[0]).manifest
    assert [r.id for r in own.rows] == ["a", "b"] and [c.id for c in own.comparisons] == ["ab"]
    assert own.profiles == m.profiles and own.id == m.id  # priced as the table it is part of
