"""Soft MoE (Puigcerver et al., 2024) as the paper's baseline (Section 4.1): the batch is the token group.

Shapes: B batch (the tokens), D features, E experts, S slots per expert, O classes.

    logits = X Phi                 X (B, D), Phi (D, E*S)              (B, E*S)
    D      = softmax over the batch axis (dispatch)                    (B, E*S)
    X~     = D^T X                 each slot a weighted mean of images (E*S, D)
    Y~     = Expert_i(X~ slots of expert i)                            (E*S, O)
    C      = softmax over the slot axis (combine)                      (B, E*S)
    Y      = C Y~                                                      (B, O)

Every slot averages unrelated images, so a sample's output depends on the rest of
its batch: the batch-mixing dispatch the paper finds collapsing (Sections 4.3, 5.4).
FLOPs: a batch of B costs B D E S (Phi) + E S B D (D^T X) + E S expert rows + B E S O
(C Y~), so an image costs 2 D E S + E S O + (E S / B) expert rows. At B = 1 all the
slots are spent on one image; `expected_macs` reports the per-image figure at the batch
the head trains with (repro.models.flops).
Puigcerver et al.'s optional l2-normalisation of X and Phi is left out: the paper
does not mention it.
"""

from __future__ import annotations


import torch
from torch import nn

from repro.models.base import RoutedHead, check_features, check_head
from repro.models.configs import SoftMoEConfig
from repro.models.experts import ExpertBank


class SoftMoEHead(RoutedHead):
    """Soft MoE over the batch, (B, in_features) -> (B, num_classes); `cfg` (SoftMoEConfig) gives E, the slots per
    expert and the experts' shape. A sample's output depends on the rest of its batch (the module docstring)."""

    def __init__(self, in_features: int, num_classes: int, cfg: SoftMoEConfig) -> None:
        check_head(self, in_features, num_classes, cfg, SoftMoEConfig)
        super().__init__()
        self.in_features = in_features
        self.cfg = cfg
        self.num_slots = cfg.num_experts * cfg.slots_per_expert
        self.phi = nn.Linear(in_features, self.num_slots, bias=False)  # Phi^T, (E*S, D)
        self.experts = ExpertBank(
            cfg.num_experts, in_features, cfg.expert_hidden, num_classes, cfg.dropout, cfg.dropout_at
        )

    batch_axis = True  # a sample's cost depends on its batch: FLOPs are reported at a stated batch

    def batch_macs(self, batch: int) -> int:
        """Multiply-adds of one forward over `batch` images: Phi, then the experts on the E S slots, then
        D^T X and C Y~ (own_macs)."""
        d, o = self.phi.in_features, self.experts.out_features
        phi = batch * d * self.num_slots
        experts = self.num_slots * self.experts.macs_per_row()
        return phi + experts + self.own_macs(([torch.Size((batch, d))], torch.Size((batch, o))))

    def expected_macs(self, batch: int) -> int:
        """MACs per image in a batch of `batch` (see repro.models.flops), to the nearest MAC."""
        return round(self.batch_macs(batch) / batch)

    def own_macs(self, shapes) -> int:
        """Dispatch D^T X and combine C Y~ (see repro.models.flops)."""
        (h, *_), out = shapes
        return self.num_slots * h[0] * h[1] + h[0] * self.num_slots * out[1]

    def forward(self, h: torch.Tensor) -> torch.Tensor:  # (B, D) -> (B, O)
        check_features(self, h, self.in_features)
        e, s = self.cfg.num_experts, self.cfg.slots_per_expert
        logits = self.phi(h)  # (B, E*S)
        dispatch = torch.softmax(logits, dim=0)  # over the batch: each slot's weights over images
        combine = torch.softmax(logits, dim=1)  # over slots: each image's weights over slots
        slots = dispatch.t() @ h  # (E*S, B) @ (B, D) -> (E*S, D)
        y = self.experts(slots.view(e, s, -1)).reshape(e * s, -1)  # (E, S, D) -> (E*S, O)
        probs = combine.view(-1, e, s).sum(-1)  # (B, E): each image's combine mass per expert
        self._record_routing(probs, torch.ones_like(probs))
        return combine @ y  # (B, E*S) @ (E*S, O) -> (B, O)


def build_soft_moe(in_features: int, num_classes: int, **params) -> nn.Module:
    """Soft MoE over the batch: (B, in_features) features -> (B, num_classes) logits;
    `params` are SoftMoEConfig's fields (repro.models.configs), checked there."""
    return SoftMoEHead(in_features, num_classes, SoftMoEConfig(**params))
