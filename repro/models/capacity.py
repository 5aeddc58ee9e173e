"""Hard expert capacity and greedy batch-order assignment (Section 3.3, Eq. 3).

Shapes: B batch, E experts, Kc candidate experts per sample (the top-k, best
first), A experts a sample may be assigned (1 or k).

    capacity = ceil(c * B * k / E)                                (Switch Transformer)

Samples are taken in batch order; each takes its best candidate whose expert is
not yet full. A sample whose candidates are all full is force-assigned to its
top-1 candidate, which may then hold more than `capacity` samples. No sample is
dropped. With every expert a candidate (Kc = E) and c >= 1 no sample is ever
forced: the E experts hold E capacity >= c B k >= B A placements.
With A = k (the "top_k" reading, an option), a sample takes up to k
candidates that still have room, in order, and is forced only if it took none.

Two implementations that must agree:
    assign_reference   a Python loop over samples, as the rule is written
    assign             tensor ops only (no host synchronisation): experts fill up at
                       most min(E, B A / capacity) times, and each pass over the batch
                       fixes the earliest fill, so that many passes plus one give the
                       sequential answer. With one candidate (Kc = 1, the paper's k = 1)
                       no sample can move, and one cumulative count settles who is forced.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch


class Assignment(NamedTuple):
    experts: torch.Tensor  # (B, A) long: assigned experts first, in candidate order; padding = top-1
    valid: torch.Tensor  # (B, A) bool: False on padding
    forced: torch.Tensor  # (B,) bool: every candidate was full


def capacity(capacity_factor: float, batch: int, k: int, num_experts: int) -> int:
    """Per-expert capacity ceil(c B k / E) (Eq. 3); rounding guards against float noise."""
    return math.ceil(round(capacity_factor * batch * k / num_experts, 9))


def dispatch_mask(a: Assignment, num_experts: int) -> torch.Tensor:
    """M in {0,1}^{B x E} from an assignment: (B, A) -> (B, E) float."""
    b = a.experts.shape[0]
    m = torch.zeros(b, num_experts, device=a.experts.device)
    return m.scatter_add(1, a.experts, a.valid.to(m.dtype)).clamp_max(1)


def top_k_assignment(cand: torch.Tensor) -> Assignment:
    """Plain top-k, no capacity (evaluation): every candidate is assigned."""
    b = cand.shape[0]
    return Assignment(
        cand, torch.ones_like(cand, dtype=torch.bool), torch.zeros(b, dtype=torch.bool, device=cand.device)
    )


def assign_reference(cand: torch.Tensor, cap: int, take: int, num_experts: int) -> Assignment:
    """Greedy batch-order assignment, sample by sample: cand (B, Kc) -> Assignment."""
    rows = cand.tolist()
    load = [0] * num_experts
    experts, valid, forced = [], [], []
    for row in rows:
        chosen: list[int] = []
        for e in row:
            if len(chosen) == take:
                break
            if load[e] < cap:
                chosen.append(e)
                load[e] += 1
        forced.append(not chosen)
        if not chosen:
            chosen = [row[0]]  # all candidates full: the top-1 expert, over capacity
        experts.append(chosen + [row[0]] * (take - len(chosen)))
        valid.append([True] * len(chosen) + [False] * (take - len(chosen)))
    dev = cand.device
    return Assignment(
        torch.tensor(experts, dtype=torch.long, device=dev).view(-1, take),
        torch.tensor(valid, dtype=torch.bool, device=dev).view(-1, take),
        torch.tensor(forced, dtype=torch.bool, device=dev).view(-1),
    )


def _takes(cand: torch.Tensor, fill: torch.Tensor, take: int, order: torch.Tensor) -> torch.Tensor:
    """Candidates each sample takes, given fill[e] = index of the sample that fills e. -> (B, Kc) bool."""
    room = order <= fill[cand]  # (B, Kc): expert not yet full when sample b arrives
    return room & (room.long().cumsum(1) <= take)


def _assign_single(cand: torch.Tensor, cap: int, num_experts: int) -> Assignment:
    """Kc = 1: each sample keeps its one candidate; it is forced when `cap` earlier samples hold it."""
    one_hot = torch.zeros(cand.shape[0], num_experts, dtype=torch.long, device=cand.device).scatter_(1, cand, 1)
    earlier = (one_hot.cumsum(0) - one_hot).gather(1, cand)  # (B, 1): earlier samples on the same expert
    return Assignment(cand, torch.ones_like(cand, dtype=torch.bool), (earlier >= cap).view(-1))


def assign(cand: torch.Tensor, cap: int, take: int, num_experts: int) -> Assignment:
    """The same assignment as `assign_reference`, with tensor ops only: cand (B, Kc) -> Assignment."""
    b, kc = cand.shape
    if kc == 1:
        return _assign_single(cand, cap, num_experts)
    dev = cand.device
    order = torch.arange(b, device=dev).unsqueeze(1)  # (B, 1)
    never = torch.full((num_experts,), b, dtype=torch.long, device=dev)
    fill = never.clone()  # (E,) sample index at which each expert fills up; B = not (yet) known to fill
    fixed = torch.zeros(num_experts, dtype=torch.bool, device=dev)
    fills = min(num_experts, b * take // cap)  # each fill uses cap of the at most B*A placements
    for _ in range(fills):  # each pass fixes the earliest remaining fill event, if any
        taken = _takes(cand, fill, take, order)  # (B, Kc)
        hits = torch.zeros(b, num_experts, device=dev).scatter_add(1, cand, taken.float())  # (B, E)
        reached = hits.cumsum(0) >= cap  # (B, E), monotone down the batch
        first = (~reached).long().sum(0)  # (E,) first index at which the load reaches cap; B if never
        earliest = torch.where(fixed, never + 1, first).min()
        new = ~fixed & (first == earliest) & (first < b)
        fill = torch.where(new, first, fill)
        fixed = fixed | new
    taken = _takes(cand, fill, take, order)  # (B, Kc)
    forced = ~taken.any(1)  # (B,)
    taken[:, 0] |= forced  # force-assign to the top-1 candidate
    order = torch.sort((~taken).to(torch.uint8), dim=1, stable=True).indices[:, :take]  # taken first
    experts = cand.gather(1, order)  # (B, A)
    valid = taken.gather(1, order)  # (B, A)
    experts = torch.where(valid, experts, cand[:, :1])
    return Assignment(experts, valid, forced)
