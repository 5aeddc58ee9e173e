"""Which layers of a network can be routed, which a pattern names, and the network with them routed.

A routable layer is a zero-padded nn.Conv2d (any kernel, stride, groups, bias), which
becomes a MoEConv2d bank, or an nn.Linear applied at every position of a channels-last map
(ConvNeXt's pointwise convolutions), which becomes a MoEPointwise bank. Each is costed as
repro.models.flops counts it: its own multiply-adds as given (`dense`) and as a bank of E experts
at top-k, router included (`routed`), from the shapes of one forward pass of one sample.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from repro.models.flops import Shapes, own_macs_of
from repro.models.classifier import Classifier
from repro.models.moe_conv import MoEConv2d, conv_pair
from repro.models.moe_pointwise import MoEPointwise
from repro.rho.model_list import RhoInputError, did_you_mean
from repro.rho.inputs import Pattern
from repro.rho.networks import materialise

PREFIX = "backbone."  # layer names are paths inside the network (repro.rho.networks.dense_model)
MAX_BANK_BYTES = 4 << 30  # expert weights a routed network may hold: the host's memory is shared
SHOWN = 6  # names listed in a refusal before "and N more"


@dataclass(frozen=True)
class Layer:
    name: str  # the module path inside the network, as patterns match it
    kind: str  # e.g. "conv 3x3/2", "dw 7x7", "pointwise (linear)"
    order: int  # position in the forward pass: larger is deeper
    dense: int  # multiply-adds as given
    routed: int  # multiply-adds as a MoE bank, router included
    weights: int  # parameters of one expert


def subtree_macs(model: nn.Module, calls: dict[str, list[Shapes]], root: str = "") -> int:
    """Multiply-adds of the module at `root` and everything inside it (repro.models.flops' analytic column)."""
    modules = dict(model.named_modules())
    return sum(
        own_macs_of(modules[n], c) for n, c in calls.items() if not root or n == root or n.startswith(root + ".")
    )


def why_not_routable(module: nn.Module, calls: list[Shapes]) -> str:
    """'' for a routable layer, else why it is not."""
    kind = type(module).__name__
    if not calls:
        return f"{kind}, not run at inference"
    if type(module) is nn.Conv2d:
        if module.padding_mode != "zeros" or isinstance(module.padding, str):
            return f"Conv2d padding {module.padding!r} ({module.padding_mode}): MoEConv2d pads with zeros"
        return ""
    if type(module) is nn.Linear:
        if all(len(ins[0]) == 4 for ins, _ in calls):
            return ""
        return f"Linear on {tuple(calls[0][0][0])}, not at every position of a map"
    return f"{kind}, not a convolution"


def _describe(module: nn.Conv2d | nn.Linear) -> str:
    if isinstance(module, nn.Linear):
        return "pointwise (linear)"
    kh, kw = module.kernel_size
    stride = f"/{module.stride[0]}" if max(module.stride) > 1 else ""
    if module.groups == 1:
        kind = "conv"
    elif module.groups == module.in_channels == module.out_channels:
        kind = "dw"
    else:
        kind = f"g{module.groups}"
    return f"{kind} {kh}x{kw}{stride}"


def _bank_shape(module: nn.Conv2d | nn.Linear, experts: int, top_k: int) -> MoEConv2d | MoEPointwise:
    """A bank of the layer's shape on the meta device, to cost it without holding E copies of its weights."""
    with torch.device("meta"):
        if isinstance(module, nn.Linear):
            return MoEPointwise(
                MoEConv2d(
                    module.in_features, module.out_features, 1, experts, top_k, 1, 0, bias=module.bias is not None
                )
            )
        assert not isinstance(module.padding, str)  # why_not_routable refuses "same" and "valid"
        return MoEConv2d(
            module.in_channels,
            module.out_channels,
            conv_pair(module.kernel_size),
            experts,
            top_k,
            conv_pair(module.stride),
            conv_pair(module.padding),
            module.groups,
            module.bias is not None,
            conv_pair(module.dilation),
        )


def routable_layers(model: Classifier, calls: dict[str, list[Shapes]], experts: int, top_k: int) -> list[Layer]:
    """Every routable layer inside the network, shallowest first, costed dense and as a bank."""
    order = {name: i for i, name in enumerate(calls)}  # forward hooks fire in execution order
    layers = []
    for path, module in model.named_modules():
        if not path.startswith(PREFIX) or why_not_routable(module, calls.get(path, [])):
            continue
        assert isinstance(module, (nn.Conv2d, nn.Linear))  # all that why_not_routable passes
        bank = _bank_shape(module, experts, top_k)
        weights = sum(p.numel() for p in module.parameters())
        layers.append(
            Layer(
                path[len(PREFIX) :],
                _describe(module),
                order[path],
                own_macs_of(module, calls[path]),
                sum(bank.macs(c) for c in calls[path]),
                weights,
            )
        )
    return sorted(layers, key=lambda layer: layer.order)


def match_layers(model: Classifier, calls: dict[str, list[Shapes]], patterns: list[Pattern], network: str) -> list[str]:
    """The layers the patterns name, shallowest first; a pattern naming nothing, or anything not routable, is
    refused."""
    modules = {p[len(PREFIX) :]: m for p, m in model.named_modules() if p.startswith(PREFIX)}
    routable = [n for n, m in modules.items() if not why_not_routable(m, calls.get(PREFIX + n, []))]
    chosen: set[str] = set()
    for pattern in patterns:
        hits = [n for n in modules if pattern.matches(n)]
        if not hits:
            top = [n for n in modules if n and "." not in n]
            raise RhoInputError(
                f"--route {pattern.text!r} matches no module of {network}"
                f"{did_you_mean(pattern.text, routable)}; its top-level modules are "
                f"{', '.join(top)}, and `--layers` lists its routable layers"
            )
        refused = [(n, why_not_routable(modules[n], calls.get(PREFIX + n, []))) for n in hits]
        refused = [(n, why) for n, why in refused if why]
        if refused:
            named = "; ".join(f"{n} ({why})" for n, why in refused[:SHOWN])
            more = f"; and {len(refused) - SHOWN} more" if len(refused) > SHOWN else ""
            convs = len(hits) - len(refused)
            raise RhoInputError(
                f"--route {pattern.text!r} matches {len(hits)} module(s) of {network}, {len(refused)} of them not "
                f"routable: {named}{more}. Only convolutions (and linear layers applied at every position) can "
                f"be routed{f'; it also matches {convs} that can' if convs else ''}"
            )
        chosen.update(hits)
    order = {n: i for i, n in enumerate(calls)}
    return sorted(chosen, key=lambda n: order[PREFIX + n])


def check_memory(model: Classifier, names: list[str], experts: int) -> None:
    """Refuse a placement whose expert weights would not fit this shared host."""
    modules = dict(model.named_modules())
    size = experts * sum(p.numel() * p.element_size() for n in names for p in modules[PREFIX + n].parameters())
    if size > MAX_BANK_BYTES:
        raise RhoInputError(
            f"routing {len(names)} layer(s) as {experts}-expert banks would hold {size / 2**30:.1f} "
            f"GiB of weights (at most {MAX_BANK_BYTES / 2**30:.0f} GiB here): route fewer layers or "
            "experts"
        )


def route(model: Classifier, names: list[str], experts: int, top_k: int) -> Classifier:
    """`model` with each named layer replaced by a bank of `experts` experts at `top_k`, holding plain values
    (a count depends on shapes only: no copies of the weights, no noise drawn); refused when too large."""
    check_memory(model, names, experts)
    modules = dict(model.named_modules())
    for name in names:
        parent, _, child = (PREFIX + name).rpartition(".")
        layer = modules[PREFIX + name]
        assert isinstance(layer, (nn.Conv2d, nn.Linear))  # `names` are routable layers (match_layers)
        setattr(modules[parent], child, materialise(_bank_shape(layer, experts, top_k)))
    return model
