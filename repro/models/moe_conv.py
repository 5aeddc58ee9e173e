"""Backbone MoE (Section 4.6): MoEConv2d in place of ResNet-18's layer3/layer4 3x3 convolutions.

Which of them: "all" eight (each BasicBlock's conv1 and conv2; "all eight MoE layers") or the six
"stride1" ones (each layer's first conv1, of stride 2, stays plain), MoEConvBackboneConfig.routed.
The text's "~38%" is the six's share of ResNet-18's multiply-adds; the eight route 45%.

Shapes: B batch, E experts, K top-k, Ci/Co input/output channels, kh x kw kernel,
W = Co*Ci*kh*kw weights of one filter bank.

Each MoEConv2d holds E filter banks. A router (global average pooling, then a
linear layer) picks the top-k banks per sample; gates are the softmax of the
selected logits. A convolution is linear in its weights, so

    sum_j g_j conv(x, W_{e_j}) = conv(x, sum_j g_j W_{e_j}):

a layer can mix each sample's k banks into one kernel and convolve once, or run the k banks'
convolutions and mix their outputs. Its exact paths (repro.models.moe_conv_paths) are both sides of that
identity in several shapes: `mixed` (the k banks gathered and mixed per sample, (B, 1, K) @ (B, K, W), one
grouped convolution with groups = B), `gate-mm` (the same kernels mixed by one (B, E) @ (E, W) matrix
product), `unfolded` (those kernels times the unfolded input, one batched matmul), `per-expert` (a loop over
experts) and `sorted` (the same convolutions over samples gathered once, sorted by expert). Each sample's
output depends on that sample only, on every path. Which path runs (repro.models.moe_conv_choice): by
default the one of fewest multiply-adds, `mixed` where mixing (k*W a sample) costs less than k convolutions
(k*P*W against P*W, P output positions), else `per-expert`, and that is what every FLOP count counts; the
training engine lets measured time choose, once per layer and input shape, as cudnn.benchmark does. FLOP
accounting counts the path that ran (`own_macs`).

At k = 2 on layer3/layer4's maps the mixture is the fewest-MAC path, so ResNet-18's routed share counts
one convolution a sample (45.2%); with mixing off (mix_kernels = False, the reading "moe-conv-k-count") the
k banks' convolutions are the counted path (61.7%). Every path computes the same outputs.

Grouped (depthwise) banks, biases and rectangular, strided or dilated kernels follow
torch's Conv2d, so any zero-padded convolution can become a bank (`repro rho`); a
bias mixes with the same gates, (B, 1, K) @ (B, K, Co).

Gate (reading "moe-conv-gate", repro/spec/readings.toml; the text gives no gate equation):

    l = W_r GAP(x) / tau                                       (B, E)
    renormalised  g = softmax(l[top-k])                        (B, K)  the default
    switch        g = softmax(l)[top-k]                        (B, K)  Switch Transformer's gate

With k = 1 the renormalised gate is the softmax of one logit, exactly 1: the router
then receives no gradient (the ablation of Table 5 trains with a fixed random
router). The switch gate scales each selected bank by its probability under all E,
so the task loss reaches W_r at any k.

Routing regularisers (reading "moe-conv-regularisers"): none by default. The head's
(repro.models.sparse_moe) are capacity ceil(c B k / E) in training (any expert with
room, best first, up to k a sample: repro.models.capacity), lambda_lb L_lb +
lambda_ent L_ent on p = softmax(l) (repro.models.aux_losses), and tau annealed
linearly from 1.0 to tau_min over the epochs (repro.models.schedules). Evaluation
is plain top-k, as the head's.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Literal

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.modules.utils import _pair

from repro.models.aux_losses import entropy_loss, load_balance_loss
from repro.models.backbones import TorchvisionFeatures, torchvision_net
from repro.models import small_maps
from repro.models.base import RoutingHooks, positive_int
from repro.models.capacity import assign, capacity
from repro.models.moe_conv_choice import RULES, choose, fewest_macs
from repro.models.moe_conv_paths import PATHS, output_size
from repro.models.configs import MoEConvBackboneConfig
from repro.models.schedules import linear_tau, progress
from repro.models.zero_banks import counting, init_bank


class MoEConv2d(RoutingHooks, nn.Module):
    """A Conv2d of `num_experts` filter banks, `top_k` of them mixed per sample: (B, Ci, H, W) -> (B, Co, H', W').

    in_channels, out_channels, kernel_size, stride, padding (zeros, a fixed amount), groups, bias, dilation: as
    torch's Conv2d, with its defaults, for every bank, so H' and W' are Conv2d's (torch's positional order differs:
    num_experts and top_k come after kernel_size). num_experts E banks; top_k K of them a sample,
    1 <= K <= E. The router is a linear layer on the globally average-pooled input, so without a capacity limit
    a sample's routing and output depend on that sample only. gate: "renormalised" (softmax over the K selected
    logits; at K = 1 exactly 1, and the router gets no gradient from the task loss) or "switch" (each selected
    bank's probability under all E). capacity_factor c > 0: at most ceil(c B K / E) samples a bank in training;
    load_balance_weight and entropy_weight: the head's auxiliary losses, returned by aux_loss() after a training
    forward; tau_min: the temperature's end, from 1.0 over the epochs of on_epoch_start. mix_kernels=False runs
    (and counts) the K banks' convolutions where mixing them into one kernel would be cheaper. After a call,
    routing_stats() holds its routing, and paths_ran, by input shape, the exact path it took (the module
    docstring: equations and paths)."""

    routed = True
    # The training engine's choice (repro.models.small_maps.use_small_maps): a bank's convolution on a map smaller
    # than its kernel takes a faster path, the same function. Off where models are counted or timed.
    small_maps = False
    # Which exact path runs (repro.models.moe_conv_choice): the fewest multiply-adds unless the training engine
    # sets "measured" (use_paths); the file that keeps measured choices.
    path_rule = "fewest-macs"
    path_file: Path | None = None

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: int | tuple[int, int],
        num_experts: int = 8,
        top_k: int = 2,
        stride: int | tuple[int, int] = 1,
        padding: int | tuple[int, int] = 0,
        groups: int = 1,
        bias: bool = True,
        dilation: int | tuple[int, int] = 1,
        gate: Literal["renormalised", "switch"] = "renormalised",
        capacity_factor: float = 0.0,  # 0: no capacity limit
        load_balance_weight: float = 0.0,
        entropy_weight: float = 0.0,
        tau_min: float = 1.0,
        mix_kernels: bool = True,  # False: always the k banks' convolutions (reading "moe-conv-k-count")
    ) -> None:
        super().__init__()
        _check_arguments(
            in_channels,
            out_channels,
            num_experts,
            top_k,
            groups,
            {"kernel_size": kernel_size, "stride": stride, "dilation": dilation},
            padding,
            gate,
            capacity_factor,
            tau_min,
            {"load_balance_weight": load_balance_weight, "entropy_weight": entropy_weight},
        )
        self.mix_kernels = mix_kernels
        self.gate, self.capacity_factor, self.tau_min = gate, capacity_factor, tau_min
        self.load_balance_weight, self.entropy_weight = load_balance_weight, entropy_weight
        self.tau = 1.0
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.kernel_size: tuple[int, int] = _pair(kernel_size)
        self.stride: tuple[int, int] = _pair(stride)
        self.padding: tuple[int, int] = _pair(padding)
        self.dilation: tuple[int, int] = _pair(dilation)
        self.num_experts, self.top_k = num_experts, top_k
        shape = (out_channels, in_channels // groups, *self.kernel_size)  # one bank: (Co, Ci/g, kh, kw)
        self.weight = nn.Parameter(torch.empty(num_experts, *shape))
        init_bank(self.weight.view(-1, *shape[1:]), lambda t: nn.init.kaiming_normal_(t, nonlinearity="relu"))
        self.bias = nn.Parameter(torch.zeros(num_experts, out_channels)) if bias else None  # (E, Co)
        self.router = nn.Linear(in_channels, num_experts)
        self.paths_ran: dict[tuple[int, ...], str] = {}  # input shape -> the path its last call ran (own_macs)

    @classmethod
    def from_conv(cls, conv: nn.Conv2d, num_experts: int, top_k: int, noise: float, **routing) -> MoEConv2d:
        """Experts start as copies of a (pretrained) conv, perturbed by `noise` x its weight s.d.; biases are copied.
        `routing`: the gate and regularisers (the constructor's keywords)."""
        if conv.padding_mode != "zeros" or isinstance(conv.padding, str):
            raise ValueError(
                f"MoEConv2d pads with zeros by a fixed amount; this conv pads {conv.padding!r} ({conv.padding_mode})"
            )
        moe = cls(
            conv.in_channels,
            conv.out_channels,
            conv_pair(conv.kernel_size),
            num_experts,
            top_k,
            conv_pair(conv.stride),
            conv_pair(conv.padding),
            conv.groups,
            conv.bias is not None,
            conv_pair(conv.dilation),
            **routing,
        )
        with torch.no_grad():
            w = conv.weight  # (Co, Ci/g, kh, kw)
            if counting():  # built to be counted: no draws (repro.models.zero_banks)
                moe.weight.copy_(w.unsqueeze(0).expand_as(moe.weight))
            else:
                moe.weight.copy_(w.unsqueeze(0) + noise * w.std() * torch.randn_like(moe.weight))
            if conv.bias is not None:
                assert moe.bias is not None  # built with bias=conv.bias is not None
                moe.bias.copy_(conv.bias.unsqueeze(0).expand_as(moe.bias))
        return moe

    def on_epoch_start(self, epoch: int, num_epochs: int) -> None:
        """tau for the coming epoch: linear from 1.0 (Section 4.1) to tau_min; 1.0 throughout by default."""
        self.tau = linear_tau(progress(epoch, num_epochs), 1.0, self.tau_min)

    def schedule_state(self) -> dict[str, float | int]:
        return {"tau": self.tau} if self.tau_min != 1.0 else {}

    def router_parameters(self) -> list[nn.Parameter]:
        return list(self.router.parameters())

    def route(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(scores l (B, E), gates (B, K), selected experts (B, K)); a gate is 0 on a slot capacity left empty."""
        logits = self.router(x.mean(dim=(2, 3)))  # (B, E)
        if self.tau != 1.0:
            logits = logits / self.tau
        if self.training and self.capacity_factor:
            return self._route_with_capacity(logits)
        if self.gate == "switch":
            g, top_i = torch.softmax(logits, dim=-1).topk(self.top_k, dim=-1)  # (B, K): p of the top-k
            return logits, g, top_i
        top_logits, top_i = logits.topk(self.top_k, dim=-1)  # (B, K)
        return logits, torch.softmax(top_logits, dim=-1), top_i

    def _route_with_capacity(self, logits: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The head's training rule (repro.models.capacity): every expert a candidate, best first; a sample takes
        up to k with room. A padded slot (fewer than k with room) repeats the sample's first expert with gate 0."""
        b, e = logits.shape
        cand = logits.topk(e, dim=-1).indices  # (B, E) best first
        a = assign(cand, capacity(self.capacity_factor, b, self.top_k, e), self.top_k, e)
        experts = torch.where(a.valid, a.experts, a.experts[:, :1])  # (B, K); slot 0 is always taken
        if self.gate == "switch":
            g = torch.softmax(logits, dim=-1).gather(-1, experts) * a.valid  # (B, K)
        else:
            g = torch.softmax(logits.gather(-1, experts).masked_fill(~a.valid, float("-inf")), dim=-1)  # (B, K)
        return logits, g, experts

    def gates(self, x: torch.Tensor) -> torch.Tensor:
        """Dense gate matrix G (B, E): the top-k gates, zero elsewhere."""
        logits, g, top_i = self.route(x)
        return torch.zeros_like(logits).scatter_add(-1, top_i, g)

    def mixes_kernels(self, positions: int) -> bool:
        """Whether mixing kernels (k*W + P*W a sample) is cheaper than k convolutions (k*P*W), where mixing is on."""
        return self.mix_kernels and self.top_k + positions < self.top_k * positions

    def own_macs(self, shapes) -> int:
        """Multiply-adds as executed (see repro.models.flops), on the path that ran for this input shape."""
        (x, *_), out = shapes
        positions = math.prod(out[2:])
        return PATHS[self.paths_ran.get(tuple(x), fewest_macs(self, positions))].macs(self, x[0], positions)

    def macs(self, shapes) -> int:
        """Multiply-adds of one call with the router's: what repro.models.flops counts for this module and its
        children."""
        (x, *_), _ = shapes
        return self.own_macs(shapes) + x[0] * self.in_channels * self.num_experts  # router: (B, Ci) @ (Ci, E)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (B, Ci, H, W) -> (B, Co, H', W')
        if x.dim() != 4 or x.shape[1] != self.in_channels:
            raise ValueError(
                f"MoEConv2d expects input (B, {self.in_channels}, H, W) (batch, in_channels, height, width), "
                f"got shape {tuple(x.shape)}"
            )
        size = output_size(self, x)
        if min(size) < 1:
            raise ValueError(
                f"MoEConv2d: a {tuple(x.shape[2:])} input is smaller than the {self.kernel_size} kernel (dilation "
                f"{self.dilation}) with padding {self.padding}: the output would be {tuple(size)}"
            )
        logits, g, top_i = self.route(x)
        path = choose(self, x, g, top_i, size[0] * size[1], torch.compiler.is_compiling())
        y = PATHS[path].run(self, x, g, top_i)
        if not torch.jit.is_tracing():  # fvcore's trace (repro.models.flops) would file it under a shape of tensors
            self.paths_ran[tuple(x.shape)] = path
        probs = torch.softmax(logits.detach(), dim=-1)  # (B, E)
        mask = torch.zeros_like(probs).scatter(-1, top_i, 1.0)  # M (B, E); a padded slot repeats a taken expert
        if self.training and (self.load_balance_weight or self.entropy_weight):
            p = torch.softmax(logits, dim=-1)  # (B, E), with its gradient
            self._aux = self.load_balance_weight * load_balance_loss(p, mask) + self.entropy_weight * entropy_loss(p)
        self._record_routing(probs, mask)
        return y

    def _conv(self, *args, **kwargs) -> torch.Tensor:
        return (small_maps.conv2d if self.small_maps else F.conv2d)(*args, **kwargs)


def conv_pair(size: tuple[int, ...]) -> tuple[int, int]:
    """An nn.Conv2d's kernel_size, stride, padding or dilation: a pair, which torch types as tuple[int, ...]
    (the attribute of _ConvNd, shared with Conv1d and Conv3d)."""
    h, w = size
    return h, w


def _pairs(value: object) -> tuple:
    return tuple(value) if isinstance(value, (tuple, list)) else (value,)


def _positive_pair(value: object) -> bool:
    """A positive int, or a pair of them (as torch's Conv2d takes kernel_size, stride and dilation)."""
    return len(_pairs(value)) <= 2 and all(positive_int(v) for v in _pairs(value))


def _check_arguments(
    in_channels: int,
    out_channels: int,
    num_experts: int,
    top_k: int,
    groups: int,
    geometry: dict[str, object],
    padding: object,
    gate: str,
    capacity_factor: float,
    tau_min: float,
    weights: dict[str, float],
) -> None:
    """Refuse, before any weight is made, what no forward could run: every problem named with what is allowed, as
    MoEConvBackboneConfig names a manifest's (k = 0 would otherwise give zeros, k > E fail in topk; a channel count
    or kernel of 0 failed in a reshape, a stride or dilation of 0 only at the first call, a float num_experts in
    torch.empty; a negative weight rewarded the imbalance its loss penalises). `geometry`: kernel_size, stride and
    dilation, each a positive int or a pair of them; `weights`: the auxiliary losses' weights by name."""
    problems = []
    channels_ok = True
    for name, value in (("in_channels", in_channels), ("out_channels", out_channels)):
        if not positive_int(value):
            problems.append(f"{name} must be a positive int, got {value!r}")
            channels_ok = False
    for name, size in geometry.items():
        if not _positive_pair(size):
            problems.append(f"{name} must be a positive int or a pair of them, got {size!r}")
    if not positive_int(num_experts):
        problems.append(f"num_experts must be a positive int, got {num_experts!r}")
    elif not (positive_int(top_k) and top_k <= num_experts):
        problems.append(f"top_k must be an int in 1..num_experts = {num_experts}, got {top_k!r}")
    if not positive_int(groups) or (channels_ok and (in_channels % groups or out_channels % groups)):
        problems.append(
            f"groups must be at least 1 and divide in_channels and out_channels, got groups {groups} with "
            f"{in_channels} in and {out_channels} out"
        )
    if not all(isinstance(p, int) and not isinstance(p, bool) and p >= 0 for p in _pairs(padding)):
        problems.append(
            f"padding must be a non-negative int or a pair of them (zeros by a fixed amount), got {padding!r}"
        )
    if gate not in ("renormalised", "switch"):
        problems.append(f"gate must be 'renormalised' or 'switch', got {gate!r}")
    if not capacity_factor >= 0:
        problems.append(f"capacity_factor must be non-negative (0: no capacity limit), got {capacity_factor}")
    if not 0 < tau_min <= 1:
        problems.append(f"tau_min must be in (0, 1], the temperature's end from 1.0, got {tau_min}")
    for name, weight in weights.items():
        if not weight >= 0:
            problems.append(f"{name} must be non-negative, got {weight!r}")
    if problems:
        raise ValueError("MoEConv2d: " + "; ".join(problems))


def use_paths(model: nn.Module, rule: str, choice_file: Path | None = None) -> int:
    """Give every MoEConv2d of `model` the path rule `rule` (repro.models.moe_conv_choice.RULES), in place, with
    the file that keeps measured choices; returns how many layers changed."""
    if rule not in RULES:
        raise ValueError(f"unknown MoEConv2d path rule {rule!r}; expected one of {', '.join(RULES)}")
    layers = [m for m in model.modules() if isinstance(m, MoEConv2d)]
    for m in layers:
        m.path_rule, m.path_file = rule, choice_file
    return len(layers)


FROZEN_PREFIXES = tuple(f"net.{name}." for name in MoEConvBackboneConfig.frozen)


class MoEConvFeatures(TorchvisionFeatures):
    """ResNet-18 features whose routed layers are MoEConv2d."""

    def moe_layers(self) -> dict[str, MoEConv2d]:
        return {n: m for n, m in self.named_modules() if isinstance(m, MoEConv2d)}

    def routing_stats(self) -> dict:
        """Per MoEConv2d layer (8 in ResNet-18), keyed by module path: that layer's statistics."""
        return {n: m.routing_stats() for n, m in self.moe_layers().items()}


def build_resnet18_moeconv(input_shape: tuple[int, int, int], pretrained: bool | Path = False, **params) -> nn.Module:
    cfg = MoEConvBackboneConfig(**params)
    net = torchvision_net("resnet18", pretrained, "fc")
    for layer_name in cfg.layers:
        for block in getattr(net, layer_name):  # torchvision BasicBlock: conv1, conv2 are the 3x3 convs
            for name in ("conv1", "conv2"):
                conv = getattr(block, name)
                if cfg.routed == "all" or conv.stride == (1, 1):
                    setattr(
                        block,
                        name,
                        MoEConv2d.from_conv(
                            conv,
                            cfg.num_experts,
                            cfg.top_k,
                            cfg.init_noise,
                            gate=cfg.gate,
                            tau_min=cfg.tau_min,
                            capacity_factor=cfg.capacity_factor,
                            load_balance_weight=cfg.load_balance_weight,
                            entropy_weight=cfg.entropy_weight,
                            mix_kernels=cfg.mix_kernels,
                        ),
                    )
    return MoEConvFeatures(net, 512, cfg.frozen)
