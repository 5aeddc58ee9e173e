"""The routing interface and its statistics (repro.models.base), by hand."""

import math

import pytest
import torch
from torch import nn

from repro.models.base import RoutedHead, entropy, summarize


def test_entropy_golden():
    assert entropy(torch.full((4,), 0.25)).item() == pytest.approx(math.log(4))
    assert entropy(torch.tensor([1.0, 0.0, 0.0])).item() == 0.0
    torch.testing.assert_close(
        entropy(torch.tensor([[0.5, 0.5], [0.9, 0.1]])),
        torch.tensor([math.log(2), -(0.9 * math.log(0.9) + 0.1 * math.log(0.1))]),
    )


def test_summarize_golden():
    probs = torch.tensor([[0.7, 0.2, 0.1], [0.6, 0.3, 0.1], [0.1, 0.1, 0.8], [0.2, 0.5, 0.3]])
    mask = torch.tensor([[1.0, 0, 0], [0, 1, 0], [0, 0, 1], [1, 0, 0]])
    s = summarize(probs, mask, torch.tensor([False, False, False, True]), None, {"capacity": 2})
    assert s["expert_counts"].tolist() == [2, 1, 1]
    assert s["top1_counts"].tolist() == [2, 1, 1]
    assert s["forced"].item() == 1 and s["dropped"].item() == 0
    p_bar = [0.4, 0.275, 0.325]
    assert s["entropy"].item() == pytest.approx(-sum(p * math.log(p) for p in p_bar), abs=1e-6)
    assert s["usage_entropy"].item() == pytest.approx(-(0.5 * math.log(0.5) + 2 * 0.25 * math.log(0.25)), abs=1e-6)
    assert s["sample_entropy"].item() == pytest.approx(entropy(probs).mean().item())
    assert s["capacity"] == 2 and s["probs"] is probs


class Toy(RoutedHead):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 2)

    def forward(self, h):
        p = torch.softmax(self.lin(h), -1)
        self._record_routing(p, (p == p.max(-1, keepdim=True).values).float())
        return p


def test_hooks_record_detached_stats_and_default_to_zero_aux():
    m = Toy()
    assert m.routed is True
    assert m.routing_stats() == {}
    assert m.aux_loss().item() == 0.0 and m.aux_loss().shape == ()
    m(torch.randn(5, 3))
    s = m.routing_stats()
    assert s["expert_counts"].sum().item() == 5
    assert not s["probs"].requires_grad
    m.on_epoch_start(0, 10)
    m.after_backward()
