"""The backbone and head registries, filled here explicitly and readable without torch.

Each builder is named lazily ("module:function") and imported when a model is
built; the configs come from repro.models.configs. A backbone builder takes
(input_shape, pretrained=False, **params); a head builder takes
(in_features, num_classes, **params). Beside each entry, as timm keeps a model's
pretrained settings beside it: a backbone's torchvision weights (BackboneInfo), and
whether the functional learning check gates a head (HeadInfo).
"""

from __future__ import annotations

from dataclasses import dataclass

from repro.models.configs import (
    ClusterRoutedConfig,
    ConvBackboneConfig,
    DenseHeadConfig,
    ExpertChoiceConfig,
    MoEConvBackboneConfig,
    PerSampleSoftMoEConfig,
    SoftMoEConfig,
    ReluRoutedConfig,
    SparseMoEConfig,
    TeacherGuidedConfig,
    TorchvisionConfig,
)
from repro.core.registry import Registry


@dataclass(frozen=True)
class BackboneInfo:
    # The torchvision weights enum whose IMAGENET1K_V1 a pretrained start loads (repro.models.weights); None:
    # trained from random initialisation. resnet18_moeconv starts from ResNet-18's (Section 4.6).
    weights: str | None = None


@dataclass(frozen=True)
class HeadInfo:
    # One of the paper's two methods under test in every table (dense and sparse MoE): every seed must
    # learn at the functional profile, else `repro verify-all` fails (repro.report.learning).
    gated: bool = False
    bf16_check: bool = False  # `repro bench gpu` checks its bf16 forward against fp32 (repro.bench.expert_choice_bf16)


BACKBONES = Registry("backbone")
HEADS = Registry("head")

_CONV = "repro.models.backbones:build_conv"
BACKBONES.add(
    "cifar_standard",
    _CONV,
    ConvBackboneConfig,
    "CIFAR standard CNN: two blocks, 24/48 channels",
    defaults={"channels": (24, 48)},
)
BACKBONES.add(
    "cifar_depthwise",
    _CONV,
    ConvBackboneConfig,
    "CIFAR depthwise-separable CNN, 24/48 x w",
    defaults={"channels": (24, 48), "depthwise": True},
)
BACKBONES.add(
    "cifar_depthwise_3block",
    _CONV,
    ConvBackboneConfig,
    "CIFAR w=2.0 headline variant: three depthwise blocks (24/48/96 x w) with BatchNorm",
    defaults={"channels": (24, 48, 96), "depthwise": True, "batch_norm": True, "width": 2.0},
)
BACKBONES.add(
    "tiny_standard",
    _CONV,
    ConvBackboneConfig,
    "Tiny-ImageNet standard CNN: 32/64/128 with BatchNorm",
    defaults={"channels": (32, 64, 128), "batch_norm": True},
)
BACKBONES.add(
    "tiny_depthwise",
    _CONV,
    ConvBackboneConfig,
    "Tiny-ImageNet depthwise-separable CNN: 32/64/128 x w with BatchNorm",
    defaults={"channels": (32, 64, 128), "depthwise": True, "batch_norm": True},
)
BACKBONES.add(
    "resnet18",
    "repro.models.backbones:build_resnet18",
    TorchvisionConfig,
    "torchvision ResNet-18, 512-d pooled features",
    info=BackboneInfo(weights="ResNet18_Weights"),
)
BACKBONES.add(
    "mobilenet_v2",
    "repro.models.backbones:build_mobilenet_v2",
    TorchvisionConfig,
    "torchvision MobileNet-V2, 1280-d pooled features",
    info=BackboneInfo(weights="MobileNet_V2_Weights"),
)
BACKBONES.add(
    "resnet18_moeconv",
    "repro.models.moe_conv:build_resnet18_moeconv",
    MoEConvBackboneConfig,
    "ResNet-18 with MoEConv2d in layer3/layer4 (E=8, k=2)",
    info=BackboneInfo(weights="ResNet18_Weights"),
)

HEADS.add(
    "dense",
    "repro.models.heads:build_dense",
    DenseHeadConfig,
    "dense MLP head (the paper's Dense baseline)",
    info=HeadInfo(gated=True),
)
HEADS.add(
    "sparse_moe",
    "repro.models.sparse_moe:build_sparse_moe",
    SparseMoEConfig,
    "the paper's sparse top-k MoE head with hard capacity",
    info=HeadInfo(gated=True),
)
HEADS.add(
    "expert_choice",
    "repro.models.expert_choice:build_expert_choice",
    ExpertChoiceConfig,
    "Expert Choice routing: experts pick top-C samples",
    info=HeadInfo(bf16_check=True),
)
HEADS.add(
    "soft_moe",
    "repro.models.soft_moe:build_soft_moe",
    SoftMoEConfig,
    "Soft MoE with the batch as token group (batch-axis dispatch)",
)
HEADS.add(
    "per_sample_soft_moe",
    "repro.models.per_sample_soft_moe:build_per_sample_soft_moe",
    PerSampleSoftMoEConfig,
    "per-sample soft gating over experts (Section 3.5)",
)
# Beyond the paper (issue 17): routers from related work over the same experts.
HEADS.add(
    "teacher_guided",
    "repro.models.teacher_guided:build_teacher_guided",
    TeacherGuidedConfig,
    "the sparse head with its router supervised by the dense twin's k-means assignment (TGR-MoE analogue)",
)
HEADS.add(
    "relu_routed",
    "repro.models.relu_routed:build_relu_routed",
    ReluRoutedConfig,
    "ReLU gates with expert-wise scales and an adaptive L1 sparsity target (DECO analogue)",
)
HEADS.add(
    "cluster_routed",
    "repro.models.cluster_routed:build_cluster_routed",
    ClusterRoutedConfig,
    "router trained on k-means labels of backbone features, optional shared-basis experts (CLEAR-MoE analogue)",
)


def backbone_info(name: str) -> BackboneInfo:
    return BACKBONES.get(name).info or BackboneInfo()


def head_info(name: str) -> HeadInfo:
    return HEADS.get(name).info or HeadInfo()
