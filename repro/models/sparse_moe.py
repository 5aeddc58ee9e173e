"""The paper's sparse MoE head (Sections 3.1-3.3): router, top-k, experts.

Shapes: B batch, D features (d_in), E experts, K top-k, O classes.

At evaluation a sample goes to its plain top-k experts and its output is the
probability-weighted sum of their outputs, renormalised over the selected experts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch
from torch import nn

from repro.models.experts import MLPExpert
from repro.models.heads import HEADS
from repro.models.router import Router


@dataclass(frozen=True)
class SparseMoEConfig:
    num_experts: int = 8
    expert_hidden: int = 304  # h: 304 CIFAR, 1024 Tiny-ImageNet, 512 ImageNet (Section 3.1)
    top_k: int = 1
    key_dim: int = 64  # d_k
    key_similarity_weight: float = 0.5  # w_k
    dropout: float = 0.3
    tau_max: float = 1.0
    tau_min: float = 0.13
    tau_schedule: Literal["linear", "sigmoid"] = "linear"
    dispatch: Literal["loop", "batched"] = "loop"


class SparseMoEHead(nn.Module):
    routed = True

    def __init__(self, in_features: int, num_classes: int, cfg: SparseMoEConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.router = Router(in_features, cfg.num_experts, cfg.key_dim, cfg.key_similarity_weight)
        self.experts = nn.ModuleList(
            MLPExpert(in_features, cfg.expert_hidden, num_classes, cfg.dropout) for _ in range(cfg.num_experts)
        )
        self.tau = cfg.tau_max
        self.num_classes = num_classes

    def forward(self, h: torch.Tensor) -> torch.Tensor:  # (B, D) -> (B, O)
        p = self.router(h, self.tau)  # (B, E)
        top_p, top_i = p.topk(self.cfg.top_k, dim=-1)  # (B, K)
        gates = top_p / top_p.sum(-1, keepdim=True)  # combine weights over selected experts
        out = h.new_zeros(h.shape[0], self.num_classes)
        for e, expert in enumerate(self.experts):
            rows, slot = (top_i == e).nonzero(as_tuple=True)
            if rows.numel():
                out.index_add_(0, rows, gates[rows, slot, None] * expert(h[rows]))
        return out


@HEADS.register("sparse_moe", config=SparseMoEConfig, doc="the paper's sparse top-k MoE head with hard capacity")
def build_sparse_moe(in_features: int, num_classes: int, **params) -> nn.Module:
    return SparseMoEHead(in_features, num_classes, SparseMoEConfig(**params))
