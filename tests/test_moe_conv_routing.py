"""MoEConv2d's gate and routing regularisers as readings (repro/spec/readings.toml "moe-conv-gate" and
"moe-conv-regularisers"): golden gates, the router's gradient at k = 1 under each gate, capacity, the
auxiliary losses and the temperature schedule."""

import math

import pytest
import torch

from repro.models import Component, build_model
from repro.models.aux_losses import entropy_loss, load_balance_loss
from repro.models.capacity import assign_reference, capacity
from repro.models.moe_conv import MoEConv2d
from repro.models.moe_conv_paths import PATHS


def layer(k=1, seed=0, **routing) -> MoEConv2d:
    torch.manual_seed(seed)
    m = MoEConv2d(6, 5, 3, num_experts=4, top_k=k, padding=1, bias=False, **routing)
    with torch.no_grad():
        m.router.weight.mul_(10)  # spread the logits so the top-k is not all ties
    return m


@pytest.mark.parametrize("k", [1, 2])
def test_gates_golden_from_one_set_of_logits(k):
    """Logits (2, 1, 0, -1): renormalised = softmax of the top-k logits, switch = their p under all four."""
    logits = torch.tensor([[2.0, 1.0, 0.0, -1.0]])
    e = [math.exp(v) for v in (2.0, 1.0, 0.0, -1.0)]
    p = [v / sum(e) for v in e]  # 0.6439, 0.2369, 0.0871, 0.0321
    want = {
        "renormalised": [1.0] if k == 1 else [e[0] / (e[0] + e[1]), e[1] / (e[0] + e[1])],  # 0.7311, 0.2689
        "switch": p[:k],
    }
    for gate, gates in want.items():
        m = layer(k, gate=gate)
        with torch.no_grad():
            m.router.weight.zero_()
            m.router.bias.copy_(logits[0])
        _, g, top_i = m.eval().route(torch.randn(1, 6, 4, 4))
        assert top_i.tolist() == [list(range(k))]
        torch.testing.assert_close(g, torch.tensor([gates]), rtol=0, atol=1e-6)


@pytest.mark.parametrize("gate, moves", [("renormalised", False), ("switch", True)])
def test_router_gradient_at_k1_is_zero_under_the_renormalised_gate_only(gate, moves):
    m = layer(k=1, gate=gate)
    m(torch.randn(3, 6, 5, 5)).square().sum().backward()
    largest = max(p.grad.abs().max().item() for p in m.router_parameters())
    assert (largest > 1e-6) if moves else largest == 0.0


def test_regularisers_give_the_k1_router_a_gradient_even_under_the_renormalised_gate():
    m = layer(k=1, load_balance_weight=0.01, entropy_weight=0.01)
    y = m(torch.randn(8, 6, 5, 5))
    (task,) = torch.autograd.grad(y.square().sum(), m.router.weight, retain_graph=True)
    (aux,) = torch.autograd.grad(m.aux_loss(), m.router.weight)
    assert task.abs().max().item() == 0.0 and aux.abs().max().item() > 0


def test_switch_forward_is_the_sum_of_probability_weighted_expert_convs():
    m = layer(k=2, gate="switch")
    x = torch.randn(5, 6, 8, 8)
    p = torch.softmax(m.router(x.mean(dim=(2, 3))), -1)
    want = torch.cat(
        [
            sum(
                p[b, e] * torch.nn.functional.conv2d(x[b : b + 1], m.weight[e], padding=1)
                for e in p[b].topk(2).indices.tolist()
            )
            for b in range(5)
        ]
    )
    torch.testing.assert_close(m(x), want, rtol=0, atol=1e-5)
    tiny = torch.randn(5, 6, 1, 1)  # the per-expert path takes the same gates
    assert not m.mixes_kernels(1)
    torch.testing.assert_close(
        PATHS["per-expert"].run(m, tiny, *m.route(tiny)[1:]),
        PATHS["mixed"].run(m, tiny, *m.route(tiny)[1:]),
        rtol=0,
        atol=1e-5,
    )


