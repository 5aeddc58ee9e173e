"""Choices the audit found undeclared, each now a reading with its alternatives decided (repro/spec/readings.toml):
where the k = 1 head's routing is 'uniform', what the 0.25 ms and its 145x time, how small 'negligible' is, and how
a k = 2 MoEConv2d counts in rho."""

import copy

import pytest

from repro.claims import Evidence
from repro.claims.under_readings import decide_readings
from repro.core.schema import SchemaError, read_toml
from repro.plan.manifest import find_manifest
from repro.spec.readings import SHIPPED_READINGS, parse_readings, readings_by_id


def _entry(manifest, evidence, claim, recount=lambda row: None):
    """The claim's entry (an analytic claim's holds its re-read alternatives beside its counted ones)."""
    return next(e for e in decide_readings(manifest, evidence, recount) if e.claim == claim and e.kind != "trained")


def test_exactly_uniform_is_a_reading_decided_at_test_time_and_in_training():
    # Read on test-time routing the claim contradicts in_r18_test_routing_concentrates by construction; read on
    # training's dispatch (where Section 5.3 puts the capacity-enforced balance) it was only an assumption's sentence.
    t4 = find_manifest("table4")
    metrics = {f"rows.{r.id}.{k}": v for r in t4.rows for k, v in (("accuracy", {0: 0.7, 1: 0.71}), ("chance", 0.001))}
    metrics["rows.r18_h512_moe.routing_balance"] = {0: 0.55, 1: 0.6}  # concentrated at test time
    metrics["rows.r18_h512_moe.train_routing_balance"] = {0: 0.996, 1: 0.995}  # balanced under capacity
    ev = Evidence(
        "table4",
        "table4",
        "full",
        metrics=metrics,
        kind="paper",
        comparison_rows={c.id: (c.row, c.baseline) for c in t4.comparisons},
    )
    entry = _entry(t4, ev, "in_r18_k1_head_routing_uniform")
    (train,) = entry.alternatives
    assert (train.reading, train.alternative) == ("uniform-routing-when", "uniform_in_training")
    assert entry.chosen.status == "not reproduced" and train.status == "reproduced"
    assert entry.note().startswith("reproduced under the alternative reading 'the last training epoch's dispatch")


def test_the_145x_is_decided_under_the_head_alone_reading_of_the_025_ms():
    t7 = find_manifest("table7")
    metrics = {
        "rows.cifar100_dense.model_latency_ms": 0.3,
        "rows.cifar100_dense.latency_ms": 0.05,
        "comparisons.cifar100_sparse_loop.model_slowdown": 140.0,
        "comparisons.cifar100_sparse_loop.slowdown": 700.0,
    }
    ev = Evidence("table7", "table7", "full", metrics=metrics, kind="paper", device="cuda")
    slowdown = _entry(t7, ev, "cifar100_loop_slowdown")
    assert slowdown.chosen.status == "reproduced"
    assert [(o.alternative, o.status) for o in slowdown.alternatives] == [("dense_head_alone", "not reproduced")]
    dense = _entry(t7, ev, "cifar100_dense_025ms")
    assert [(o.alternative, o.status) for o in dense.alternatives] == [("dense_head_alone", "not reproduced")]
    statement = next(c.statement for c in t7.claims if c.id == "cifar100_dense_025ms")
    assert "the dense head itself is only 0.25 ms" in statement  # the text's words, not "the dense model"


