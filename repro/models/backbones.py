"""Backbones of Section 4.1: small CIFAR / Tiny-ImageNet CNNs and torchvision ImageNet nets.

Shapes: B batch, C channels, H x W spatial, F backbone output features.

The paper gives the channel widths (24/48 on CIFAR, 32/64/128 on Tiny-ImageNet),
the depthwise substitution (a depthwise 3x3 followed by a pointwise 1x1, scaled by
the width factor w) and where BatchNorm is used. What it leaves open is recorded
in each manifest's assumptions: two 3x3 convolutions per block followed by 2x2
max pooling, and features taken by flattening the last block's map.
"""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

from repro.models.catalog import BACKBONES  # noqa: F401  (re-exported)
from repro.models.configs import ConvBackboneConfig, TorchvisionConfig  # noqa: F401


def _he_init(conv: nn.Conv2d, relu_follows: bool) -> None:
    """He et al. (2015) fan-in init: Var(w) = gain^2 / fan_in keeps activations at unit scale.

    gain sqrt(2) where a ReLU follows, 1 for the depthwise 3x3 (fan_in 9), which feeds the
    pointwise 1x1 directly. PyTorch's default has Var(w) = 1 / (3 fan_in): each separable
    unit then shrinks the signal's second moment ~18x, and its uniform biases (up to 1/3 at
    fan_in 9) leave features almost input-independent at init (tools/investigate/FINDINGS.md).
    """
    nn.init.kaiming_normal_(conv.weight, mode="fan_in", nonlinearity="relu" if relu_follows else "linear")
    if conv.bias is not None:
        nn.init.zeros_(conv.bias)


def _conv3x3(cin: int, cout: int, cfg: ConvBackboneConfig) -> list[nn.Module]:
    bias = not cfg.batch_norm
    if cfg.depthwise:
        convs = [
            nn.Conv2d(cin, cin, 3, padding=1, groups=cin, bias=bias),  # depthwise 3x3
            nn.Conv2d(cin, cout, 1, bias=bias),  # pointwise 1x1
        ]
    else:
        convs = [nn.Conv2d(cin, cout, 3, padding=1, bias=bias)]
    if cfg.init == "he":
        for conv in convs:
            _he_init(conv, relu_follows=conv is convs[-1])
    layers: list[nn.Module] = [*convs]
    if cfg.batch_norm:
        layers.append(nn.BatchNorm2d(cout))
    layers.append(nn.ReLU(inplace=True))
    return layers


class ConvBackbone(nn.Module):
    """Blocks of [3x3 conv (or depthwise-separable) -> (BN) -> ReLU] x n, then 2x2 max pool."""

    def __init__(self, cfg: ConvBackboneConfig, input_shape: tuple[int, int, int]) -> None:
        super().__init__()
        self.cfg = cfg
        cin, size, _ = input_shape
        blocks = []
        for cout in cfg.widths():
            layers: list[nn.Module] = []
            for _ in range(cfg.convs_per_block):
                layers += _conv3x3(cin, cout, cfg)
                cin = cout
            layers.append(nn.MaxPool2d(2))
            size //= 2
            blocks.append(nn.Sequential(*layers))
        self.blocks = nn.Sequential(*blocks)
        if cfg.features == "gap":
            self.to_features: nn.Module = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten())
            self.out_features = cin
        else:
            self.to_features = nn.Flatten()
            self.out_features = cin * size * size

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (B, 3, H, W) -> (B, F)
        return self.to_features(self.blocks(x))


def build_conv(input_shape: tuple[int, int, int], pretrained: bool = False, **params) -> nn.Module:
    """The CNNs of Section 4.1; each registry entry (repro.models.catalog) gives its defaults."""
    return ConvBackbone(ConvBackboneConfig(**params), input_shape)


class TorchvisionFeatures(nn.Module):
    """A torchvision classifier with its last layer removed: (B, 3, 224, 224) -> (B, F)."""

    def __init__(self, net: nn.Module, out_features: int, frozen: tuple[str, ...] = ()) -> None:
        super().__init__()
        self.net = net
        self.out_features = out_features
        # Parameter-name prefixes the trainer freezes (requires_grad off, BatchNorm in eval mode).
        self.frozen_prefixes = tuple(f"net.{name}." for name in frozen)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


def torchvision_net(arch: str, pretrained: bool | Path, classifier: str) -> nn.Module:
    """A torchvision ImageNet model with its `classifier` attribute removed. pretrained: True loads
    torchvision's ImageNet weights from TORCH_HOME's cache (hash-checked); a path loads a state dict: torchvision's
    ImageNet weights, classifier included, as a run finds them (repro.train.engine.pretrained_source: the weights
    folders of its settings, hash-checked), or the network without its classifier (repro.train.digit_weights)."""
    import torchvision

    from repro.models.weights import load_pretrained

    net = getattr(torchvision.models, arch)(weights=None)
    state = load_pretrained(arch) if pretrained is True else None
    if isinstance(pretrained, Path):
        state = torch.load(pretrained, map_location="cpu", weights_only=True)
    if state is not None and any(k.startswith(f"{classifier}.") for k in state):
        net.load_state_dict(state)  # the whole ImageNet network, then its classifier goes
        state = None
    setattr(net, classifier, nn.Identity())
    if state is not None:
        net.load_state_dict(state)
    return net


def build_resnet18(
    input_shape: tuple[int, int, int], pretrained: bool | Path = False, frozen: tuple[str, ...] = ()
) -> nn.Module:
    return TorchvisionFeatures(torchvision_net("resnet18", pretrained, "fc"), 512, frozen)


def build_mobilenet_v2(
    input_shape: tuple[int, int, int], pretrained: bool | Path = False, frozen: tuple[str, ...] = ()
) -> nn.Module:
    return TorchvisionFeatures(torchvision_net("mobilenet_v2", pretrained, "classifier"), 1280, frozen)
