"""Auxiliary routing losses of the sparse MoE head (Section 3.4, Eq. 4-5).

Shapes: B batch, E experts.

    L      = CE + lambda_lb L_lb + lambda_ent L_ent
    L_lb   = E sum_i f_i P_i        f_i share of expert i's dispatches, P_i mean p_{b,i}
    L_ent  = -H(p_bar)              p_bar the batch-mean routing distribution

"f_i the fraction of samples dispatched to expert i" (Section 3.4) reads two ways
once a sample may take several experts (the k = 8 -> 1 warm-up): counts_i over
every dispatch ("dispatches", the default: sum_i f_i = 1, L_lb is 1 for uniform
routing at any k) or over the B samples ("samples": sum_i f_i = k, so L_lb is k
times larger). With one expert per sample the two are equal. The reading
"lb-fraction" (repro/spec/readings.toml) names both. f is a count (no gradient), so
L_lb reaches the router through P; L_lb is E when every sample goes to one
expert with probability 1.
"""

from __future__ import annotations

from typing import Literal

import torch

from repro.models.base import entropy


def load_balance_loss(
    probs: torch.Tensor, mask: torch.Tensor, fraction: Literal["dispatches", "samples"] = "dispatches"
) -> torch.Tensor:
    """Switch Transformer load-balance loss: probs (B, E), dispatch mask (B, E) -> ()."""
    b, e = probs.shape
    counts = mask.detach().sum(0)  # (E,)
    if fraction == "dispatches":
        f = counts / counts.sum().clamp_min(1)  # (E,) share of all dispatches
    elif fraction == "samples":
        f = counts / b  # (E,) share of the B samples; sums to the experts per sample
    else:
        raise ValueError(f"unknown load-balance fraction '{fraction}'")
    p_mean = probs.mean(0)  # (E,)
    return e * (f * p_mean).sum()


def entropy_loss(probs: torch.Tensor) -> torch.Tensor:
    """-H(p_bar): probs (B, E) -> (); minimising it spreads the batch-mean routing."""
    return -entropy(probs.mean(0))
