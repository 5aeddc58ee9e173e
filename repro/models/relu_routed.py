"""ReLU routing over the paper's experts (after DECO), with an adaptive L1 sparsity target.

Shapes: B batch, D features (d_in), E experts, N_e rows sent to expert e, O classes.

    g      = ReLU(W_r h)                            gates, no softmax, no top-k            (B, E)
    A_b    = {i : g_{b,i} > 0}                      the experts sample b executes          |A_b| in 0..E
    o_b    = sum_{i in A_b} g_{b,i} s_i Expert_i(h_b)   s_i a learnable expert-wise scale  (B, O)
    L_sp   = lambda_t mean_b sum_i g_{b,i}          L1 on the gates                        ()
    lambda_{t+1} = lambda_t * alpha^sign(a_t - a*)  a_t = mean_b |A_b| / E, a* the target (20%)

Source: DECO (ReLU-based routing with learnable expert-wise scaling, NormSiLU in the
experts, 20% of routed experts active). The abstract does not give the sparsity
regulariser, so the controller is ReMoE's (Wang et al. 2024: L1 on ReLU gates, its weight
multiplied by alpha = 1.2 up or down each step toward the target sparsity).
NormSiLU(x) = SiLU((x - mean x) / std x) over the hidden units (no affine): DECO's
"normalises the inputs before SiLU", read as a plain layer normalisation.

Adapted to a CNN backbone feeding a routed head of MLP experts: one routing decision per
image on the pooled backbone features; no shared experts (the paper's head has none),
so s_i only scales the routed experts; the experts are the paper's F -> h -> h -> O MLPs.

A sample whose gates are all closed outputs zero (counted as `dropped`), and no gradient
reopens a closed gate; DECO's shared experts would keep such a sample's output. Without
them, 40-60% of samples end with every gate closed on a toy problem
(tests/test_routers_learn.py), and the smoke profile's depthwise rows drop every sample.

rho: the number of experts a sample executes depends on the data. FLOPs count the
executed dispatch on the traced input (three counters agree on it) and then report the
mean: `expected_macs` puts `active_mean` experts per sample in place of the traced
count. `active_mean` starts at the target a* E (what the controller drives training to)
and follows the measured mean active experts per sample (an EMA) while training.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from repro.models.base import RoutedHead, check_features, check_head
from repro.models.configs import ReluRoutedConfig
from repro.models.experts import ExpertBank


class NormSiLU(nn.Module):
    """SiLU of the layer-normalised input (no affine), over the last axis: (..., H) -> (..., H)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.silu(F.layer_norm(x, x.shape[-1:]))


class ReluRoutedHead(RoutedHead):
    """ReLU gates over the paper's experts (beyond the paper), (B, in_features) -> (B, num_classes); `cfg`
    (ReluRoutedConfig) gives E, the experts' shape and the sparsity target. A sample runs the experts whose gate is
    open, however many; one with every gate closed outputs zero (counted as `dropped`). aux_loss() holds the L1
    sparsity loss, whose weight adapts each step toward the target; FLOPs are at the mean experts a sample runs
    (`expected_macs`). The module docstring has the equations."""

    sparsity_weight: torch.Tensor  # buffers: lambda_t, ()
    active_mean: torch.Tensor  # mean |A_b|, ()

    def __init__(self, in_features: int, num_classes: int, cfg: ReluRoutedConfig) -> None:
        check_head(self, in_features, num_classes, cfg, ReluRoutedConfig)
        super().__init__()
        self.in_features = in_features
        self.cfg = cfg
        e = cfg.num_experts
        self.router = nn.Linear(in_features, e, bias=False)  # W_r, (E, D)
        self.scale = nn.Parameter(torch.ones(e))  # s_i, (E,)
        self.experts = ExpertBank(e, in_features, cfg.expert_hidden, num_classes, cfg.dropout)
        if cfg.expert_activation == "norm_silu":
            self.experts.act = NormSiLU()
        self.register_buffer("sparsity_weight", torch.empty(()))  # lambda_t
        self.register_buffer("active_mean", torch.empty(()))  # mean |A_b|
        self.reset_counted_buffers()
        self._active_fraction: torch.Tensor | None = None

    def reset_counted_buffers(self) -> None:
        """The buffers at their starting values (lambda_0; `active_mean` = a* E); a model given plain values for
        counting (repro.models.flops.plain_values) sets them again, so that it counts a* E experts a sample."""
        with torch.no_grad():
            self.sparsity_weight.fill_(float(self.cfg.sparsity_weight_init))
            self.active_mean.fill_(self.cfg.target_active_fraction * self.cfg.num_experts)

    def gates(self, h: torch.Tensor) -> torch.Tensor:
        """g = ReLU(W_r h): (B, D) -> (B, E)."""
        return F.relu(self.router(h))

    def forward(self, h: torch.Tensor) -> torch.Tensor:  # (B, D) -> (B, O)
        check_features(self, h, self.in_features)
        g = self.gates(h)  # (B, E)
        mask = (g > 0).to(g.dtype)  # (B, E)
        combine = g * self.scale  # (B, E)
        out = h.new_zeros(h.shape[0], self.experts.out_features)  # (B, O)
        views = self.experts.views()
        for e in range(self.cfg.num_experts):
            rows = mask[:, e].nonzero(as_tuple=True)[0]  # (N_e,)
            if rows.numel():
                y = combine[rows, e, None] * self.experts(h[rows], e, views=views)  # (N_e, O)
                out = out.index_add(0, rows, y.to(out.dtype))
        active = mask.sum(1)  # (B,) |A_b|
        if self.training:
            self._aux = self.sparsity_weight * g.sum(1).mean()
            self._active_fraction = active.detach().mean() / self.cfg.num_experts
        total = g.sum(1, keepdim=True)  # (B, 1)
        probs = torch.where(total > 0, g / total.clamp_min(1e-12), torch.full_like(g, 1 / g.shape[1]))  # (B, E)
        self._record_routing(
            probs,
            mask,
            dropped=active == 0,
            active_experts=active,
            mean_active=active.mean(),
            sparsity_weight=self.sparsity_weight.clone(),
        )
        return out

    @torch.no_grad()
    def after_backward(self) -> None:
        """The controller: lambda up when more than the target fraction is active, down when fewer."""
        if self._active_fraction is None:
            return
        c = self.cfg
        self.sparsity_weight.mul_(c.sparsity_growth ** torch.sign(self._active_fraction - c.target_active_fraction))
        self.active_mean.mul_(c.active_mean_decay).add_(
            (1 - c.active_mean_decay) * self._active_fraction * c.num_experts
        )
        self._active_fraction = None

    def schedule_state(self) -> dict[str, float | int]:
        return {"sparsity_weight": float(self.sparsity_weight), "active_mean": float(self.active_mean)}

    def expected_macs(self, batch: int) -> int:
        """MACs of one sample at `active_mean` experts (see repro.models.flops): the router plus that many experts.
        A sample's gates are its own: the same at any `batch`."""
        router = self.router.in_features * self.router.out_features
        return router + round(float(self.active_mean) * self.experts.macs_per_row())


def build_relu_routed(in_features: int, num_classes: int, **params) -> nn.Module:
    """ReLU routing: (B, in_features) features -> (B, num_classes) logits;
    `params` are ReluRoutedConfig's fields (repro.models.configs), checked there."""
    return ReluRoutedHead(in_features, num_classes, ReluRoutedConfig(**params))
