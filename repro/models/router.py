"""The sparse MoE router of Section 3.2 (Eq. 1).

Shapes: B batch, D input features (d_in), E experts, Dk key dimension (d_k = 64).

    logits        l = W_r h                          (B, E)
    key term      cos(K h, e_i)                      (B, E)
    scores        l~ = l + w_k * cos(K h, e_i)       (B, E)
    probabilities p = softmax(l~ / tau)              (B, E)
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class Router(nn.Module):
    def __init__(self, in_features: int, num_experts: int, key_dim: int = 64, key_similarity_weight: float = 0.5) -> None:
        super().__init__()
        self.num_experts = num_experts
        self.key_similarity_weight = key_similarity_weight
        self.w_r = nn.Linear(in_features, num_experts, bias=False)  # W_r in R^{E x D}
        self.key_proj = nn.Linear(in_features, key_dim, bias=False)  # K in R^{Dk x D}
        self.expert_keys = nn.Parameter(torch.randn(num_experts, key_dim) / key_dim**0.5)  # e_i, (E, Dk)

    def scores(self, h: torch.Tensor) -> torch.Tensor:
        """Combined routing scores l~ (Eq. 1): (B, D) -> (B, E)."""
        logits = self.w_r(h)  # (B, E)
        q = F.normalize(self.key_proj(h), dim=-1)  # (B, Dk)
        k = F.normalize(self.expert_keys, dim=-1)  # (E, Dk)
        return logits + self.key_similarity_weight * (q @ k.t())  # (B, E)

    def own_macs(self, shapes) -> int:
        """Multiply-adds outside W_r and K (see repro.flops): the cosine term (B, Dk) @ (Dk, E)."""
        (h, *_), _ = shapes
        return h[0] * self.key_proj.out_features * self.num_experts

    def forward(self, h: torch.Tensor, tau: float) -> torch.Tensor:
        """Routing probabilities p = softmax(l~ / tau): (B, D) -> (B, E)."""
        return torch.softmax(self.scores(h) / tau, dim=-1)
