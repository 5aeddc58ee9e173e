"""A linear layer applied at every position of a channels-last map, routed as a 1 x 1 MoEConv2d bank.

Shapes: B batch, H x W positions, Ci/Co input/output channels.

ConvNeXt writes its pointwise convolutions as nn.Linear over (B, H, W, Ci): the same
computation as a 1 x 1 convolution over (B, Ci, H, W), and 93% of ConvNeXt-T's
multiply-adds. A MoEPointwise holds those weights as a 1 x 1 MoEConv2d (E banks, top-k per
sample, the router on the globally pooled map) and permutes the map around it, so routing
and FLOP accounting are MoEConv2d's.
"""

from __future__ import annotations

import torch
from torch import nn

from repro.models.moe_conv import MoEConv2d


class MoEPointwise(nn.Module):
    def __init__(self, bank: MoEConv2d) -> None:
        super().__init__()
        self.bank = bank

    @classmethod
    def from_linear(cls, linear: nn.Linear, num_experts: int, top_k: int, noise: float) -> MoEPointwise:
        """Experts start as copies of the linear layer, perturbed as MoEConv2d.from_conv perturbs a conv's."""
        conv = nn.Conv2d(
            linear.in_features,
            linear.out_features,
            1,
            bias=linear.bias is not None,
            device=linear.weight.device,
            dtype=linear.weight.dtype,
        )
        with torch.no_grad():
            conv.weight.copy_(linear.weight[:, :, None, None])  # (Co, Ci) -> (Co, Ci, 1, 1)
            if linear.bias is not None:
                assert conv.bias is not None  # built with bias=linear.bias is not None
                conv.bias.copy_(linear.bias)
        return cls(MoEConv2d.from_conv(conv, num_experts, top_k, noise))

    def macs(self, shapes) -> int:
        """Multiply-adds of one call, router included, as repro.models.flops counts the bank inside."""
        (x, *_), out = shapes
        return self.bank.macs(([torch.Size([x[0], x[-1], *x[1:-1]])], torch.Size([out[0], out[-1], *out[1:-1]])))

    def routing_stats(self) -> dict:
        return self.bank.routing_stats()

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (B, H, W, Ci) -> (B, H, W, Co)
        return self.bank(x.permute(0, 3, 1, 2)).permute(0, 2, 3, 1)