def test_a_verdict_that_rests_on_the_negligible_band_shows_it_depends_on_the_band():
    t6 = find_manifest("table6")
    metrics = {f"rows.{r.id}.rho": 0.45 for r in t6.rows}
    metrics["rows.cifar10_std_moe.rho"], metrics["rows.cifar10_dw072_moe.rho"] = 0.0824, 0.49
    entry = _entry(t6, Evidence("table6", "table6", "smoke", metrics=metrics, kind="pipeline"), "depthwise_raises_rho")
    assert entry.chosen.status == "not reproduced"
    assert [(o.alternative, o.status) for o in entry.alternatives if o.reading == "negligible-band"] == [
        ("negligible_7pct", "not reproduced"),
        ("negligible_10pct", "reproduced"),
    ]
    assert (
        sum(
            e.claim == "depthwise_raises_rho"
            for e in decide_readings(
                t6, Evidence("table6", "table6", "smoke", metrics=metrics, kind="pipeline"), lambda row: None
            )
        )
        == 1
    )  # one line a claim
    assert entry.depends and "negligible-band/negligible_10pct" in entry.note()


def test_the_k2_count_convention_is_a_reading_that_moves_the_backbone_moes_rho():
    from repro.measure.flop_check import analytic_summary

    t6 = find_manifest("table6")
    reading = readings_by_id()["moe-conv-k-count"]
    (per_bank,) = reading.alternatives
    assert not reading.training_only(per_bank)  # it changes a count, so the readings table counts it
    rho = {}
    for row_id in ("r18_backbone_moe", "r18_backbone_moe_k1"):
        row = t6.row(row_id)
        twin = reading.vary(row, per_bank)
        rho[row_id] = (
            analytic_summary(row.dataset, row.backbone, row.head)["rho"],
            analytic_summary(twin.dataset, twin.backbone, twin.head)["rho"],
        )
    assert rho["r18_backbone_moe"] == (pytest.approx(0.452, abs=5e-4), pytest.approx(0.617, abs=5e-4))
    assert rho["r18_backbone_moe_k1"][0] == rho["r18_backbone_moe_k1"][1]  # k = 1: one convolution either way

    def recount(varied):
        return {"rho": rho[varied.base][1]} if varied.reading == "moe-conv-k-count/per_bank_convolutions" else None

    metrics = {f"rows.{r.id}.rho": 0.45 for r in t6.rows}
    metrics.update({f"rows.{r}.rho": chosen for r, (chosen, _) in rho.items()})
    entries = decide_readings(t6, Evidence("table6", "table6", "smoke", metrics=metrics, kind="pipeline"), recount)
    same = next(e for e in entries if e.claim == "backbone_moe_rho_independent_of_k")
    under = next(o for o in same.alternatives if o.reading == "moe-conv-k-count")
    assert same.chosen.status == "reproduced" and under.status == "not reproduced"


def test_a_kernel_mixing_moeconv_and_a_per_bank_one_compute_the_same_outputs():
    import torch

    from repro.models.moe_conv import MoEConv2d

    torch.manual_seed(0)
    mixed = MoEConv2d(4, 6, 3, num_experts=4, top_k=2, padding=1, bias=False).eval()
    per_bank = MoEConv2d(4, 6, 3, num_experts=4, top_k=2, padding=1, bias=False, mix_kernels=False).eval()
    per_bank.load_state_dict(mixed.state_dict())
    x = torch.randn(3, 4, 8, 8)
    assert mixed.mixes_kernels(64) and not per_bank.mixes_kernels(64)
    torch.testing.assert_close(mixed(x), per_bank(x), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    "mutate, message",
    [
        (
            lambda r: r["chosen"]["claims"].pop("table7/cifar100_loop_slowdown"),
            "gives 'table7/cifar100_loop_slowdown' no",
        ),
        (
            lambda r: r["alternatives"][0]["claims"].__setitem__("table7/loop_is_slowest", {"row": "x"}),
            "not a claim the reading names",
        ),
    ],
)
def test_a_reading_naming_several_claims_gives_each_its_parameters(mutate, message):
    doc = copy.deepcopy(read_toml(SHIPPED_READINGS))
    mutate(next(r for r in doc["readings"] if r["id"] == "dense-latency-scope"))
    with pytest.raises(SchemaError) as exc:
        parse_readings(doc, "readings.toml")
    assert any(message in p for p in exc.value.problems), exc.value.problems
