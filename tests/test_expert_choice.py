"""Expert Choice (Zhou et al.): experts pick their top-C samples; batch dependence; FLOPs."""

import pytest
import torch

from repro.models.flops import count_flops
from repro.models import Component, build_model
from repro.models.expert_choice import ExpertChoiceConfig, ExpertChoiceHead

D, O = 4, 2  # noqa: E741 (O: outputs, the legend's letter, repro/models/experts.py)


def head(**kw) -> ExpertChoiceHead:
    torch.manual_seed(0)
    return ExpertChoiceHead(D, O, ExpertChoiceConfig(**{"expert_hidden": 10, "dropout": 0.0, **kw})).eval()


def constant(m: ExpertChoiceHead) -> None:
    """Expert i outputs (i + 1, 0) whatever its input."""
    with torch.no_grad():
        for w, b in zip(m.experts.weights, m.experts.biases):
            w.zero_()
            b.zero_()
        m.experts.biases[2][:, 0] = torch.arange(1.0, m.cfg.num_experts + 1)


def test_golden_two_experts_pick_their_top_samples():
    m = head(num_experts=2)  # c = 1: C = ceil(4 * 1 / 2) = 2 samples per expert
    constant(m)
    with torch.no_grad():
        m.gate.weight.copy_(torch.tensor([[1.0, 0, 0, 0], [0.0, 0, 0, 0]]))
    x0 = torch.tensor([2.0, 1.0, 0.5, 0.0])  # S[:, 0] = sigmoid(x0): decreasing down the batch
    h = torch.zeros(4, D)
    h[:, 0] = x0
    s0 = torch.sigmoid(x0)
    out = m(h)
    # expert 0 takes samples 0, 1 (gates s0); expert 1 takes samples 3, 2 (gates 1 - s0)
    expected = torch.stack([s0[0] * 1, s0[1] * 1, (1 - s0[2]) * 2, (1 - s0[3]) * 2])
    torch.testing.assert_close(out[:, 0], expected)
    st = m.routing_stats()
    assert st["expert_counts"].tolist() == [2, 2] and st["dropped"].item() == 0 and st["capacity"] == 2


def test_samples_no_expert_chose_are_dropped():
    m = head(num_experts=2, capacity_factor=0.5)  # C = ceil(4 * 0.5 / 2) = 1
    constant(m)
    with torch.no_grad():
        m.gate.weight.copy_(torch.tensor([[1.0, 0, 0, 0], [-1.0, 0, 0, 0]]))  # S = softmax(x, -x)
    x0 = torch.tensor([3.0, 2.0, -2.0, 0.1])
    h = torch.zeros(4, D)
    h[:, 0] = x0
    out = m(h)
    # expert 0 takes the largest x (sample 0), expert 1 the smallest (sample 2); 1 and 3 dropped
    s0 = torch.sigmoid(2 * x0)
    torch.testing.assert_close(out[:, 0], torch.stack([s0[0], torch.tensor(0.0), 2 * (1 - s0[2]), torch.tensor(0.0)]))
    assert m.routing_stats()["dropped"].item() == 2


@pytest.mark.parametrize("c", [0.5, 1.0, 2.0])
def test_each_expert_processes_exactly_capacity_samples(c):
    m = head(capacity_factor=c)
    m(torch.randn(16, D))
    cap = {0.5: 1, 1.0: 2, 2.0: 4}[c]
    assert m.routing_stats()["expert_counts"].tolist() == [cap] * 8


def test_output_depends_on_the_rest_of_the_batch():
    m = head()
    h = torch.randn(16, D)
    full = m(h)
    alone = torch.cat([m(h[b : b + 1]) for b in range(16)])
    assert (full - alone).abs().max() > 1e-3  # selection over the batch: not per-sample


def test_flops_exact():
    model = build_model("cifar10", Component("cifar_standard"), Component("expert_choice"))
    report = count_flops(model, (3, 32, 32))
    assert report.problems == []
    d = model.head.experts.in_features
    # batch 1: C = ceil(1 / 8) = 1, so all 8 experts choose the lone image
    assert report.head == d * 8 + 8 * (d * 304 + 304 * 304 + 304 * 10) and report.batch == 1
    # the recipe's batch 128: C = ceil(128 / 8) = 16, 8 * 16 = 128 expert rows, one per image
    at_batch = count_flops(model, (3, 32, 32), batch=128)
    assert at_batch.problems == [] and at_batch.batch == 128
    assert at_batch.head == d * 8 + (d * 304 + 304 * 304 + 304 * 10)
    # batch 12: C = ceil(12 / 8) = 2, 16 expert rows over 12 images
    assert count_flops(model, (3, 32, 32), batch=12).head == d * 8 + round(16 * (d * 304 + 304 * 304 + 304 * 10) / 12)
