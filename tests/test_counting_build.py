"""Models built to be counted (repro.models.zero_banks): expert banks hold zeros, and every count is unchanged."""

from contextlib import nullcontext

import pytest
import torch

from repro.models.flops import count_flops
from repro.models import Component, build_model
from repro.models.moe_conv import MoEConv2d
from repro.models.zero_banks import built_for_counting, counting
from repro.spec.recipes import at_last_epoch

MODELS = [  # every head kind that holds an expert bank, and the backbone MoE (Table 5) on both of its readings
    ("cifar10", "cifar_standard", {}, "sparse_moe", {"expert_hidden": 64, "top_k": 2}),
    ("cifar10", "cifar_depthwise", {"width": 0.72}, "soft_moe", {"expert_hidden": 64}),
    ("cifar10", "cifar_standard", {}, "per_sample_soft_moe", {"expert_hidden": 64}),
    ("cifar10", "cifar_standard", {}, "expert_choice", {"expert_hidden": 64}),
    ("cifar10", "cifar_standard", {}, "relu_routed", {"expert_hidden": 64}),
    ("cifar10", "cifar_standard", {}, "cluster_routed", {"expert_hidden": 64, "shared_rank": 16}),
    ("cifar10", "cifar_standard", {}, "teacher_guided", {"expert_hidden": 64, "teacher_hidden": [1024, 64]}),
    ("imagenet", "resnet18_moeconv", {"top_k": 2}, "dense", {}),
    ("imagenet", "resnet18_moeconv", {"top_k": 1, "routed": "stride1"}, "dense", {}),
]


def _build(dataset, backbone, bparams, head, hparams, for_counting):
    with torch.random.fork_rng(devices=[]), built_for_counting() if for_counting else nullcontext():
        torch.manual_seed(0)
        return build_model(dataset, Component(backbone, bparams), Component(head, hparams))


def _banks(model):
    banks = [m.weight for m in model.modules() if isinstance(m, MoEConv2d)]
    experts = [m.experts for m in model.modules() if hasattr(m, "experts") and hasattr(m.experts, "weights")]
    return banks + [w for bank in experts for w in bank.weights]


@pytest.mark.parametrize("dataset,backbone,bparams,head,hparams", MODELS, ids=lambda v: v if isinstance(v, str) else "")
def test_a_model_built_to_be_counted_holds_zero_banks_and_counts_the_same(dataset, backbone, bparams, head, hparams):
    trained = _build(dataset, backbone, bparams, head, hparams, False)
    counted = _build(dataset, backbone, bparams, head, hparams, True)
    banks = _banks(counted)
    assert banks and all(float(w.detach().abs().max()) > 0 for w in _banks(trained))
    if backbone == "resnet18_moeconv":  # experts start as copies of the conv they replace: no noise drawn
        assert all(float((w - w[:1]).detach().abs().max()) == 0 for w in banks)
    else:
        assert all(float(w.detach().abs().max()) == 0 for w in banks)
    shape = (3, 32, 32) if dataset == "cifar10" else (3, 224, 224)
    a = count_flops(at_last_epoch(trained, dataset), shape)
    b = count_flops(at_last_epoch(counted, dataset), shape)
    assert a.problems == b.problems == []  # the executed dispatch agrees three ways in both
    assert (a.total, a.backbone, a.head, a.routed, a.routed_modules) == (
        b.total,
        b.backbone,
        b.head,
        b.routed,
        b.routed_modules,
    )


def test_the_counting_build_ends_with_its_block_even_when_the_block_fails():
    assert not counting()
    with pytest.raises(RuntimeError), built_for_counting():
        assert counting()
        raise RuntimeError("a build that fails")
    assert not counting()
    model = _build("cifar10", "cifar_standard", {}, "sparse_moe", {"expert_hidden": 64}, False)
    assert all(float(w.detach().abs().max()) > 0 for w in _banks(model))
