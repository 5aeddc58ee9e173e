"""Router scores of Eq. 1 (Section 3.2) and the utility bias (Section 3.3), by hand."""

import math

import torch

from repro.models.router import Router, utility_changes
from repro.models.sparse_moe import SparseMoEConfig, SparseMoEHead


def hand_router(w_k: float = 0.5, **kw) -> Router:
    r = Router(in_features=2, num_experts=2, key_dim=2, key_similarity_weight=w_k, **kw)
    with torch.no_grad():
        r.w_r.weight.copy_(torch.tensor([[1.0, 0.0], [0.0, 1.0]]))  # W_r
        r.key_proj.weight.copy_(torch.tensor([[2.0, 0.0], [0.0, 2.0]]))  # K
        r.expert_keys.copy_(torch.tensor([[1.0, 0.0], [0.0, 3.0]]))  # e_1, e_2
    return r


def test_scores_golden():
    # h = (1, 2): l = W_r h = (1, 2); K h = (2, 4), |K h| = 2 sqrt 5;
    # cos(K h, e_1) = 1/sqrt5, cos(K h, e_2) = 2/sqrt5; l~ = l + 0.5 cos
    r = hand_router()
    h = torch.tensor([[1.0, 2.0], [-3.0, 0.0]])
    s5 = math.sqrt(5)
    expected = torch.tensor(
        [
            [1 + 0.5 / s5, 2 + 0.5 * 2 / s5],
            [-3 + 0.5 * -1.0, 0 + 0.5 * 0.0],  # K h = (-6, 0): cos = -1 with e_1, 0 with e_2
        ]
    )
    torch.testing.assert_close(r.scores(h), expected, rtol=0, atol=1e-6)


def test_probabilities_are_softmax_of_scores_over_tau():
    r = hand_router()
    h = torch.tensor([[1.0, 2.0]])
    s5 = math.sqrt(5)
    gap = (2 + 1 / s5) - (1 + 0.5 / s5)  # l~_2 - l~_1
    p2 = 1 / (1 + math.exp(-gap / 0.5))  # tau = 0.5
    torch.testing.assert_close(r.probs(r.scores(h), tau=0.5), torch.tensor([[1 - p2, p2]]), rtol=0, atol=1e-6)


def test_key_weight_zero_leaves_plain_logits():
    r = hand_router(w_k=0.0)
    h = torch.tensor([[0.3, -0.7]])
    torch.testing.assert_close(r.scores(h), torch.tensor([[0.3, -0.7]]))


def test_own_macs_is_the_cosine_matmul():
    r = Router(in_features=10, num_experts=8, key_dim=64)
    assert r.own_macs(([torch.Size([5, 10])], torch.Size([5, 8]))) == 5 * 64 * 8


def test_utility_bias_is_added_to_scores():
    r = hand_router(utility_weight=2.0)
    r.utility.copy_(torch.tensor([0.25, -0.5]))
    h = torch.tensor([[1.0, 2.0]])
    s5 = math.sqrt(5)
    expected = torch.tensor([[1 + 0.5 / s5 + 0.5, 2 + 1 / s5 - 1.0]])
    torch.testing.assert_close(r.scores(h), expected, rtol=0, atol=1e-6)


def test_utility_ema_golden():
    r = Router(4, 2, utility_decay=0.9)
    r.update_utility(torch.tensor([1.0, 2.0]))
    torch.testing.assert_close(r.utility, torch.tensor([0.1, 0.2]))
    r.update_utility(torch.tensor([1.0, 2.0]))
    torch.testing.assert_close(r.utility, torch.tensor([0.19, 0.38]))


def test_utility_changes_counts_changed_topk_sets():
    base = torch.tensor([[1.0, 0.0, -1.0], [0.0, 5.0, 1.0], [2.0, 1.9, 0.0]])
    bias = torch.tensor([0.0, 1.5, 0.0])
    # top-1: row 0 -> expert 1 (1.5 > 1), row 1 unchanged, row 2 -> expert 1 (3.4 > 2)
    assert utility_changes(base, bias, 1).item() == 2
    # top-2 sets: row 0 {0,1} unchanged, row 1 {1,2} unchanged, row 2 {0,1} unchanged
    assert utility_changes(base, bias, 2).item() == 0


def test_head_utility_tracks_expert_gradient_norms_and_reports_changes():
    torch.manual_seed(0)
    head = SparseMoEHead(6, 3, SparseMoEConfig(expert_hidden=5, utility_weight=1e3, utility_decay=0.5))
    h = torch.randn(10, 6)
    head.train()
    head(h).sum().backward()
    norms = torch.stack(
        [
            torch.cat([p.grad[e].flatten() for p in [*head.experts.weights, *head.experts.biases]]).norm()
            for e in range(8)
        ]
    )
    head.after_backward()
    torch.testing.assert_close(head.router.utility, 0.5 * norms)
    head.eval()
    head(h)
    base = head.router(h)
    expected = (base.argmax(-1) != (base + 1e3 * head.router.utility).argmax(-1)).sum()
    assert head.routing_stats()["utility_changed"].item() == expected.item() > 0


def test_utility_changes_nothing_when_off():
    torch.manual_seed(0)
    head = SparseMoEHead(6, 3, SparseMoEConfig(expert_hidden=5))
    head.router.utility.fill_(5.0)
    h = torch.randn(10, 6)
    assert head.routing_stats() == {}
    head.eval()
    out = head(h)
    assert head.routing_stats()["utility_changed"].item() == 0
    head.router.utility.zero_()
    torch.testing.assert_close(head(h), out)
