"""Batch-axis Soft MoE (Puigcerver et al.): equations by hand, batch dependence, FLOPs."""

import pytest
import torch

from repro.models.flops import count_flops
from repro.models import Component, build_model
from repro.models.soft_moe import SoftMoEConfig, SoftMoEHead

D, O = 6, 3  # noqa: E741 (O: outputs, the legend's letter, repro/models/experts.py)


def head(**kw) -> SoftMoEHead:
    torch.manual_seed(0)
    return SoftMoEHead(D, O, SoftMoEConfig(**{"expert_hidden": 10, "dropout": 0.0, **kw})).eval()


def reference(m: SoftMoEHead, h: torch.Tensor) -> torch.Tensor:
    """The equations written out slot by slot."""
    e, s = m.cfg.num_experts, m.cfg.slots_per_expert
    logits = h @ m.phi.weight.t()  # (B, E*S)
    out = torch.zeros(h.shape[0], O)
    for j in range(e * s):
        d = torch.exp(logits[:, j]) / torch.exp(logits[:, j]).sum()  # dispatch: over the batch
        slot = (d.unsqueeze(1) * h).sum(0, keepdim=True)  # (1, D)
        y = m.experts(slot, j // s)  # slot j belongs to expert j // S
        c = torch.exp(logits[:, j]) / torch.exp(logits).sum(1)  # combine: over slots
        out += c.unsqueeze(1) * y
    return out


@pytest.mark.parametrize("slots", [1, 2])
def test_matches_slot_by_slot_reference(slots):
    m = head(slots_per_expert=slots)
    h = torch.randn(7, D)
    torch.testing.assert_close(m(h), reference(m, h), rtol=0, atol=1e-5)


def test_golden_two_images_one_expert_slot():
    m = head(num_experts=1)
    with torch.no_grad():
        m.phi.weight.copy_(torch.tensor([[1.0, 0, 0, 0, 0, 0]]))
    h = torch.zeros(2, D)
    h[0, 0], h[1, 0] = 0.0, torch.log(torch.tensor(3.0))  # dispatch weights 1/4, 3/4
    slot = 0.25 * h[0] + 0.75 * h[1]
    # one slot: every image's combine weight is 1, so both outputs equal Expert(slot)
    expected = m.experts(slot.unsqueeze(0), 0).expand(2, O)
    torch.testing.assert_close(m(h), expected)


def test_a_lone_image_is_its_own_slot():
    m = head()
    h = torch.randn(1, D)
    slot_out = m.experts(h.expand(8, D).unsqueeze(1)).squeeze(1)  # (E, O): every slot = the image
    combine = torch.softmax(m.phi(h), -1)  # (1, E)
    torch.testing.assert_close(m(h), combine @ slot_out)


def test_output_depends_on_the_rest_of_the_batch():
    m = head()
    h = torch.randn(6, D)
    full = m(h)
    alone = torch.cat([m(h[b : b + 1]) for b in range(6)])
    assert (full - alone).abs().max() > 1e-3  # batch-axis mixing: the paper's failure mode


def test_stats_and_hooks():
    m = head(slots_per_expert=2)
    m(torch.randn(5, D))
    s = m.routing_stats()
    torch.testing.assert_close(s["probs"].sum(-1), torch.ones(5))
    assert s["expert_counts"].tolist() == [5] * 8
    assert m.aux_loss().item() == 0.0


@pytest.mark.parametrize("slots", [1, 2])
def test_flops_exact(slots):
    model = build_model("cifar10", Component("cifar_standard"), Component("soft_moe", {"slots_per_expert": slots}))
    report = count_flops(model, (3, 32, 32))
    assert report.problems == []
    d, n = model.head.experts.in_features, 8 * slots
    expert = d * 304 + 304 * 304 + 304 * 10
    assert report.head == d * n + n * d + n * expert + n * 10  # Phi, D^T X, experts, C Y~ (B = 1)
    at_batch = count_flops(model, (3, 32, 32), batch=128)  # the recipe's batch: E S slots shared by 128 images
    assert at_batch.problems == [] and at_batch.batch == 128
    assert at_batch.head == d * n + n * d + round(n * expert / 128) + n * 10
