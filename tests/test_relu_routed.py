"""ReLU routing (repro.models.relu_routed): gates, scales, the sparsity controller, NormSiLU, FLOPs at the mean."""

import math

import pytest
import torch

from repro.models.flops import count_flops
from repro.models import Component, build_model
from repro.models.configs import ReluRoutedConfig
from repro.models.relu_routed import NormSiLU, ReluRoutedHead

D, E, O = 2, 3, 4  # noqa: E741 (O: outputs, the legend's letter, repro/models/experts.py)


def head(**kw) -> ReluRoutedHead:
    torch.manual_seed(0)
    kw = {"num_experts": E, "expert_hidden": 5, "dropout": 0.0, **kw}
    m = ReluRoutedHead(D, O, ReluRoutedConfig(**kw))
    with torch.no_grad():
        m.router.weight.copy_(torch.tensor([[1.0, 0.0], [0.0, 1.0], [-1.0, -1.0]]))  # W_r
        m.scale.copy_(torch.tensor([0.5, 1.0, 2.0]))  # s_i
    return m


def test_gates_active_sets_and_output_golden():
    m = head().eval()
    h = torch.tensor([[2.0, -1.0], [1.0, 1.0], [-1.0, -1.0], [0.0, 0.0]])
    out = m(h)
    # l = [2,-1,-1], [1,1,-2], [-1,-1,2], [0,0,0]  ->  g = [2,0,0], [1,1,0], [0,0,2], [0,0,0]
    torch.testing.assert_close(m.gates(h), torch.tensor([[2.0, 0, 0], [1, 1, 0], [0, 0, 2], [0, 0, 0]]))
    ex = [m.experts(h, e) for e in range(E)]  # every expert on every row
    expected = torch.stack(
        [
            0.5 * 2 * ex[0][0],
            0.5 * 1 * ex[0][1] + 1.0 * 1 * ex[1][1],
            2.0 * 2 * ex[2][2],
            torch.zeros(O),
        ]
    )
    torch.testing.assert_close(out, expected)
    s = m.routing_stats()
    assert s["active_experts"].tolist() == [1, 2, 1, 0]
    assert s["mean_active"].item() == 1.0
    assert s["dropped"].item() == 1  # no gate open: output zero
    assert s["expert_counts"].tolist() == [2, 1, 1]
    torch.testing.assert_close(s["probs"][3], torch.full((E,), 1 / 3))


def test_l1_and_controller_golden():
    m = head(sparsity_weight_init=1e-3, sparsity_growth=2.0, target_active_fraction=0.2, active_mean_decay=0.5)
    assert m.active_mean.item() == pytest.approx(0.6)  # a* E
    m.train()
    h = torch.tensor([[2.0, -1.0], [1.0, 1.0]])  # g sums 2 and 2; active 1 and 2 of 3
    m(h)
    assert m.aux_loss().item() == pytest.approx(1e-3 * 2.0)
    m.after_backward()
    assert m.sparsity_weight.item() == pytest.approx(2e-3)  # 0.5 active > 0.2 target: stronger L1
    assert m.active_mean.item() == pytest.approx(0.5 * 0.6 + 0.5 * 1.5)
    m(torch.zeros(2, D))  # nothing active: 0 < 0.2
    m.after_backward()
    assert m.sparsity_weight.item() == pytest.approx(1e-3)
    m.after_backward()  # no training forward since: no update
    assert m.sparsity_weight.item() == pytest.approx(1e-3)


def test_norm_silu_golden():
    x = torch.tensor([[1.0, 2.0, 3.0]])
    std = math.sqrt(2 / 3 + 1e-5)  # biased variance, layer_norm's eps
    z = [(v - 2.0) / std for v in (1.0, 2.0, 3.0)]
    want = [v / (1 + math.exp(-v)) for v in z]
    torch.testing.assert_close(NormSiLU()(x), torch.tensor([want]))
    m = head(expert_activation="norm_silu")
    assert isinstance(m.experts.act, NormSiLU)


@pytest.mark.parametrize("activation", ["relu", "norm_silu"])
def test_trains_a_step(activation):
    model = build_model(
        "cifar10",
        Component("cifar_standard"),
        Component("relu_routed", {"expert_hidden": 32, "expert_activation": activation}),
    )
    model.train()
    x, y = torch.randn(8, 3, 32, 32), torch.randint(0, 10, (8,))
    logits = model(x)
    loss = torch.nn.functional.cross_entropy(logits, y) + model.head.aux_loss()
    assert torch.isfinite(model.head.aux_loss()) and model.head.aux_loss().item() > 0
    loss.backward()
    model.head.after_backward()
    assert model.head.router.weight.grad.abs().sum() > 0 and model.head.scale.grad is not None


def test_flops_agree_three_ways_and_report_the_mean():
    torch.manual_seed(0)
    model = build_model("cifar10", Component("cifar_standard"), Component("relu_routed", {"expert_hidden": 64}))
    report = count_flops(model, (3, 32, 32))
    assert report.problems == []  # the executed dispatch, counted three ways
    d, per_row = model.head.router.in_features, model.head.experts.macs_per_row()
    assert per_row == d * 64 + 64 * 64 + 64 * 10
    executed = report.head - report.mean_shift
    assert (executed - d * 8) % per_row == 0 and 0 <= (executed - d * 8) // per_row <= 8
    assert report.head == d * 8 + round(0.2 * 8 * per_row)  # a* E = 1.6 experts per sample
    model.head.active_mean.fill_(3.0)
    assert count_flops(model, (3, 32, 32)).head == d * 8 + 3 * per_row
