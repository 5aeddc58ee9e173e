"""Backbone MoE (Section 4.6): MoEConv2d in place of ResNet-18's layer3/layer4 3x3 convolutions.

Which of them: "all" eight (each BasicBlock's conv1 and conv2; "all eight MoE layers") or the six
"stride1" ones (each layer's first conv1, of stride 2, stays plain), MoEConvBackboneConfig.routed.
The text's "~38%" is the six's share of ResNet-18's multiply-adds; the eight route 45%.

Shapes: B batch, E experts, K top-k, Ci/Co input/output channels, kh x kw kernel,
W = Co*Ci*kh*kw weights of one filter bank.

Each MoEConv2d holds E filter banks. A router (global average pooling, then a
linear layer) picks the top-k banks per sample; gates are the softmax of the
selected logits. A convolution is linear in its weights, so

    sum_j g_j conv(x, W_{e_j}) = conv(x, sum_j g_j W_{e_j}),

and the per-sample mixture is: gather each sample's k banks, mix them with one
batched matmul (B, 1, K) @ (B, K, W), and run one grouped convolution over the
batch (groups = B). No Python loop over samples, and each sample's output depends
on that sample only. Mixing costs k*W multiply-adds a sample against P*W for the
convolution (P output positions); where running the k selected banks' convolutions
(a loop over experts, k*P*W) is cheaper, as at k = 1 or on tiny feature maps, that
path runs instead. Both are exact, and FLOP accounting counts the path that runs.
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
from repro.models.base import RoutingHooks
from repro.models.capacity import assign, capacity, dispatch_mask
from repro.models.configs import MoEConvBackboneConfig
from repro.models.schedules import linear_tau, progress
from repro.models.zero_banks import counting, init_bank


class MoEConv2d(RoutingHooks, nn.Module):
    routed = True
    # The training engine's choice (repro.models.small_maps.use_small_maps): a bank's convolution on a map smaller
    # than its kernel takes a faster path, the same function. Off where models are counted or timed.
    small_maps = False

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: int | tuple[int, int],
        num_experts: int = 8,
        top_k: int = 2,
        stride: int | tuple[int, int] = 1,
        padding: int | tuple[int, int] = 1,
        groups: int = 1,
        bias: bool = False,
        dilation: int | tuple[int, int] = 1,
        gate: Literal["renormalised", "switch"] = "renormalised",
        capacity_factor: float = 0.0,  # 0: no capacity limit
        load_balance_weight: float = 0.0,
        entropy_weight: float = 0.0,
        tau_min: float = 1.0,
    ) -> None:
        super().__init__()
        if gate not in ("renormalised", "switch"):
            raise ValueError(f"unknown MoEConv2d gate '{gate}'")
        self.gate, self.capacity_factor, self.tau_min = gate, capacity_factor, tau_min
        self.load_balance_weight, self.entropy_weight = load_balance_weight, entropy_weight
        self.tau = 1.0
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.kernel_size, self.stride, self.padding = _pair(kernel_size), _pair(stride), _pair(padding)
        self.dilation = _pair(dilation)
        self.num_experts, self.top_k = num_experts, top_k
        shape = (out_channels, in_channels // groups, *self.kernel_size)  # one bank: (Co, Ci/g, kh, kw)
        self.weight = nn.Parameter(torch.empty(num_experts, *shape))
        init_bank(self.weight.view(-1, *shape[1:]), lambda t: nn.init.kaiming_normal_(t, nonlinearity="relu"))
        self.bias = nn.Parameter(torch.zeros(num_experts, out_channels)) if bias else None  # (E, Co)
        self.router = nn.Linear(in_channels, num_experts)

    @classmethod
    def from_conv(cls, conv: nn.Conv2d, num_experts: int, top_k: int, noise: float, **routing) -> MoEConv2d:
        """Experts start as copies of a (pretrained) conv, perturbed by `noise` x its weight s.d.; biases are copied.
        `routing`: the gate and regularisers (the constructor's keywords)."""
        if conv.padding_mode != "zeros" or isinstance(conv.padding, str):
            raise ValueError(f"MoEConv2d pads with zeros by a fixed amount; this conv pads {conv.padding!r} "
                             f"({conv.padding_mode})")
        moe = cls(
            conv.in_channels, conv.out_channels, conv.kernel_size, num_experts, top_k,
            conv.stride, conv.padding, conv.groups, conv.bias is not None, conv.dilation, **routing,
        )
        with torch.no_grad():
            w = conv.weight  # (Co, Ci/g, kh, kw)
            if counting():  # built to be counted: no draws (repro.models.zero_banks)
                moe.weight.copy_(w.unsqueeze(0).expand_as(moe.weight))
            else:
                moe.weight.copy_(w.unsqueeze(0) + noise * w.std() * torch.randn_like(moe.weight))
            if conv.bias is not None:
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
        """Whether mixing kernels (k*W + P*W a sample) is cheaper than k convolutions (k*P*W)."""
        return self.top_k + positions < self.top_k * positions

    def own_macs(self, shapes) -> int:
        """Multiply-adds as executed (see repro.models.flops), on whichever path runs."""
        (x, *_), out = shapes
        fan_in = self.in_channels // self.groups * math.prod(self.kernel_size)
        bank = self.out_channels * fan_in  # W
        conv = math.prod(out) * fan_in  # one convolution for the batch
        if self.mixes_kernels(math.prod(out[2:])):
            biases = x[0] * self.top_k * self.out_channels if self.bias is not None else 0  # (B, 1, K) @ (B, K, Co)
            return x[0] * self.top_k * bank + biases + conv  # (B, 1, K) @ (B, K, W), then one grouped convolution
        return self.top_k * conv  # each sample through its k selected banks

    def macs(self, shapes) -> int:
        """Multiply-adds of one call with the router's: what repro.models.flops counts for this module and its children."""
        (x, *_), _ = shapes
        return self.own_macs(shapes) + x[0] * self.in_channels * self.num_experts  # router: (B, Ci) @ (Ci, E)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (B, Ci, H, W) -> (B, Co, H', W')
        logits, g, top_i = self.route(x)
        size = [(n + 2 * p - d * (k - 1) - 1) // s + 1  # H', W'
                for n, p, d, k, s in zip(x.shape[2:], self.padding, self.dilation, self.kernel_size, self.stride)]
        if self.mixes_kernels(size[0] * size[1]):
            y = self._mixed_kernels(x, g, top_i)
        elif self.small_maps and small_maps.path(tuple(x.shape[2:]), self.kernel_size, self.stride, self.padding,
                                                 self.dilation, self.groups) == "matmul":
            x_taps, w_taps = small_maps.taps(x, self.weight, self.padding, self.dilation)  # once, not per expert
            y = self._per_expert(x, g, top_i, size, x_taps, w_taps)
        else:
            y = self._per_expert(x, g, top_i, size)
        probs = torch.softmax(logits.detach(), dim=-1)  # (B, E)
        mask = torch.zeros_like(probs).scatter(-1, top_i, 1.0)  # M (B, E); a padded slot repeats a taken expert
        if self.training and (self.load_balance_weight or self.entropy_weight):
            p = torch.softmax(logits, dim=-1)  # (B, E), with its gradient
            self._aux = self.load_balance_weight * load_balance_loss(p, mask) + self.entropy_weight * entropy_loss(p)
        self._record_routing(probs, mask)
        return y

    def _conv(self, *args, **kwargs) -> torch.Tensor:
        return (small_maps.conv2d if self.small_maps else F.conv2d)(*args, **kwargs)

    def _mixed_kernels(self, x: torch.Tensor, g: torch.Tensor, top_i: torch.Tensor) -> torch.Tensor:
        b = x.shape[0]
        banks = self.weight.flatten(1).index_select(0, top_i.flatten()).view(b, self.top_k, -1)  # (B, K, W)
        w = torch.bmm(g.unsqueeze(1), banks)  # (B, 1, K) @ (B, K, W) -> (B, 1, W)
        bias = None
        if self.bias is not None:
            bias = torch.bmm(g.unsqueeze(1), self.bias.index_select(0, top_i.flatten()).view(b, self.top_k, -1))
            bias = bias.flatten()  # (B, 1, K) @ (B, K, Co) -> (B*Co,)
        y = self._conv(
            x.reshape(1, b * self.in_channels, *x.shape[2:]),  # (1, B*Ci, H, W)
            w.reshape(b * self.out_channels, *self.weight.shape[2:]),  # (B*Co, Ci/g, kh, kw)
            bias, stride=self.stride, padding=self.padding, dilation=self.dilation, groups=b * self.groups,
        )  # (1, B*Co, H', W')
        return y.reshape(b, self.out_channels, *y.shape[2:])

    def _per_expert(self, x: torch.Tensor, g: torch.Tensor, top_i: torch.Tensor, size: list[int],
                    x_taps: torch.Tensor | None = None, w_taps: torch.Tensor | None = None) -> torch.Tensor:
        """Each sample through its k banks. A 1x1 output on the small-map path passes the taps inside the input
        (small_maps.taps): the banks' convolutions are then unpadded, as large as their input."""
        gates = torch.zeros(x.shape[0], self.num_experts, dtype=g.dtype, device=g.device).scatter_add(-1, top_i, g)
        out = x.new_zeros(x.shape[0], self.out_channels, *size)  # (B, Co, H', W')
        weight, conv = self.weight, dict(stride=self.stride, padding=self.padding, dilation=self.dilation)
        if x_taps is not None:
            x, weight, conv = x_taps, w_taps, dict(stride=1, padding=0, dilation=1)
        banks = weight.unbind(0)  # one gradient stack, not a full-size zero gradient per expert (ExpertBank.views)
        biases = self.bias.unbind(0) if self.bias is not None else [None] * self.num_experts
        for e in range(self.num_experts):
            rows = (top_i == e).any(-1).nonzero().flatten()  # samples that selected expert e
            if rows.numel():
                y = self._conv(x[rows], banks[e], biases[e], groups=self.groups, **conv)
                y = gates[rows, e, None, None, None] * y  # float32 under CUDA autocast, whose softmax is float32
                out = out.index_add(0, rows, y.to(out.dtype))
        return out


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
                    setattr(block, name, MoEConv2d.from_conv(
                        conv, cfg.num_experts, cfg.top_k, cfg.init_noise, gate=cfg.gate, tau_min=cfg.tau_min,
                        capacity_factor=cfg.capacity_factor, load_balance_weight=cfg.load_balance_weight,
                        entropy_weight=cfg.entropy_weight))
    return MoEConvFeatures(net, 512, cfg.frozen)
