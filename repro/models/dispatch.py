"""Two ways to run the routed experts of the sparse head (Section 3.3; cost in Table 7).

Shapes: B batch, D features, E experts, A experts per sample, S slots per expert,
O outputs.

Both compute o_b = sum_i C_{b,i} Expert_i(h_b) for an assignment and combine
weights C (B, E), and agree to float rounding:

    loop_dispatch     a Python loop over experts: gather the expert's rows, run it,
                      scatter-add back. One kernel sequence per expert, as in the
                      paper's code, whose launch overhead Table 7 measures.
    batched_dispatch  rows scattered into an (E, S, D) buffer, one torch.bmm per
                      layer, results gathered back. No per-expert loop and no host
                      synchronisation. S = B: a forced (training) or plain top-k
                      (evaluation) assignment can send the whole batch to one expert,
                      so B is the only static bound; empty slots cost compute.
"""

from __future__ import annotations

import torch

from repro.models.capacity import Assignment, dispatch_mask
from repro.models.experts import ExpertBank


def loop_dispatch(h: torch.Tensor, experts: ExpertBank, a: Assignment, combine: torch.Tensor) -> torch.Tensor:
    """(B, D) -> (B, O), looping over experts."""
    mask = dispatch_mask(a, experts.num_experts)  # (B, E)
    out = h.new_zeros(h.shape[0], experts.out_features)  # (B, O)
    views = experts.views()
    for e in range(experts.num_experts):
        rows = mask[:, e].nonzero(as_tuple=True)[0]  # (N_e,)
        if rows.numel():
            y = combine[rows, e, None] * experts(h[rows], e, views=views)  # (N_e, O)
            out = out.index_add(0, rows, y.to(out.dtype))
    return out


def batched_dispatch(h: torch.Tensor, experts: ExpertBank, a: Assignment, combine: torch.Tensor) -> torch.Tensor:
    """(B, D) -> (B, O) with stacked expert weights and one bmm per layer."""
    b, d = h.shape
    n_exp, slots = experts.num_experts, h.shape[0]
    na = a.experts.shape[1]
    mask = dispatch_mask(a, n_exp)  # (B, E)
    pos = (mask.cumsum(0) - mask).long().gather(1, a.experts)  # (B, A): earlier samples on that expert
    trash = n_exp * slots  # one spare row receives every padding pair
    slot = torch.where(a.valid, a.experts * slots + pos, trash).flatten()  # (B*A,)
    rows = h.unsqueeze(1).expand(b, na, d).reshape(b * na, d)  # (B*A, D)
    buf = h.new_zeros(trash + 1, d).index_add(0, slot, rows)  # (E*S + 1, D)
    y = experts(buf[:trash].view(n_exp, slots, d))  # (E, S, D) -> (E, S, O)
    y = torch.cat([y.reshape(trash, -1), y.new_zeros(1, y.shape[-1])])  # (E*S + 1, O)
    w = combine.gather(1, a.experts) * a.valid  # (B, A)
    return (w.unsqueeze(-1) * y.index_select(0, slot).view(b, na, -1)).sum(1)  # (B, O)


DISPATCH = {"loop": loop_dispatch, "batched": batched_dispatch}
