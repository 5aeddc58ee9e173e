"""Per-sample Soft MoE (Section 3.5): soft gating over experts within each image.

Shapes: B batch, D features, E experts, O classes.

    g_b = softmax_i(s_i . h_b)       slot embeddings s_i in R^D, softmax over E   (B, E)
    o_b = sum_i g_{b,i} Expert_i(h_b)                                             (B, O)

Every expert runs on every image and nothing crosses the batch axis, so a sample's
output does not depend on its batch. No auxiliary loss (Section 3.5). The gate
equation is not in the text we have; a dot product of h with s_i, unscaled, is the
plain reading of "each expert has a slot embedding s_i".
"""

from __future__ import annotations


import torch
from torch import nn

from repro.models.base import RoutedHead, check_features, check_head
from repro.models.configs import PerSampleSoftMoEConfig
from repro.models.experts import ExpertBank


class PerSampleSoftMoEHead(RoutedHead):
    """Per-sample soft gating (Section 3.5), (B, in_features) -> (B, num_classes); `cfg` (PerSampleSoftMoEConfig)
    gives E and the experts' shape. Every expert runs on every image, weighted by a softmax over experts of the
    image's features against each expert's slot embedding, so a sample's output depends on that sample only. No
    auxiliary loss. The module docstring has the equations."""

    def __init__(self, in_features: int, num_classes: int, cfg: PerSampleSoftMoEConfig) -> None:
        check_head(self, in_features, num_classes, cfg, PerSampleSoftMoEConfig)
        super().__init__()
        self.in_features = in_features
        self.cfg = cfg
        self.slots = nn.Linear(in_features, cfg.num_experts, bias=False)  # rows are s_i, (E, D)
        self.experts = ExpertBank(
            cfg.num_experts, in_features, cfg.expert_hidden, num_classes, cfg.dropout, cfg.dropout_at
        )

    def forward(self, h: torch.Tensor) -> torch.Tensor:  # (B, D) -> (B, O)
        check_features(self, h, self.in_features)
        e = self.cfg.num_experts
        g = torch.softmax(self.slots(h), dim=-1)  # (B, E), softmax over experts
        y = self.experts(h.unsqueeze(0).expand(e, -1, -1))  # (E, B, D) -> (E, B, O)
        self._record_routing(g, torch.ones_like(g))
        return (g.t().unsqueeze(-1) * y).sum(0)  # (E, B, 1) * (E, B, O) -> (B, O)


def build_per_sample_soft_moe(in_features: int, num_classes: int, **params) -> nn.Module:
    """Per-sample Soft MoE: (B, in_features) features -> (B, num_classes) logits;
    `params` are PerSampleSoftMoEConfig's fields (repro.models.configs), checked there."""
    return PerSampleSoftMoEHead(in_features, num_classes, PerSampleSoftMoEConfig(**params))
