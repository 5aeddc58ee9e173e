"""Analytic FLOP formulas against fvcore and torch, module by module; rho golden values."""

import math

import pytest
import torch
from torch import nn

from repro.models import flops as F
from repro.data.specs import get_dataset
from repro.models.flops import count_flops
from repro.models import Component, build_model
from repro.models.classifier import Classifier

BACKBONES = [
    ("cifar10", "cifar_standard", {}),
    ("cifar10", "cifar_depthwise", {"width": 0.72}),
    ("cifar10", "cifar_depthwise_3block", {}),
    ("tiny_imagenet", "tiny_standard", {}),
    ("tiny_imagenet", "tiny_depthwise", {"width": 1.2}),
    ("imagenet", "resnet18", {}),
    ("imagenet", "mobilenet_v2", {}),
]
HEADS = [
    ("dense", {}),
    ("dense", {"hidden": []}),
    ("sparse_moe", {"expert_hidden": 64, "top_k": 1}),
    ("sparse_moe", {"expert_hidden": 64, "top_k": 2}),
    ("teacher_guided", {"expert_hidden": 64, "teacher_hidden": [1024, 64]}),
    ("relu_routed", {"expert_hidden": 64}),
    ("relu_routed", {"expert_hidden": 64, "expert_activation": "norm_silu"}),
    ("cluster_routed", {"expert_hidden": 64}),
    ("cluster_routed", {"expert_hidden": 64, "shared_rank": 16}),
    (
        "expert_choice",
        {"expert_hidden": 64},
    ),  # batch-axis heads: the traced batch-1 dispatch (tests/test_batch_axis_flops.py)
    ("soft_moe", {"expert_hidden": 64}),
    ("per_sample_soft_moe", {"expert_hidden": 64}),
]


def _count(dataset, backbone, bparams, head="dense", hparams=None):
    model = build_model(dataset, Component(backbone, bparams), Component(head, hparams or {}))
    return count_flops(model, get_dataset(dataset).input_shape)


@pytest.mark.slow
@pytest.mark.parametrize("dataset,backbone,params", BACKBONES)
def test_backbones_agree_three_ways(dataset, backbone, params):
    report = _count(dataset, backbone, params)
    assert report.problems == []
    convs = [m for m in report.modules if m.kind == "Conv2d"]
    assert convs and all(m.analytic == m.fvcore and 2 * m.analytic == m.torch for m in convs)


@pytest.mark.parametrize("head,params", HEADS)
def test_heads_agree_three_ways(head, params):
    report = _count("cifar10", "cifar_standard", {}, head, params)
    assert report.problems == []
    assert any(m.kind == "Linear" for m in report.modules)


def test_every_registered_head_is_counted_three_ways_above():
    from repro.models import HEADS as REGISTERED

    missing = sorted(set(REGISTERED.names()) - {name for name, _ in HEADS})
    assert not missing, f"add {missing} to HEADS in tests/test_flops.py, with small params, so its count is checked"


def test_cifar_standard_backbone_by_hand():
    # two blocks of two 3x3 convs (24, 48 channels), 2x2 pools: 32x32 -> 16x16 -> 8x8
    by_hand = (32 * 32 * 24 * 3 * 9 + 32 * 32 * 24 * 24 * 9) + (16 * 16 * 48 * 24 * 9 + 16 * 16 * 48 * 48 * 9)
    report = _count("cifar10", "cifar_standard", {}, "dense", {"hidden": []})
    assert report.backbone == by_hand
    assert report.head == 48 * 8 * 8 * 10


def test_depthwise_backbone_by_hand():
    # w = 0.72: round(24*.72) = 17, round(48*.72) = 35; each 3x3 -> depthwise 3x3 + pointwise 1x1
    def dws(hw, cin, cout):
        return hw * hw * cin * 9 + hw * hw * cin * cout

    by_hand = dws(32, 3, 17) + dws(32, 17, 17) + dws(16, 17, 35) + dws(16, 35, 35)
    assert _count("cifar10", "cifar_depthwise", {"width": 0.72}).backbone == by_hand


@pytest.mark.slow
def test_rho_resnet18_head_h512_k1_against_the_paper():
    report = _count("imagenet", "resnet18", {}, "sparse_moe", {"expert_hidden": 512, "top_k": 1})
    expert = 512 * 512 + 512 * 512 + 512 * 1000  # d_in -> h -> h -> 1000
    router = 512 * 8 + 512 * 64 + 64 * 8  # W_r, K, cosine with the 8 expert keys
    assert report.routed == expert + router
    assert report.backbone == 1_813_561_344  # torchvision ResNet-18 convolutions at 224x224
    assert report.rho == pytest.approx((expert + router) / (1_813_561_344 + expert + router))
    assert round(100 * report.rho, 2) == 0.06  # the paper's 0.06% (Section 4.5)