@pytest.mark.parametrize("gate", ["renormalised", "switch"])
def test_capacity_in_training_never_overfills_an_expert_and_matches_the_head_rule(gate):
    m = layer(k=1, gate=gate, capacity_factor=1.0)
    with torch.no_grad():
        m.router.bias.copy_(torch.tensor([50.0, 0.0, 0.0, 0.0]))  # every sample prefers expert 0
    x = torch.randn(12, 6, 4, 4)
    logits, g, chosen = m.train().route(x)
    cand = logits.topk(4, dim=-1).indices
    want = assign_reference(cand, capacity(1.0, 12, 1, 4), 1, 4)  # the head's rule, sample by sample
    assert chosen.tolist() == want.experts.tolist()
    assert torch.bincount(chosen.flatten(), minlength=4).max().item() <= capacity(1.0, 12, 1, 4) == 3
    if gate == "renormalised":
        torch.testing.assert_close(g, torch.ones(12, 1))
    else:
        torch.testing.assert_close(g, torch.softmax(logits, -1).gather(-1, chosen))
    assert m.eval().route(x)[2].flatten().tolist() == [0] * 12  # evaluation: plain top-k, no capacity


def test_a_slot_capacity_leaves_empty_repeats_a_taken_expert_with_gate_zero():
    m = layer(k=2, gate="switch", capacity_factor=0.5)
    with torch.no_grad():
        m.router.bias.copy_(torch.tensor([50.0, 40.0, 0.0, 0.0]))
    x = torch.randn(8, 6, 4, 4)
    logits, g, chosen = m.train().route(x)  # capacity 2 per expert: 8 places for 16 dispatches
    assert chosen.tolist() == [[0, 1], [0, 1], [2, 3], [2, 3]] + [[0, 0]] * 4  # the last four forced onto expert 0
    p = torch.softmax(logits, -1)
    torch.testing.assert_close(g[4:], torch.stack([p[4:, 0], torch.zeros(4)], -1))
    want = torch.cat(
        [
            sum(g[b, j] * torch.nn.functional.conv2d(x[b : b + 1], m.weight[chosen[b, j]], padding=1) for j in range(2))
            for b in range(8)
        ]
    )
    torch.testing.assert_close(m(x), want, rtol=0, atol=1e-5)
    assert m.routing_stats()["expert_counts"].tolist() == [6, 2, 2, 2]  # a forced sample counts once


def test_aux_loss_is_the_heads_losses_on_p_and_absent_by_default():
    m = layer(k=2, load_balance_weight=0.3, entropy_weight=0.2)
    x = torch.randn(6, 6, 5, 5)
    m.train()(x)
    logits = m.router(x.mean(dim=(2, 3)))
    p = torch.softmax(logits, -1)
    mask = torch.zeros_like(p).scatter(-1, logits.topk(2, -1).indices, 1.0)
    torch.testing.assert_close(m.aux_loss(), 0.3 * load_balance_loss(p, mask) + 0.2 * entropy_loss(p))
    plain = layer(k=2)
    plain.train()(x)
    assert plain.aux_loss().item() == 0.0 and getattr(plain, "_aux", None) is None


def test_temperature_anneals_linearly_from_one_to_tau_min_and_is_one_by_default():
    m = layer(k=1, tau_min=0.3)
    taus = []
    for epoch in range(5):
        m.on_epoch_start(epoch, 5)
        taus.append(m.schedule_state()["tau"])
    assert taus == pytest.approx([1.0, 0.825, 0.65, 0.475, 0.3])
    x = torch.randn(2, 6, 4, 4)
    logits, _, _ = m.eval().route(x)
    torch.testing.assert_close(logits, m.router(x.mean(dim=(2, 3))) / 0.3)
    plain = layer(k=1)
    plain.on_epoch_start(4, 5)
    assert plain.tau == 1.0 and plain.schedule_state() == {}


def test_the_backbone_builds_every_layer_with_its_gate_and_regularisers():
    params = {
        "top_k": 1,
        "gate": "switch",
        "capacity_factor": 1.25,
        "load_balance_weight": 0.01,
        "entropy_weight": 0.01,
        "tau_min": 0.3,
    }
    with torch.device("meta"):
        model = build_model("imagenet", Component("resnet18_moeconv", params), Component("dense", {"hidden": []}))
    layers = model.backbone.moe_layers().values()
    assert len(layers) == 8
    assert {(m.gate, m.capacity_factor, m.load_balance_weight, m.entropy_weight, m.tau_min) for m in layers} == {
        ("switch", 1.25, 0.01, 0.01, 0.3)
    }
