"""The paper's sparse MoE head (Sections 3.1-3.4): router, top-k, hard capacity, experts.

Shapes: B batch, D features (d_in), E experts, K top-k, Kc candidates, A experts
per sample, O classes.

    p = softmax(l~ / tau)                      router, Eq. 1          (B, E)
    candidates = top-Kc of p                   best first             (B, Kc)
    training:   greedy batch-order assignment under capacity ceil(c B k / E)  (Eq. 3)
    evaluation: plain top-k, no capacity (Section 5.3 reads test-time routing this way)
    M           dispatch mask                                     (B, E)
    C = M p / sum_j M p                        combine weights    (B, E)
    o_b = sum_i C_{b,i} Expert_i(h_b)                             (B, O)
    aux = lambda_lb L_lb + lambda_ent L_ent    (Eq. 4-5), training forwards only

Reading of Section 3.3 (tools/investigate/FINDINGS.md has the evidence). In
training a sample takes up to the current k experts with room ("top_k", the
default), walking down its whole ranking ("all" candidates) before the top-1
fallback. Only then does every mechanism the text describes act: the k = 8 -> 1
warm-up dispatches to several experts, C = M p / sum M p differs from 1 and
carries the task loss to the router, and at k = 1 the capacity ceiling moves
samples off full experts. Under this rule the fallback never happens, which is
stronger than the text's "rare": E ceil(c B k / E) >= c B k >= B k for c >= 1, so
some expert has room for every sample (tests/test_capacity.py). After the warm-up
(k = 1) C = 1 and the router learns from L_lb and L_ent alone. Alternative
readings (repro/spec/readings.toml): experts_per_sample = "one" (one expert per sample
even during the warm-up) and capacity_candidates = 0 (only the top-k are
candidates: at k = 1 capacity then never moves a sample, and every sample whose
expert is full is forced onto it).
"""

from __future__ import annotations


import torch
from torch import nn

from repro.models.aux_losses import entropy_loss, load_balance_loss
from repro.models.base import RoutedHead, check_features, check_head
from repro.models.configs import SparseMoEConfig
from repro.models.capacity import assign, assign_reference, capacity, dispatch_mask, top_k_assignment
from repro.models.dispatch import DISPATCH
from repro.models.experts import ExpertBank
from repro.models.router import Router, utility_changes
from repro.models.schedules import progress, step_progress, temperature, warmup_k