def test_second_convention_counts_norm_activation_pooling():
    report = _count("cifar10", "cifar_standard", {}, "dense", {"hidden": []})
    relu = 2 * 32 * 32 * 24 + 2 * 16 * 16 * 48
    pools = 32 * 32 * 24 + 16 * 16 * 48  # max pooling, one per input element
    assert report.total_all_ops - report.total == relu + pools


def test_a_wrong_formula_is_caught_and_names_the_module(monkeypatch):
    monkeypatch.setitem(F.OWN_MACS, nn.Conv2d, lambda m, s: F.conv2d_macs(m, s) + 1)
    report = _count("cifar10", "cifar_standard", {})
    assert not report.ok
    (wrong,) = [p for p in report.problems if p.startswith("module 'backbone.blocks.0.0' (Conv2d): analytic")]
    assert wrong.endswith("MACs; its formula is OWN_MACS[Conv2d] (repro.models.flops)")
    ancestors = [p for p in report.problems if "(Conv2d)" not in p]  # the blocks, the backbone, the model
    assert ancestors and all(p.endswith("MACs") for p in ancestors)  # they only add the convolutions up


class _Cdist(nn.Module):
    def forward(self, h):
        return torch.cdist(h, h)[:, :10]  # an op fvcore has no formula for


def test_an_op_fvcore_cannot_count_is_a_failure_naming_the_module():
    backbone = build_model("cifar10", Component("cifar_standard"), Component("dense")).backbone
    report = count_flops(Classifier(backbone, _Cdist()), (3, 32, 32))
    (problem,) = [
        p for p in report.problems if p.startswith("module 'head' (_Cdist): fvcore cannot count op aten::cdist")
    ]
    assert problem.endswith("an op that performs no multiply-add is listed in repro.models.flop_counters.NON_MAC_OPS")


class _MatmulInForward(nn.Module):
    """Multiplies in its own forward with a weight of its own, as a new head might: no formula counts it."""

    def __init__(self) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(48 * 8 * 8, 10))
        self.out = nn.Linear(10, 10)

    def forward(self, h):
        return self.out(h @ self.weight)


def test_a_module_that_computes_outside_its_children_without_a_formula_is_told_where_one_goes():
    # Its disagreement named the module and three numbers, not why the analytic count was short or what to add
    backbone = build_model("cifar10", Component("cifar_standard"), Component("dense")).backbone
    report = count_flops(Classifier(backbone, _MatmulInForward()), (3, 32, 32))
    (head,) = [p for p in report.problems if p.startswith("module 'head' (_MatmulInForward): analytic 100 vs fvcore")]
    assert head.endswith(
        "_MatmulInForward has no formula of its own (counted 0): a module that computes outside its children "
        "carries own_macs(shapes), repro.models.flops.CountsOwnMacs"
    )
    (model,) = [p for p in report.problems if p.startswith("module '<model>'")]
    assert model.endswith("MACs")  # the whole model only adds the head's up


@pytest.mark.slow
def test_routed_modules_of_the_backbone_moe():
    model = build_model("imagenet", Component("resnet18_moeconv"), Component("dense", {"hidden": []}))
    names = model.routed_module_names()
    assert len(names) == 8 and all(".layer3." in n or ".layer4." in n for n in names)
    assert math.isclose(sum(1 for n in names if n.endswith("conv1")), 4)


class _PoolsInForward(nn.Module):
    """Pools functionally inside its own forward, as torchvision's MobileNetV2 does."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.out_features = 8

    def forward(self, x):
        return torch.flatten(torch.nn.functional.adaptive_avg_pool2d(torch.relu(self.conv(x)), 1), 1)


class _PoolsInModule(_PoolsInForward):
    def __init__(self) -> None:
        super().__init__()
        self.act, self.pool = nn.ReLU(), nn.AdaptiveAvgPool2d(1)

    def forward(self, x):
        return torch.flatten(self.pool(self.act(self.conv(x))), 1)


def test_functional_pooling_in_a_forward_counts_as_a_pooling_module_does():
    head = nn.Linear(8, 4)
    functional = count_flops(Classifier(_PoolsInForward(), head), (3, 6, 6))
    modular = count_flops(Classifier(_PoolsInModule(), head), (3, 6, 6))
    elements = 8 * 6 * 6  # the ReLU's and the pool's input, one each per element
    assert functional.total == modular.total == 8 * 6 * 6 * 27 + 8 * 4
    assert functional.total_all_ops - functional.total == 2 * elements
    assert functional.total_all_ops == modular.total_all_ops


def test_a_count_runs_on_one_thread_and_restores_the_callers(two_threads):
    """Batch-1 passes on one intra-op thread (on a busy host more threads only spin); the caller's count is kept."""
    model = build_model("cifar10", Component("cifar_standard"), Component("dense", {"hidden": []}))
    seen = []
    model.backbone.register_forward_hook(lambda *_: seen.append(torch.get_num_threads()))
    count_flops(model, get_dataset("cifar10").input_shape)
    assert seen and set(seen) == {1}
    assert torch.get_num_threads() == 2


