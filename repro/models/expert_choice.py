"""Expert Choice routing (Zhou et al., 2022) as the paper's baseline (Section 4.1).

Shapes: B batch (the tokens), D features, E experts, C samples per expert, O classes.

    S = softmax(X W_g) over experts                  (B, E)
    C = ceil(B c / E), at most B                     capacity per expert
    G, I = top-C of S[:, e] over the batch, per e    (E, C)
    o_b = sum_{e : b in I_e} G_{e,b} Expert_e(h_b)   (B, O); zero if no expert chose b

Each expert picks among the samples of the batch, so whether (and by how many
experts) a sample is processed depends on the rest of its batch.

FLOPs: a batch of B runs the router on every image and E C rows through the experts,
so an image costs D E + (E C / B) expert rows. At B = 1 every expert takes the one
image; `expected_macs` reports the per-image figure at the batch the head trains with
(repro.models.flops).
"""

from __future__ import annotations


import torch
from torch import nn

from repro.models.base import RoutedHead, check_features, check_head
from repro.models.configs import ExpertChoiceConfig
from repro.models.capacity import capacity
from repro.models.experts import ExpertBank


class ExpertChoiceHead(RoutedHead):
    """Expert Choice over the batch, (B, in_features) -> (B, num_classes); `cfg` (ExpertChoiceConfig) gives E, the
    capacity factor c and the experts' shape. Each expert takes its top ceil(B c / E) samples of the batch, so
    whether a sample is processed (a sample no expert chose outputs zero, counted as `dropped`) depends on the rest
    of its batch; FLOPs are per image at a stated batch (`expected_macs`). No auxiliary loss. The module docstring
    has the equations."""

    def __init__(self, in_features: int, num_classes: int, cfg: ExpertChoiceConfig) -> None:
        check_head(self, in_features, num_classes, cfg, ExpertChoiceConfig)
        super().__init__()
        self.in_features = in_features
        self.cfg = cfg
        self.gate = nn.Linear(in_features, cfg.num_experts, bias=False)  # W_g^T, (E, D)
        self.experts = ExpertBank(
            cfg.num_experts, in_features, cfg.expert_hidden, num_classes, cfg.dropout, cfg.dropout_at
        )

    batch_axis = True  # a sample's cost depends on its batch: FLOPs are reported at a stated batch

    def capacity_at(self, batch: int) -> int:
        """C = ceil(B c / E), at most B."""
        return min(capacity(self.cfg.capacity_factor, batch, 1, self.cfg.num_experts), batch)

    def batch_macs(self, batch: int) -> int:
        """Multiply-adds of one forward over `batch` images: the router B D E, then E C expert rows."""
        e = self.cfg.num_experts
        return batch * self.gate.in_features * e + e * self.capacity_at(batch) * self.experts.macs_per_row()

    def expected_macs(self, batch: int) -> int:
        """MACs per image in a batch of `batch` (see repro.models.flops), to the nearest MAC."""
        return round(self.batch_macs(batch) / batch)

    def forward(self, h: torch.Tensor) -> torch.Tensor:  # (B, D) -> (B, O)
        check_features(self, h, self.in_features)
        b = int(h.shape[0])
        cap = self.capacity_at(b)
        s = torch.softmax(self.gate(h), dim=-1)  # (B, E)
        g, idx = s.t().topk(cap, dim=-1)  # (E, C): each expert's chosen samples and their gates
        y = self.experts(h[idx])  # (E, C, D) -> (E, C, O)
        src = (g.unsqueeze(-1) * y).flatten(0, 1)  # (E*C, O); float32 under autocast, as the gates are
        out = src.new_zeros(b, y.shape[-1]).index_add(0, idx.flatten(), src)
        mask = torch.zeros_like(s).scatter(0, idx.t(), 1.0)  # (B, E)
        self._record_routing(s, mask, dropped=mask.sum(-1) == 0, capacity=cap)
        return out  # (B, O)


def build_expert_choice(in_features: int, num_classes: int, **params) -> nn.Module:
    """Expert Choice routing: (B, in_features) features -> (B, num_classes) logits;
    `params` are ExpertChoiceConfig's fields (repro.models.configs), checked there."""
    return ExpertChoiceHead(in_features, num_classes, ExpertChoiceConfig(**params))