class SparseMoEHead(RoutedHead):
    """The paper's sparse MoE head, (B, in_features) -> (B, num_classes). `cfg` (SparseMoEConfig, each field
    commented there) gives E, h, k, the capacity rule, the schedules of tau and k and the auxiliary losses' weights;
    the module docstring has the equations. Training forwards route under capacity and leave their weighted
    auxiliary loss in aux_loss(); evaluation is plain top-k. on_epoch_start sets tau and k for an epoch."""

    def __init__(self, in_features: int, num_classes: int, cfg: SparseMoEConfig) -> None:
        check_head(self, in_features, num_classes, cfg, SparseMoEConfig)
        super().__init__()
        self.in_features = in_features
        self.cfg = cfg
        self.router = Router(
            in_features, cfg.num_experts, cfg.key_dim, cfg.key_similarity_weight, cfg.utility_weight, cfg.utility_decay
        )
        self.experts = ExpertBank(
            cfg.num_experts, in_features, cfg.expert_hidden, num_classes, cfg.dropout, cfg.dropout_at
        )
        self.num_classes = num_classes
        # FLOPs_routed (Section 3.1): the whole head, or its experts alone (the reading "router-in-rho";
        # repro.models.flops)
        self.rho_parts = () if cfg.rho_counts_router else ("experts",)
        self.on_epoch_start(0, 1)

    def on_epoch_start(self, epoch: int, num_epochs: int) -> None:
        """tau from the temperature schedule at t/T = epoch/(num_epochs-1); k from the warm-up."""
        c = self.cfg
        self._epoch, self._epochs = epoch, num_epochs
        self.tau = self._temperature(progress(epoch, num_epochs))
        self.current_k = warmup_k(epoch, c.top_k, c.k_warmup_start, c.k_warmup_epochs, c.k_warmup_form)

    def on_step(self, step: int, steps: int) -> None:
        """With tau_step = "step", tau at this training step of the run (repro.models.schedules.step_progress)."""
        if self.cfg.tau_step == "step":
            self.tau = self._temperature(step_progress(self._epoch, self._epochs, step, steps))

    def _temperature(self, frac: float) -> float:
        c = self.cfg
        return temperature(frac, c.tau_max, c.tau_min, c.tau_schedule, c.tau_sharpness, c.tau_sigmoid_form)

    def schedule_state(self) -> dict[str, float | int]:
        return {"tau": self.tau, "k": self.current_k}

    def route(self, h: torch.Tensor):
        """Scores -> (probs (B, E), assignment, candidates (B, Kc), capacity or 0, base scores (B, E))."""
        c, e, k = self.cfg, self.cfg.num_experts, self.current_k
        base = self.router(h)  # (B, E)
        p = self.router.probs(self.router.with_utility(base), self.tau)  # (B, E)
        if not self.training:  # plain top-k without capacity (Section 5.3)
            cand = p.topk(k, dim=-1).indices  # (B, K)
            return p, top_k_assignment(cand), cand, 0, base
        n_cand = e if c.capacity_candidates == "all" else max(k, c.capacity_candidates)
        cand = p.topk(n_cand, dim=-1).indices  # (B, Kc)
        cap = capacity(c.capacity_factor, int(h.shape[0]), k, e)
        take = 1 if c.experts_per_sample == "one" else k
        rule = assign_reference if c.dispatch == "loop" else assign
        return p, rule(cand, cap, take, e), cand, cap, base

    def forward(self, h: torch.Tensor) -> torch.Tensor:  # (B, D) -> (B, O)
        check_features(self, h, self.in_features)
        p, a, cand, cap, base = self.route(h)
        mask = dispatch_mask(a, self.cfg.num_experts)  # M, (B, E)
        # C = M p / sum_j M p, as a softmax of l~/tau over the assigned experts: a sample that capacity
        # moves to a low-ranked expert can have p = 0 in float32 at tau = 0.13, and M p / sum M p is 0/0.
        scores = self.router.with_utility(base) / self.tau
        combine = torch.softmax(scores.masked_fill(mask == 0, float("-inf")), dim=-1)  # C, (B, E)
        out = DISPATCH[self.cfg.dispatch](h, self.experts, a, combine)  # (B, O)
        if self.training:
            self._aux = self.cfg.load_balance_weight * load_balance_loss(p, mask, self.cfg.load_balance_fraction) + (
                self.cfg.entropy_weight * entropy_loss(p)
            )
        rerouted = a.valid[:, 0] & ~a.forced & (a.experts[:, 0] != cand[:, 0])  # (B,) not on top-1, not forced
        changed = (
            utility_changes(base, self.router.utility_weight * self.router.utility, self.current_k)
            if self.router.utility_weight
            else torch.zeros((), dtype=torch.long, device=h.device)
        )
        self._record_routing(
            p,
            mask,
            forced=a.forced,
            rerouted=rerouted.sum(),
            utility_changed=changed,
            tau=self.tau,
            k=self.current_k,
            capacity=cap,
        )
        return out

    def after_backward(self) -> None:
        """u_i <- EMA of expert i's gradient magnitude (Section 3.3 development note); tracked even
        when lambda_u = 0, so its size next to the router's score margins can be inspected."""
        self.router.update_utility(self.experts.grad_norms())


def build_sparse_moe(in_features: int, num_classes: int, **params) -> nn.Module:
    """The paper's sparse MoE head: (B, in_features) features -> (B, num_classes) logits;
    `params` are SparseMoEConfig's fields (repro.models.configs), checked there."""
    return SparseMoEHead(in_features, num_classes, SparseMoEConfig(**params))
