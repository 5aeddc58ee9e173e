"""Auxiliary routing losses of the sparse MoE head (Section 3.4, Eq. 4-5).

Shapes: B batch, E experts.

    L      = CE + lambda_lb L_lb + lambda_ent L_ent
    L_lb   = E sum_i f_i P_i        f_i fraction of dispatches to expert i, P_i mean p_{b,i}
    L_ent  = -H(p_bar)              p_bar the batch-mean routing distribution

L_lb is 1 for uniform routing and E when every sample goes to one expert with
probability 1. f is a count (no gradient), so L_lb reaches the router through P.
"""

from __future__ import annotations

import torch

from repro.models.base import entropy


def load_balance_loss(probs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Switch Transformer load-balance loss: probs (B, E), dispatch mask (B, E) -> ()."""
    e = probs.shape[-1]
    counts = mask.detach().sum(0)  # (E,)
    f = counts / counts.sum().clamp_min(1)  # (E,) fraction of dispatches; over B when one expert per sample
    p_mean = probs.mean(0)  # (E,)
    return e * (f * p_mean).sum()


def entropy_loss(probs: torch.Tensor) -> torch.Tensor:
    """-H(p_bar): probs (B, E) -> (); minimising it spreads the batch-mean routing."""
    return -entropy(probs.mean(0))
