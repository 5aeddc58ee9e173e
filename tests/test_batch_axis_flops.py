"""Per-image FLOPs of the batch-axis heads (Expert Choice, Soft MoE) at the batch they train with.

The formula each head states (`batch_macs`, `expected_macs`) is checked against torch's FlopCounterMode on a
forward over B images of the paper's rows' shapes, and the report puts the head at the recipe's batch. The
per-sample heads (sparse MoE, per-sample Soft MoE) cost the same at any batch.
"""

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from repro.data.specs import get_dataset
from repro.measure.flop_check import analytic_summary, counted_batch
from repro.models import build_model
from repro.models.flops import count_analytic
from repro.plan.manifest import find_manifest
from repro.spec.recipes import RECIPES


def _rows(names: tuple[str, ...], datasets: tuple[str, ...]) -> list:
    rows = [r for m in ("table8", "table9") for r in find_manifest(m).rows]
    return [r for r in rows if r.head.name in names and r.dataset in datasets]


BATCH_AXIS = _rows(("expert_choice", "soft_moe"), ("cifar100", "imagenet"))
PER_SAMPLE = _rows(("sparse_moe", "per_sample_soft_moe"), ("cifar100", "imagenet"))


def _model(row):
    """The row's model on the meta device, then given random values: counts read shapes, never weights."""
    with torch.device("meta"):
        model = build_model(row.dataset, row.backbone, row.head)
    model = model.to_empty(device="cpu").eval()
    torch.manual_seed(0)
    with torch.no_grad():
        for p in model.head.parameters():
            p.normal_()
    return model


def _torch_head_macs(head, batch: int) -> float:
    """torch's count of one forward of `head` over `batch` feature vectors, in multiply-adds (FLOPs / 2)."""
    counter = FlopCounterMode(display=False)
    with torch.no_grad(), counter:
        head(torch.randn(batch, head.experts.in_features))
    return counter.get_total_flops() / 2


def test_the_rows_cover_both_heads_on_cifar100_and_imagenet():
    assert {(r.head.name, r.dataset) for r in BATCH_AXIS} == {
        (h, d) for h in ("expert_choice", "soft_moe") for d in ("cifar100", "imagenet")
    }
    assert {r.head.name for r in PER_SAMPLE} == {"sparse_moe", "per_sample_soft_moe"}


@pytest.mark.parametrize("row", BATCH_AXIS, ids=lambda r: f"{r.dataset}-{r.head.name}")
def test_formula_is_torchs_count_of_a_batch_forward(row):
    head = _model(row).head
    for batch in (1, 2, 3, 9, 100, RECIPES[row.dataset].batch_size):
        macs = _torch_head_macs(head, batch)
        assert head.batch_macs(batch) == macs, batch
        assert head.expected_macs(batch) == round(macs / batch), batch


@pytest.mark.parametrize("row", BATCH_AXIS, ids=lambda r: f"{r.dataset}-{r.head.name}")
def test_report_counts_the_head_per_image_at_the_recipe_batch(row):
    model, shape = _model(row), get_dataset(row.dataset).input_shape
    batch = counted_batch(row.dataset)
    assert batch == RECIPES[row.dataset].batch_size
    alone, at_batch = count_analytic(model, shape), count_analytic(model, shape, batch)
    assert alone.batch == 1 and at_batch.batch == batch
    assert alone.head == _torch_head_macs(model.head, 1)  # at B = 1 the report is the traced dispatch
    assert at_batch.head == round(_torch_head_macs(model.head, batch) / batch)
    assert at_batch.backbone == alone.backbone and at_batch.routed == alone.routed - (alone.head - at_batch.head)
    assert at_batch.head < alone.head  # a batch of one hands every expert (slot) to the one image


@pytest.mark.parametrize("row", PER_SAMPLE, ids=lambda r: f"{r.dataset}-{r.head.name}")
def test_per_sample_heads_cost_the_same_at_any_batch(row):
    model, shape = _model(row), get_dataset(row.dataset).input_shape
    one = count_analytic(model, shape)
    batch = RECIPES[row.dataset].batch_size
    at_batch = count_analytic(model, shape, batch)
    assert at_batch.batch is None and at_batch.mean_shift == 0
    assert (at_batch.total, at_batch.head, at_batch.routed) == (one.total, one.head, one.routed)
    assert _torch_head_macs(model.head, batch) == batch * one.head


def test_threshold_methods_quotes_the_counted_rho_on_cifar100():
    """table6's assumption threshold-methods quotes these heads' CIFAR-100 rho: the figures the count gives."""
    text = {a.id: a.text for a in find_manifest("table6").assumptions}["threshold-methods"]
    rows = {
        r.head.name: r for r in find_manifest("table8").rows + find_manifest("table9").rows if r.dataset == "cifar100"
    }
    for name, label in [
        ("per_sample_soft_moe", "per-sample Soft MoE"),
        ("soft_moe", "batch-axis Soft MoE"),
        ("expert_choice", "Expert Choice"),
    ]:
        row = rows[name]
        assert f"{label} {analytic_summary(row.dataset, row.backbone, row.head)['rho']:.1%}" in text, name


def test_the_report_names_the_batch_of_the_batch_axis_rows():
    from repro.report.table_rows import flops_table
    from repro.results.measurements import ManifestResult, Measured

    manifest = find_manifest("table8")
    rows = [r for r in manifest.rows if r.id in ("c100_soft", "c100_per_sample_soft", "imagenet_soft")]
    details = {
        r.id: count_analytic(_model(r), get_dataset(r.dataset).input_shape, counted_batch(r.dataset)).summary()
        for r in rows
    }
    result = ManifestResult("table8", "", "", "table8", "full", Measured(details={"flops": details}), [], {})
    notes = [n for n in flops_table(manifest, result).notes if "batch-axis-flops" in n]
    assert notes == [
        f"c100_soft: per image in a training batch of {RECIPES['cifar100'].batch_size}, not of one "
        "(assumption batch-axis-flops).",
        f"imagenet_soft: per image in a training batch of {RECIPES['imagenet'].batch_size}, not of one "
        "(assumption batch-axis-flops).",
    ]