def test_a_count_whose_ops_depend_on_the_weights_is_the_same_whatever_the_random_state():
    """The ReLU-routed head opens its gates per input, so its executed ops depend on its initial weights:
    repro.measure.flop_check builds every counted model from one fixed seed, and leaves the caller's stream alone."""
    from repro.measure.flop_check import _flops_for, model_key

    key = model_key("cifar10", Component("cifar_depthwise"), Component("relu_routed", {"expert_hidden": 128}))
    counts = []
    for seed in (1, 2):
        _flops_for.cache_clear()
        torch.manual_seed(seed)
        counts.append(_flops_for(key).rho_all_ops)
        assert torch.initial_seed() == seed  # the caller's random stream is not reseeded
    assert counts[0] == counts[1]


@pytest.mark.parametrize("count", [count_flops, F.count_analytic])
def test_a_count_is_made_in_evaluation_mode_and_gives_each_module_its_mode_back(count):
    """A model counted in the middle of its training goes on training; a module the caller keeps in evaluation mode
    (a frozen BatchNorm) stays there."""
    model = build_model(
        "cifar10", Component("cifar_depthwise", {"width": 0.5}), Component("sparse_moe", {"expert_hidden": 32})
    ).train()
    model.backbone.eval()
    seen = []
    model.head.register_forward_hook(lambda m, *_: seen.append(m.training))
    count(model, get_dataset("cifar10").input_shape)
    assert seen and not any(seen)  # counted in evaluation mode: plain top-k, no capacity
    assert model.training and model.head.training and model.head.experts.training
    assert not model.backbone.training and not any(m.training for m in model.backbone.modules())


@pytest.mark.parametrize("count", [count_flops, F.count_analytic])
def test_a_model_that_is_not_a_classifier_is_refused_saying_how_to_wrap_it(count):
    with pytest.raises(TypeError, match=r"got Sequential: wrap yours as repro\.models\.classifier\.Classifier"):
        count(nn.Sequential(nn.Conv2d(3, 4, 3), nn.Flatten()), (3, 8, 8))


@pytest.mark.parametrize(
    "shape, batch, expected",
    [
        # a (H, W) shape or a batched (B, C, H, W) one failed in the backbone's first conv, naming neither
        ((16, 16), 1, "input_shape must be one image's (C, H, W), positive ints, got (16, 16)"),
        ((2, 3, 16, 16), 1, "input_shape must be one image's (C, H, W), positive ints, got (2, 3, 16, 16)"),
        ((3, 0, 16), 1, "input_shape must be one image's (C, H, W), positive ints, got (3, 0, 16)"),
        # batch 0 raised ZeroDivisionError
        ((3, 16, 16), 0, "batch must be a positive int (the batch the model trains with), got 0"),
    ],
)
def test_count_flops_refuses_a_shape_or_batch_it_cannot_count_naming_the_argument(shape, batch, expected):
    model = Classifier(nn.Sequential(nn.Conv2d(3, 4, 3), nn.AdaptiveAvgPool2d(1), nn.Flatten()), nn.Linear(4, 2))
    with pytest.raises(ValueError) as caught:
        count_flops(model, shape, batch=batch)
    assert expected in str(caught.value)


def test_the_report_and_the_classifier_say_what_they_hold():
    # help(FlopReport) named no field (what total_all_ops or mean_shift is), and help(Classifier), which count_flops
    # requires, said nothing of what the backbone must return
    import dataclasses

    doc = " ".join((F.FlopReport.__doc__ or "").split())
    missing = [f.name for f in dataclasses.fields(F.FlopReport) if f"{f.name}:" not in doc]
    assert not missing, f"FlopReport's docstring does not give {missing}"
    assert all(f"{p}:" in doc for p in ("rho", "rho_all_ops", "head_share"))
    assert "(B, in_features)" in (Classifier.__doc__ or "")
