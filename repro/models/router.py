"""The sparse MoE router of Section 3.2 (Eq. 1), with the optional utility bias.

Shapes: B batch, D input features (d_in), E experts, Dk key dimension (d_k = 64).

    logits        l = W_r h                                 (B, E)
    key term      cos(K h, e_i)                             (B, E)
    scores        l~ = l + w_k cos(K h, e_i) [+ lambda_u u]  (B, E)
    probabilities p = softmax(l~ / tau)                     (B, E)

The utility bias lambda_u u_i (Section 3.3, "development note") adds an EMA of
each expert's gradient magnitude to the scores. The paper keeps it in its code
but finds it changed no top-k selection; it is off (lambda_u = 0) by default and
``utility_changes`` measures how many selections it changes when on.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class Router(nn.Module):
    utility: torch.Tensor  # buffer u, (E,)

    def __init__(
        self,
        in_features: int,
        num_experts: int,
        key_dim: int = 64,
        key_similarity_weight: float = 0.5,
        utility_weight: float = 0.0,
        utility_decay: float = 0.9,
    ) -> None:
        super().__init__()
        self.num_experts = num_experts
        self.key_similarity_weight = key_similarity_weight
        self.utility_weight = utility_weight
        self.utility_decay = utility_decay
        self.w_r = nn.Linear(in_features, num_experts, bias=False)  # W_r in R^{E x D}
        self.key_proj = nn.Linear(in_features, key_dim, bias=False)  # K in R^{Dk x D}
        self.expert_keys = nn.Parameter(torch.randn(num_experts, key_dim) / key_dim**0.5)  # e_i, (E, Dk)
        self.register_buffer("utility", torch.zeros(num_experts))  # u_i, (E,)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        """Scores of Eq. 1 before any utility bias, l + w_k cos(K h, e_i): (B, D) -> (B, E)."""
        logits = self.w_r(h)  # (B, E)
        q = F.normalize(self.key_proj(h), dim=-1)  # (B, Dk)
        k = F.normalize(self.expert_keys, dim=-1)  # (E, Dk)
        return logits + self.key_similarity_weight * (q @ k.t())  # (B, E)

    def with_utility(self, base: torch.Tensor) -> torch.Tensor:
        """Adds lambda_u u_i when lambda_u != 0: (B, E) -> (B, E)."""
        return base + self.utility_weight * self.utility if self.utility_weight else base

    def scores(self, h: torch.Tensor) -> torch.Tensor:
        """Combined routing scores l~: (B, D) -> (B, E)."""
        return self.with_utility(self(h))

    def own_macs(self, shapes) -> int:
        """Multiply-adds outside W_r and K (see repro.models.flops): the cosine term (B, Dk) @ (Dk, E)."""
        (h, *_), _ = shapes
        return h[0] * self.key_proj.out_features * self.num_experts

    @staticmethod
    def probs(scores: torch.Tensor, tau: float) -> torch.Tensor:
        """Routing probabilities p = softmax(l~ / tau): (B, E) -> (B, E)."""
        return torch.softmax(scores / tau, dim=-1)

    @torch.no_grad()
    def update_utility(self, grad_norms: torch.Tensor) -> None:
        """u <- beta u + (1 - beta) |grad_i|, grad_norms (E,) one gradient magnitude per expert."""
        self.utility.mul_(self.utility_decay).add_((1 - self.utility_decay) * grad_norms)


@torch.no_grad()
def utility_changes(base_scores: torch.Tensor, utility_bias: torch.Tensor, k: int) -> torch.Tensor:
    """Samples whose top-k expert set differs with the bias added: (B, E), (E,) -> () count."""
    without = base_scores.topk(k, dim=-1).indices.sort(-1).values  # (B, K)
    with_bias = (base_scores + utility_bias).topk(k, dim=-1).indices.sort(-1).values  # (B, K)
    return (without != with_bias).any(-1).sum()
