"""The shipped multiply-adds table (repro.measure.model_macs): complete for the shipped manifests, equal to the
count from each model's shapes, and what the cost estimates read instead of counting."""

import pytest

import repro.measure.flop_check as flops
from repro.plan.manifest import load_all
from repro.plan.table_plan import plan_all
from repro.measure.model_macs import MACS_FILE, needed_keys, shipped_macs
from repro.models import HEADS, Component

REGENERATE = "run `python tools/write_model_macs.py` and commit repro/measure/model_macs.json"


def test_every_model_the_shipped_manifests_estimate_has_an_entry():
    missing = sorted(k for k in needed_keys(plan_all(load_all())) if shipped_macs(k) is None)
    assert not missing, f"{len(missing)} models missing from {MACS_FILE.name}, first {missing[0]}; {REGENERATE}"


def test_an_estimate_of_a_shipped_model_neither_counts_nor_reads_a_cache(monkeypatch, tmp_path):

    def refuse(*args, **kwargs):
        raise AssertionError("a shipped model was counted")

    monkeypatch.setattr(flops, "_shape_macs", refuse)
    row = next(m for m in load_all() if m.id == "table1").row("std_h2048_moe")
    macs = flops.estimate_macs(row.dataset, row.backbone, row.head, cache=tmp_path)  # empty: a cold start
    assert macs == shipped_macs(flops.row_key(row)) and macs["head_macs"] > 0
    assert not any(tmp_path.iterdir())


def test_a_model_of_ones_own_is_counted_and_cached(monkeypatch, tmp_path):
    calls = []
    monkeypatch.setattr(flops, "_shape_macs", lambda key: calls.append(key) or {"backbone_macs": 7, "head_macs": 3})
    args = ("cifar10", Component("cifar_standard", {"width": 0.3}), Component("dense"))
    assert flops.estimate_macs(*args, cache=tmp_path) == {"backbone_macs": 7, "head_macs": 3}
    assert flops.estimate_macs(*args, cache=tmp_path) == {"backbone_macs": 7, "head_macs": 3} and len(calls) == 1
    assert any((tmp_path / "macs").iterdir())


@pytest.mark.slow
def test_every_entry_equals_the_count_from_the_models_shapes():
    """The analytic count of each model from its layer shapes (about a minute on 2 cores)."""
    stale = []
    for key in sorted(needed_keys(plan_all(load_all()))):
        counted = flops._shape_macs(key)
        if shipped_macs(key) != counted:
            stale.append(f"{key}: shipped {shipped_macs(key)}, counted {counted}")
    assert not stale, f"{len(stale)} stale entries, first {stale[0]}; {REGENERATE}"


# Every registered head (a new one is covered without a line here), small, and the variants that count differently.
SMALL = {"dense": {}, "sparse_moe": {"expert_hidden": 64, "top_k": 2}}
HEAD_KINDS = [(name, SMALL.get(name, {"expert_hidden": 64})) for name in HEADS.names()] + [
    ("cluster_routed", {"expert_hidden": 64, "shared_rank": 16}),
]


@pytest.mark.parametrize("head,params", HEAD_KINDS)
def test_the_estimate_from_shapes_is_the_three_way_checks_count_for_every_head_kind(head, params):
    """The cost estimates (and the shipped table) count what the FLOP check reports: for a ReLU-routed head,
    its mean experts a sample, not the none its plain values open (ext_routers' std_h128_relu: 24,576 head
    MACs before, against the check's 681,984)."""
    backbone = Component("cifar_standard")
    checked = flops.model_flops("cifar10", backbone, Component(head, params))
    key = flops.model_key("cifar10", backbone, Component(head, params))
    assert flops._shape_macs(key) == {"backbone_macs": checked.backbone, "head_macs": checked.head}
