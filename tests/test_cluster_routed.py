"""Cluster-label routing (repro.models.cluster_routed): warm-up, k-means labels, the router's CE, shared basis."""

import pytest
import torch
import torch.nn.functional as F

from repro.models.flops import count_flops
from repro.models import Component, build_model
from repro.models.cluster_routed import ClusterRoutedHead, SharedBasisExpertBank
from repro.models.configs import ClusterRoutedConfig

D, O = 2, 3  # noqa: E741 (O: outputs, the legend's letter, repro/models/experts.py)


def head(**kw) -> ClusterRoutedHead:
    torch.manual_seed(0)
    kw = {"num_experts": 2, "expert_hidden": 4, "dropout": 0.0, "warmup_epochs": 5, **kw}
    return ClusterRoutedHead(D, O, ClusterRoutedConfig(**kw))


POINTS = torch.tensor([[0.0, 0.0], [0.0, 1.0], [10.0, 10.0], [10.0, 11.0]])


def test_warmup_collects_then_fits_and_trains_the_router_on_labels():
    m = head(label_weight=0.5).train()
    m.on_epoch_start(0, 50)
    m(POINTS)
    assert not m.fitted and m.aux_loss().item() == 0.0  # warm-up: features kept, no label loss
    m.on_epoch_start(5, 50)
    h = torch.tensor([[1.0, 0.0], [9.0, 12.0]])
    out = m(h)
    assert m.fitted
    assert sorted(m.centres.tolist()) == [[0.0, 0.5], [10.0, 10.5]]  # k-means of the warm-up rows
    z = m.labels(h)
    assert z.tolist() == [m.labels(POINTS[:1]).item(), m.labels(POINTS[2:3]).item()] and z[0] != z[1]
    torch.testing.assert_close(m.aux_loss(), 0.5 * F.cross_entropy(m.router(h), z))
    want = torch.stack([m.experts(h[i : i + 1], int(z[i]))[0] for i in range(2)])  # trained on expert z_b
    torch.testing.assert_close(out, want)
    m.aux_loss().backward()
    assert m.router.weight.grad.abs().sum() > 0


def test_evaluation_routes_by_the_router():
    m = head().eval()
    h = torch.tensor([[1.0, -2.0], [3.0, 0.5]])
    out = m(h)
    choice = m.router(h).argmax(-1)
    want = torch.stack([m.experts(h[i : i + 1], int(choice[i]))[0] for i in range(2)])
    torch.testing.assert_close(out, want)
    assert m.routing_stats()["expert_counts"].sum().item() == 2


def test_shared_basis_layer_equals_residual_plus_low_rank_product():
    torch.manual_seed(1)
    bank = SharedBasisExpertBank(3, D, 4, O, drop=0.0, rank=2)
    x = torch.randn(5, D)
    for e in range(3):
        y = x
        for i, (w, b, v, u) in enumerate(zip(bank.weights, bank.biases, bank.basis_in, bank.basis_out)):
            y = y @ (w[e] + u @ v).t() + b[e]  # one dense matrix R_e + U V
            if i < 2:
                y = y.relu()
        torch.testing.assert_close(bank(x, e), y)
    assert bank.macs_per_row() == (D * 4 + 4 * 4 + 4 * O) + 2 * ((D + 4) + (4 + 4) + (4 + O))


@pytest.mark.parametrize("rank", [0, 8])
def test_trains_a_step_and_flops_agree_by_hand(rank):
    model = build_model(
        "cifar10", Component("cifar_standard"), Component("cluster_routed", {"expert_hidden": 32, "shared_rank": rank})
    )
    model.train()
    for epoch in (0, 5):  # a warm-up step, then a labelled step
        model.head.on_epoch_start(epoch, 50)
        x, y = torch.randn(16, 3, 32, 32), torch.randint(0, 10, (16,))
        loss = F.cross_entropy(model(x), y) + model.head.aux_loss()
        loss.backward()
        assert torch.isfinite(loss)
    assert model.head.fitted and model.head.aux_loss().item() > 0
    report = count_flops(model, (3, 32, 32))
    assert report.problems == []
    d, e, hid, o = model.head.router.in_features, 8, 32, 10
    basis = rank * ((d + hid) + (hid + hid) + (hid + o))
    assert report.head == d * e + (d * hid + hid * hid + hid * o) + basis  # router + one expert
