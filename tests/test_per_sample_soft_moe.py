"""Per-sample Soft MoE (Section 3.5): gates over experts per image, batch independence, FLOPs."""

import torch

from repro.models.flops import count_flops
from repro.models import Component, build_model
from repro.models.per_sample_soft_moe import PerSampleSoftMoEConfig, PerSampleSoftMoEHead

D, O = 6, 3  # noqa: E741 (O: outputs, the legend's letter, repro/models/experts.py)


def head(**kw) -> PerSampleSoftMoEHead:
    torch.manual_seed(0)
    return PerSampleSoftMoEHead(D, O, PerSampleSoftMoEConfig(**{"expert_hidden": 10, "dropout": 0.0, **kw})).eval()


def test_output_is_gate_weighted_sum_of_all_experts():
    m = head()
    h = torch.randn(5, D)
    g = torch.softmax(h @ m.slots.weight.t(), dim=-1)  # softmax_i(s_i . h)
    expected = sum(g[:, i : i + 1] * m.experts(h, i) for i in range(8))
    torch.testing.assert_close(m(h), expected, rtol=0, atol=1e-6)
    s = m.routing_stats()
    torch.testing.assert_close(s["probs"], g)
    torch.testing.assert_close(s["probs"].sum(-1), torch.ones(5))


def test_golden_two_experts():
    m = head(num_experts=2)
    with torch.no_grad():
        m.slots.weight.copy_(torch.tensor([[1.0, 0, 0, 0, 0, 0], [0.0, 0, 0, 0, 0, 0]]))
        for w, b in zip(m.experts.weights, m.experts.biases):
            w.zero_()
            b.zero_()
        m.experts.biases[2].copy_(torch.tensor([[1.0, 0, 0], [0.0, 1, 0]]))  # constant outputs e_1, e_2
    h = torch.zeros(1, D)
    h[0, 0] = torch.log(torch.tensor(3.0))  # gates (3/4, 1/4)
    torch.testing.assert_close(m(h), torch.tensor([[0.75, 0.25, 0.0]]))


def test_batch_independent():
    m = head()
    h = torch.randn(7, D)
    full = m(h)
    for b in range(7):
        torch.testing.assert_close(m(h[b : b + 1]), full[b : b + 1], rtol=0, atol=1e-6)


def test_no_auxiliary_loss():
    m = head().train()
    m(torch.randn(4, D))
    assert m.aux_loss().item() == 0.0


def test_flops_exact():
    model = build_model("cifar10", Component("cifar_standard"), Component("per_sample_soft_moe"))
    report = count_flops(model, (3, 32, 32))
    assert report.problems == []
    d = model.head.experts.in_features
    assert report.head == d * 8 + 8 * (d * 304 + 304 * 304 + 304 * 10)  # gates, then all 8 experts
