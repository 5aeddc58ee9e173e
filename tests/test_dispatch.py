"""loop and batched dispatch (Table 7's two expressions) give the same outputs and gradients."""

import random

import pytest
import torch

from repro.models.capacity import assign, capacity, dispatch_mask, top_k_assignment
from repro.models.dispatch import batched_dispatch, loop_dispatch
from repro.models.experts import ExpertBank


def constant_experts(e=3, d=4, o=2) -> ExpertBank:
    """Expert i outputs the constant vector (i + 1, -(i + 1)), whatever its input."""
    b = ExpertBank(e, d, 3, o, drop=0.0)
    with torch.no_grad():
        for w, bias in zip(b.weights, b.biases):
            w.zero_()
            bias.zero_()
        b.biases[2].copy_(torch.tensor([[i + 1.0, -(i + 1.0)] for i in range(e)]))
    return b


@pytest.mark.parametrize("dispatch", [loop_dispatch, batched_dispatch])
def test_combine_golden(dispatch):
    experts = constant_experts()
    h = torch.randn(3, 4)
    cand = torch.tensor([[0, 2], [1, 0], [2, 1]])
    a = top_k_assignment(cand)
    combine = torch.tensor([[0.25, 0.0, 0.75], [0.5, 0.5, 0.0], [0.0, 0.1, 0.9]])
    # o_b = sum_i C_{b,i} (i + 1) in the first output
    expected = torch.tensor([[0.25 + 2.25, 0], [0.5 + 1.0, 0], [0.2 + 2.7, 0]])
    expected[:, 1] = -expected[:, 0]
    torch.testing.assert_close(dispatch(h, experts, a, combine), expected)


def run(dispatch, experts, h, a, combine):
    experts.zero_grad()
    h = h.clone().requires_grad_(True)
    c = combine.clone().requires_grad_(True)
    out = dispatch(h, experts, a, c)
    (out * torch.linspace(-1, 1, out.numel()).view_as(out)).sum().backward()
    return out, h.grad, c.grad, [p.grad.clone() for p in experts.parameters()]


def test_loop_and_batched_agree_on_outputs_and_gradients():
    rng = random.Random(0)
    torch.manual_seed(0)
    for _ in range(30):
        e, b, d = rng.choice([2, 4, 8]), rng.randint(1, 24), 6
        k = rng.randint(1, e)
        experts = ExpertBank(e, d, 9, 5, drop=0.0)
        h = torch.randn(b, d)
        probs = (torch.randn(b, e) * 3).softmax(-1)
        cand = probs.topk(k, dim=-1).indices
        take = rng.choice([1, k])
        a = rng.choice([top_k_assignment(cand), assign(cand, capacity(0.5, b, k, e), take, e)])
        mp = dispatch_mask(a, e) * probs
        combine = mp / mp.sum(-1, keepdim=True)
        ref = run(loop_dispatch, experts, h, a, combine)
        fast = run(batched_dispatch, experts, h, a, combine)
        torch.testing.assert_close(fast[0], ref[0], rtol=0, atol=1e-6)
        for g_fast, g_ref in zip(fast[1:3], ref[1:3]):
            torch.testing.assert_close(g_fast, g_ref, rtol=0, atol=1e-6)
        for g_fast, g_ref in zip(fast[3], ref[3]):
            torch.testing.assert_close(g_fast, g_ref, rtol=0, atol=1e-6)


def test_batched_buffer_holds_a_whole_batch_on_one_expert():
    experts = constant_experts()
    cand = torch.zeros(5, 1, dtype=torch.long)  # every sample forced onto expert 0
    a = assign(cand, 1, 1, 3)
    assert a.forced.sum() == 4
    out = batched_dispatch(torch.randn(5, 4), experts, a, torch.tensor([[1.0, 0, 0]] * 5))
    torch.testing.assert_close(out, torch.tensor([[1.0, -1.0]] * 5))
