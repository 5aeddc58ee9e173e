"""Cluster-label routing (after CLEAR-MoE) with optional shared-basis experts.

Shapes: B batch, D features (d_in), E experts = clusters, N rows kept for k-means,
r shared rank, H hidden width h, O classes.

    c      = kmeans(h_n, E)                      centres of warm-up backbone features   (E, D)
    z_b    = argmin_e ||h_b - c_e||^2            cluster label                          (B,)
    l      = W_r h + b_r,  p = softmax(l)        a lightweight router                   (B, E)
    L_c    = lambda_c CE(l_b, z_b)               the router learns the labels           ()
    train: expert z_b (after the warm-up; the router's top-1 before it)   evaluation: expert argmax p_b
    o_b    = Expert_e(h_b)                       one expert per sample, combine weight p/p = 1

Shared-basis experts (shared_rank r > 0): every expert layer is
    W_{e} x + b_e = (U V) x + R_e x + b_e        U (out, r), V (r, in) shared by all experts,
                                                 R_e (out, in) expert e's residual
so a sample executes in*out + r*(in + out) multiply-adds per layer.

Source: CLEAR-MoE (k-means clusters of features, routers supervised by cluster labels,
experts as a shared low-rank SVD basis plus per-cluster residuals; it finds the shared
basis, not the router, keeps the accuracy). Adapted to a CNN backbone feeding a routed
head trained from scratch: there is no pretrained FFN to decompose, so the basis and the
residuals are learned, not an SVD; the clusters are of the pooled backbone features the
head reads, fitted once (seeded torch k-means) on the rows kept in the last warm-up
epoch (a run resumed exactly at the switch fits on its first batch instead); the
backbone keeps training, and labels come from the fixed centres.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from repro.models.base import RoutedHead, check_features, check_head
from repro.models.configs import ClusterRoutedConfig
from repro.models.experts import ExpertBank, ExpertViews
from repro.models.kmeans import Reservoir, kmeans, nearest


class SharedBasisExpertBank(ExpertBank):
    """ExpertBank whose stacked weights are per-expert residuals R_e beside a shared rank-r basis U V."""

    def __init__(
        self,
        num_experts: int,
        in_features: int,
        hidden_features: int,
        out_features: int,
        drop: float = 0.3,
        rank: int = 16,
    ) -> None:
        super().__init__(num_experts, in_features, hidden_features, out_features, drop)
        self.rank = rank
        sizes = [(w.shape[1], w.shape[2]) for w in self.weights]  # (out, in) of each layer
        self.basis_in = nn.ParameterList(nn.Parameter(torch.empty(rank, i)) for _, i in sizes)  # V, (r, in)
        self.basis_out = nn.ParameterList(nn.Parameter(torch.empty(o, rank)) for o, _ in sizes)  # U, (out, r)
        for v, u in zip(self.basis_in, self.basis_out):
            nn.init.uniform_(v, -1 / math.sqrt(v.shape[1]), 1 / math.sqrt(v.shape[1]))
            nn.init.uniform_(u, -1 / math.sqrt(rank), 1 / math.sqrt(rank))

    def macs_per_row(self) -> int:
        return super().macs_per_row() + sum(
            v.shape[0] * (v.shape[1] + u.shape[0]) for v, u in zip(self.basis_in, self.basis_out)
        )

    def forward(self, x: torch.Tensor, expert: int | None = None, views: ExpertViews | None = None) -> torch.Tensor:
        """(N, D) rows of one expert -> (N, O)."""
        if expert is None:
            raise ValueError("SharedBasisExpertBank runs one expert at a time (loop dispatch)")
        last = len(self.weights) - 1
        weights, biases = views or self.views()
        for i, (v, u) in enumerate(zip(self.basis_in, self.basis_out)):
            x = F.linear(x, weights[i][expert], biases[i][expert]) + F.linear(F.linear(x, v), u)  # (N, in) -> (N, out)
            if i < last:
                x = self.dropout(self.act(x))
        return x


class ClusterRoutedHead(RoutedHead):
    """Cluster-label routing (beyond the paper), (B, in_features) -> (B, num_classes); `cfg` (ClusterRoutedConfig)
    gives E, the experts' shape, the warm-up and the shared rank. After the warm-up each training sample goes to
    the expert of its k-means cluster of backbone features, and aux_loss() holds the router's cross-entropy toward
    those labels; evaluation takes the router's top-1. One expert a sample. The module docstring has the
    equations."""

    centres: torch.Tensor  # buffers: c, (E, D)
    fitted: torch.Tensor  # bool, ()

    def __init__(self, in_features: int, num_classes: int, cfg: ClusterRoutedConfig) -> None:
        check_head(self, in_features, num_classes, cfg, ClusterRoutedConfig)
        super().__init__()
        self.in_features = in_features
        self.cfg = cfg
        e = cfg.num_experts
        self.router = nn.Linear(in_features, e)  # W_r, b_r
        args = (e, in_features, cfg.expert_hidden, num_classes, cfg.dropout)
        self.experts = SharedBasisExpertBank(*args, rank=cfg.shared_rank) if cfg.shared_rank else ExpertBank(*args)
        self.register_buffer("centres", torch.zeros(e, in_features))  # c, (E, D)
        self.register_buffer("fitted", torch.tensor(False))
        self.reservoir = Reservoir(cfg.kmeans_samples)
        self.warming = True

    def on_epoch_start(self, epoch: int, num_epochs: int) -> None:
        self.warming = epoch < self.cfg.warmup_epochs

    def schedule_state(self) -> dict[str, float | int]:
        return {"cluster_warmup": int(self.warming)}

    @torch.no_grad()
    def fit_clusters(self, rows: torch.Tensor) -> None:
        """c = kmeans(rows, E) from backbone feature rows (N, D)."""
        c = self.cfg
        self.centres.copy_(kmeans(rows, c.num_experts, c.kmeans_iters, c.kmeans_seed))
        self.fitted.fill_(True)

    def labels(self, h: torch.Tensor) -> torch.Tensor:
        """z_b, the nearest centre: (B, D) -> (B,)."""
        return nearest(h.detach(), self.centres)

    def forward(self, h: torch.Tensor) -> torch.Tensor:  # (B, D) -> (B, O)
        check_features(self, h, self.in_features)
        e = self.cfg.num_experts
        logits = self.router(h)  # (B, E)
        p = torch.softmax(logits, dim=-1)  # (B, E)
        choice = p.argmax(-1)  # (B,)
        self._aux = None
        extra = {}
        if self.training and self.warming:
            self.reservoir.add(h)
        elif self.training:
            if not bool(self.fitted):
                kept = self.reservoir.take()
                self.fit_clusters(kept if kept is not None and kept.shape[0] >= e else h.detach())
            z = self.labels(h)  # (B,)
            self._aux = self.cfg.label_weight * F.cross_entropy(logits, z)
            extra["label_agreement"] = (choice == z).float().mean()
            choice = z
        mask = F.one_hot(choice, e).to(h.dtype)  # (B, E)
        out = h.new_zeros(h.shape[0], self.experts.out_features)  # (B, O)
        views = self.experts.views()
        for i in range(e):
            rows = (choice == i).nonzero(as_tuple=True)[0]  # (N_i,)
            if rows.numel():
                out = out.index_add(0, rows, self.experts(h[rows], i, views=views).to(out.dtype))
        self._record_routing(p, mask, **extra)
        return out


def build_cluster_routed(in_features: int, num_classes: int, **params) -> nn.Module:
    """The cluster-routed head: (B, in_features) features -> (B, num_classes) logits;
    `params` are ClusterRoutedConfig's fields (repro.models.configs), checked there."""
    return ClusterRoutedHead(in_features, num_classes, ClusterRoutedConfig(**params))
