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

With k = 1 the single gate is softmax of one logit, i.e. exactly 1: the router then
receives no gradient (the ablation of Table 5 trains with a fixed random router).
"""

from __future__ import annotations

import math
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from repro.models.backbones import TorchvisionFeatures, torchvision_net
from repro.models.base import RoutingHooks
from repro.models.configs import MoEConvBackboneConfig


class MoEConv2d(RoutingHooks, nn.Module):
    routed = True

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: int,
        num_experts: int = 8,
        top_k: int = 2,
        stride: int = 1,
        padding: int = 1,
    ) -> None:
        super().__init__()
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding
        self.num_experts, self.top_k = num_experts, top_k
        self.weight = nn.Parameter(torch.empty(num_experts, out_channels, in_channels, kernel_size, kernel_size))
        nn.init.kaiming_normal_(self.weight.view(-1, in_channels, kernel_size, kernel_size), nonlinearity="relu")
        self.router = nn.Linear(in_channels, num_experts)

    @classmethod
    def from_conv(cls, conv: nn.Conv2d, num_experts: int, top_k: int, noise: float) -> MoEConv2d:
        """Experts start as copies of a (pretrained) conv, perturbed by `noise` x its weight s.d."""
        assert conv.groups == 1 and conv.bias is None and conv.kernel_size[0] == conv.kernel_size[1]
        moe = cls(
            conv.in_channels, conv.out_channels, conv.kernel_size[0], num_experts, top_k,
            conv.stride[0], conv.padding[0],
        )
        with torch.no_grad():
            w = conv.weight  # (Co, Ci, kh, kw)
            moe.weight.copy_(w.unsqueeze(0) + noise * w.std() * torch.randn_like(moe.weight))
        return moe

    def route(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(logits (B, E), gates (B, K), selected experts (B, K)); gates = softmax of the top-k logits."""
        logits = self.router(x.mean(dim=(2, 3)))  # (B, E)
        top_logits, top_i = logits.topk(self.top_k, dim=-1)  # (B, K)
        return logits, torch.softmax(top_logits, dim=-1), top_i

    def gates(self, x: torch.Tensor) -> torch.Tensor:
        """Dense gate matrix G (B, E): the top-k gates, zero elsewhere."""
        logits, g, top_i = self.route(x)
        return torch.zeros_like(logits).scatter(-1, top_i, g)

    def mixes_kernels(self, positions: int) -> bool:
        """Whether mixing kernels (k*W + P*W a sample) is cheaper than k convolutions (k*P*W)."""
        return self.top_k + positions < self.top_k * positions

    def own_macs(self, shapes) -> int:
        """Multiply-adds as executed (see repro.flops), on whichever path runs."""
        (x, *_), out = shapes
        bank = self.out_channels * self.in_channels * self.kernel_size**2  # W
        conv = math.prod(out) * self.in_channels * self.kernel_size**2  # one convolution for the batch
        if self.mixes_kernels(math.prod(out[2:])):
            return x[0] * self.top_k * bank + conv  # (B, 1, K) @ (B, K, W), then one grouped convolution
        return self.top_k * conv  # each sample through its k selected banks

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (B, Ci, H, W) -> (B, Co, H', W')
        logits, g, top_i = self.route(x)
        size = [(n + 2 * self.padding - self.kernel_size) // self.stride + 1 for n in x.shape[2:]]  # H', W'
        if self.mixes_kernels(size[0] * size[1]):
            y = self._mixed_kernels(x, g, top_i)
        else:
            y = self._per_expert(x, g, top_i, size)
        probs = torch.softmax(logits.detach(), dim=-1)  # (B, E)
        self._record_routing(probs, torch.zeros_like(probs).scatter(-1, top_i, 1.0))
        return y

    def _mixed_kernels(self, x: torch.Tensor, g: torch.Tensor, top_i: torch.Tensor) -> torch.Tensor:
        b = x.shape[0]
        banks = self.weight.flatten(1).index_select(0, top_i.flatten()).view(b, self.top_k, -1)  # (B, K, W)
        w = torch.bmm(g.unsqueeze(1), banks)  # (B, 1, K) @ (B, K, W) -> (B, 1, W)
        y = F.conv2d(
            x.reshape(1, b * self.in_channels, *x.shape[2:]),  # (1, B*Ci, H, W)
            w.reshape(b * self.out_channels, self.in_channels, self.kernel_size, self.kernel_size),
            stride=self.stride, padding=self.padding, groups=b,
        )  # (1, B*Co, H', W')
        return y.reshape(b, self.out_channels, *y.shape[2:])

    def _per_expert(self, x: torch.Tensor, g: torch.Tensor, top_i: torch.Tensor, size: list[int]) -> torch.Tensor:
        gates = torch.zeros(x.shape[0], self.num_experts, dtype=g.dtype, device=g.device).scatter(-1, top_i, g)
        out = x.new_zeros(x.shape[0], self.out_channels, *size)  # (B, Co, H', W')
        banks = self.weight.unbind(0)  # one gradient stack, not a full-size zero gradient per expert (ExpertBank.views)
        for e in range(self.num_experts):
            rows = (top_i == e).any(-1).nonzero().flatten()  # samples that selected expert e
            if rows.numel():
                y = F.conv2d(x[rows], banks[e], stride=self.stride, padding=self.padding)
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
                    setattr(block, name, MoEConv2d.from_conv(conv, cfg.num_experts, cfg.top_k, cfg.init_noise))
    return MoEConvFeatures(net, 512, cfg.frozen)
