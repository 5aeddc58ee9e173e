"""The networks `repro rho` counts, built without weight initialisation.

Shapes: B batch (1 here), C channels, H x W input, F features, O classes.

A per-sample FLOP count depends on layer shapes and on how many experts a sample runs,
never on weight values, so each network is built on the meta device and then given plain
values (zero weights, unit running variances), as repro.measure.flop_check counts a row's cost.
A builder that computes with tensors while it builds (torchvision's RegNet) is built on the
CPU instead.

    dense        the network as given: a torchvision model with its own classifier, or a
                 registry backbone with one linear layer F -> O (Table 6's r18_backbone_moe)
    head_only    its classifier replaced by the paper's sparse MoE head on the features the
                 classifier read: (B, F), or a feature map (B, C, H', W') global-average-pooled
                 (SqueezeNet) or flattened (ConvNeXt's 1 x 1 map) to (B, C)
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, replace
from typing import Any, Callable

import torch
from torch import nn

from repro.models.flops import Shapes, plain_values
from repro.models import Component
from repro.models.backbones import TorchvisionFeatures
from repro.models.catalog import BACKBONES, HEADS
from repro.models.classifier import Classifier
from repro.spec.recipes import at_last_epoch
from repro.rho.model_list import ModelSpec, RhoInputError
from repro.rho.inputs import MAX_SIZE
from repro.rho.paper_settings import MOE_HEAD, Setting

DENSE_TOP = Component("dense", {"hidden": []})  # one linear layer F -> O on a registry backbone


@dataclass(frozen=True)
class Network:
    """What to build: a model, at an input size, with a number of classes."""

    spec: ModelSpec
    setting: Setting
    size: tuple[int, int]  # H, W
    classes: int

    @property
    def input_shape(self) -> tuple[int, int, int]:
        return (3, *self.size)


def materialise(module: nn.Module) -> nn.Module:
    """Meta tensors -> CPU storage holding plain values (weights play no part in a count)."""
    if not any(t.is_meta for t in [*module.parameters(), *module.buffers()]):
        return module
    return plain_values(module.to_empty(device="cpu"))


def _on_meta(build: Callable[[], nn.Module]) -> nn.Module:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torchvision's notes on default initialisation: no weights are used
        try:
            with torch.device("meta"):
                return build()
        except (NotImplementedError, RuntimeError):  # the builder computes with tensors (RegNet's widths)
            return build()


def build_body(network: Network, meta: bool = False) -> nn.Module:
    """The network as given, in evaluation mode; on the meta device when `meta`, else with plain values."""
    spec, setting = network.spec, network.setting
    if spec.source == "torchvision":
        import torchvision

        body = _on_meta(lambda: torchvision.models.get_model(spec.name, weights=None, num_classes=network.classes))
    else:
        entry = BACKBONES.get(spec.name)
        body = _on_meta(lambda: entry.builder(network.input_shape, **setting.backbone_params))
    body = body.eval()
    return body.to("meta") if meta else materialise(body)


def _runs(body: nn.Module, h: int, w: int) -> bool:
    """Whether one (1, 3, h, w) input gives a non-empty output (a map pooled to nothing gives (1, 0))."""
    try:
        with torch.no_grad():
            return body(torch.empty(1, 3, h, w, device="meta")).numel() > 0
    except (RuntimeError, ValueError, IndexError, ZeroDivisionError):
        return False


def probe(network: Network) -> torch.Size | None:
    """The input a torchvision model's classifier sees (None for a registry backbone), from one pass on the
    meta device; an input the network cannot take is refused, naming the smallest square input it can."""
    fixed = build_body(network, meta=True) if network.spec.source == "torchvision" else None
    seen: list[torch.Size] = []
    if fixed is not None:
        classifier = getattr(fixed, network.spec.classifier)
        classifier.register_forward_pre_hook(lambda m, inputs: seen.append(inputs[0].shape))

    def runs(h: int, w: int) -> bool:  # a registry CNN's flattened features depend on the size it is built for
        try:
            body = fixed if fixed is not None else build_body(replace(network, size=(h, w)), meta=True)
        except (RuntimeError, ValueError, ZeroDivisionError):
            return False
        return _runs(body, h, w)

    if runs(*network.size):
        return seen[0] if seen else None
    lo, hi = 1, MAX_SIZE  # the smallest side that runs: outputs only grow with the input
    while lo < hi:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if runs(mid, mid) else (mid + 1, hi)
    h, w = network.size
    least = f"the smallest it takes is {lo}x{lo}" if runs(lo, lo) else f"no input up to {MAX_SIZE} px runs"
    raise RhoInputError(f"{network.spec.name} cannot take a {h}x{w} input: {least} (--size)")


def record_calls(model: nn.Module, input_shape: tuple[int, ...]) -> dict[str, list[Shapes]]:
    """Each module's (input shapes, output shape) per call, from one forward pass of one sample."""
    calls: dict[str, list[Shapes]] = {}
    handles = []
    for name, module in model.named_modules():

        def leave(mod, inputs, output, name=name):
            ins = [i.shape for i in inputs if isinstance(i, torch.Tensor)]
            calls.setdefault(name, []).append((ins, output.shape if isinstance(output, torch.Tensor) else torch.Size()))

        handles.append(module.register_forward_hook(leave))
    try:
        with torch.no_grad():
            model(torch.zeros(1, *input_shape))
    finally:
        for h in handles:
            h.remove()
    return calls


def dense_model(network: Network) -> Classifier:
    """The network as given: module paths under `backbone.` are the names layer patterns match."""
    body = build_body(network)
    if network.spec.source == "torchvision":
        return Classifier(body, nn.Identity())  # the torchvision model keeps its own classifier
    return Classifier(body, materialise(_on_meta(lambda: _head(DENSE_TOP, _feature_width(body), network.classes))))


def _feature_width(body: nn.Module) -> int:
    """F, the width of the (B, F) features a registry backbone or TorchvisionFeatures gives."""
    width = body.out_features
    assert isinstance(width, int)  # every backbone sets it (repro.models.backbones)
    return width


def _head(component: Component, features: int, classes: int) -> nn.Module:
    return HEADS.get(component.name).builder(features, classes, **component.params)


def _features(net: nn.Module, classifier: str, seen: torch.Size) -> TorchvisionFeatures:
    """`net` without its classifier, giving (B, F) features; `seen` is the input the classifier had."""
    replacement: nn.Module
    if len(seen) == 2:
        replacement, features = nn.Identity(), seen[-1]
    else:  # a feature map (B, C, H', W')
        pool = math.prod(seen[2:]) > 1
        replacement = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten()) if pool else nn.Flatten()
        features = seen[1]
    setattr(net, classifier, replacement)
    return TorchvisionFeatures(net, features)


def head_only_model(network: Network, head_params: dict[str, Any], seen: torch.Size | None) -> Classifier:
    """The paper's sparse MoE head in place of the network's classifier, schedules at their last epoch;
    `seen`: the input the classifier had (probe), for a torchvision model."""
    body = build_body(network)
    head = Component(MOE_HEAD, head_params)
    if network.spec.source == "torchvision":
        assert seen is not None  # probe gives a torchvision model's classifier input
        body = _features(body, network.spec.classifier, seen)
    top = materialise(_on_meta(lambda: _head(head, _feature_width(body), network.classes)))
    return at_last_epoch(Classifier(body, top), network.setting.dataset)
