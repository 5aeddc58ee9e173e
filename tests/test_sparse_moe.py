"""The paper's sparse MoE head (Sections 3.1-3.4): routing rules, invariants, dispatch, FLOPs."""

import copy
import dataclasses

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from repro.models.flops import count_flops
from repro.models import Component, build_model
from repro.models.aux_losses import entropy_loss, load_balance_loss
from repro.models.capacity import capacity
from repro.models.sparse_moe import SparseMoEConfig, SparseMoEHead

D, O = 12, 5  # noqa: E741 (O: outputs, the legend's letter, repro/models/experts.py)


def head(**kw) -> SparseMoEHead:
    torch.manual_seed(0)
    kw = {"expert_hidden": 16, "dropout": 0.0, **kw}
    return SparseMoEHead(D, O, SparseMoEConfig(**kw))


def skewed_input(b=24, seed=1):
    torch.manual_seed(seed)
    return torch.randn(b, D) + 2.0  # a shared offset makes the router prefer a few experts


def test_defaults_and_validation():
    cfg = SparseMoEConfig()
    assert (cfg.num_experts, cfg.top_k, cfg.key_dim, cfg.key_similarity_weight) == (8, 1, 64, 0.5)
    assert (cfg.capacity_factor, cfg.load_balance_weight, cfg.entropy_weight, cfg.utility_weight) == (
        1.25,
        0.01,
        0.01,
        0.0,
    )
    assert (cfg.experts_per_sample, cfg.capacity_candidates, cfg.dispatch, cfg.tau_sharpness) == (
        "top_k",
        "all",
        "loop",
        7.0,
    )
    bads = [
        {"top_k": 9},
        {"tau_min": 2.0},
        {"capacity_factor": 0.0},
        {"capacity_candidates": 9},
        {"capacity_candidates": "some"},
    ]
    for bad in bads:
        with pytest.raises(ValueError):
            SparseMoEConfig(**bad)


@pytest.mark.parametrize("mode, k", [("one", 1), ("one", 2), ("top_k", 2), ("top_k", 3)])
@pytest.mark.parametrize("dispatch", ["loop", "batched"])
def test_training_capacity_and_combine_invariants(mode, k, dispatch):
    m = head(top_k=k, experts_per_sample=mode, capacity_factor=0.75, capacity_candidates=0, dispatch=dispatch).train()
    h = skewed_input()
    m(h)
    s = m.routing_stats()
    rec = m._routing
    mask, forced = rec["mask"], rec["forced"]
    cap = capacity(0.75, 24, k, 8)
    assert s["capacity"] == cap
    under_capacity = (mask * (~forced).float().unsqueeze(1)).sum(0)
    assert (under_capacity <= cap).all()
    assert s["forced"].item() > 0  # the skewed router does hit the fallback here
    assert s["expert_counts"].sum().item() == mask.sum().item()
    if mode == "one":
        assert (mask.sum(1) == 1).all()
    mp = mask * s["probs"]
    combine = mp / mp.sum(-1, keepdim=True)
    torch.testing.assert_close(combine.sum(-1), torch.ones(24))


@pytest.mark.parametrize("mode, k", [("one", 1), ("top_k", 3)])
def test_large_capacity_training_equals_plain_top_k(mode, k):
    m = head(top_k=k, experts_per_sample=mode, capacity_factor=8.0)  # cap >= B: nothing fills
    h = skewed_input()
    out_train = m.train()(h)
    mask_train = m._routing["mask"]
    out_eval = m.eval()(h)
    torch.testing.assert_close(mask_train, m._routing["mask"])
    torch.testing.assert_close(out_train, out_eval)  # dropout 0: training differs only by capacity


def test_one_mode_k2_sends_each_sample_to_one_expert_in_training_and_k_at_evaluation():
    m = head(top_k=2, capacity_factor=8.0, experts_per_sample="one")
    h = skewed_input()
    m.train()(h)
    assert (m._routing["mask"].sum(1) == 1).all()
    assert torch.equal(m._routing["mask"].argmax(1), m._routing["probs"].argmax(1))
    m.eval()(h)
    assert (m._routing["mask"].sum(1) == 2).all()


def test_capacity_candidates_widen_the_search():
    # k = 1: the rule's only candidate is the top-1, so a full top-1 always forces;
    # with all E experts as candidates a sample spills to its best expert with room.
    h = skewed_input()
    narrow = head(capacity_factor=1.0, capacity_candidates=0).train()
    narrow(h)
    wide = head(capacity_factor=1.0, capacity_candidates=8).train()
    wide(h)
    assert narrow.routing_stats()["forced"].item() > 0
    assert torch.equal(narrow._routing["mask"].argmax(1), narrow._routing["probs"].argmax(1))  # capacity inert
    assert wide.routing_stats()["forced"].item() == 0
    assert wide.routing_stats()["rerouted"].item() > 0
    assert (wide._routing["mask"].sum(0) <= capacity(1.0, 24, 1, 8)).all()


def test_aux_loss_is_weighted_lb_plus_entropy_of_last_training_forward():
    m = head(load_balance_weight=0.3, entropy_weight=0.2)
    assert m.aux_loss().item() == 0.0
    h = skewed_input()
    m.train()(h)
    p, mask = m._routing["probs"], m._routing["mask"]
    expected = 0.3 * load_balance_loss(p, mask) + 0.2 * entropy_loss(p)
    torch.testing.assert_close(m.aux_loss().detach(), expected)
    assert m.aux_loss().requires_grad
    m.eval()(h + 1)
    torch.testing.assert_close(m.aux_loss().detach(), expected)


def test_one_expert_per_sample_gives_the_router_no_task_gradient():
    # C_{b,i} = p_{b,i} / p_{b,i} = 1: the task loss cannot reach W_r, K or e_i.
    m = head(capacity_factor=0.75, experts_per_sample="one").train()
    m(skewed_input()).square().sum().backward()
    router_grads = [p.grad for p in m.router.parameters()]
    assert all(g is None or g.abs().max() < 1e-6 for g in router_grads)
    m.zero_grad()
    m(skewed_input()).square().sum().backward(retain_graph=True)
    m.aux_loss().backward()
    assert m.router.w_r.weight.grad.abs().max() > 1e-4  # L_lb and L_ent do reach it
    m2 = head(top_k=2, experts_per_sample="top_k").train()
    m2(skewed_input()).square().sum().backward()
    assert m2.router.w_r.weight.grad.abs().max() > 1e-3  # two experts: the combine weights carry gradient


def test_evaluation_is_batch_independent():
    m = head(top_k=2).eval()
    h = skewed_input(b=9)
    full = m(h)
    for b in range(9):
        torch.testing.assert_close(m(h[b : b + 1]), full[b : b + 1], rtol=0, atol=1e-6)


def pair(**kw):
    loop = head(**kw)
    batched = copy.deepcopy(loop)
    batched.cfg = dataclasses.replace(loop.cfg, dispatch="batched")
    return loop, batched


@pytest.mark.parametrize("mode, k", [("one", 1), ("one", 3), ("top_k", 2)])
@pytest.mark.parametrize("training", [True, False])
def test_loop_and_batched_dispatch_agree(mode, k, training):
    loop, batched = pair(top_k=k, experts_per_sample=mode, capacity_factor=0.75)
    h = skewed_input()
    outs, grads = [], []
    for m in (loop, batched):
        m.train(training)
        x = h.clone().requires_grad_(True)
        out = m(x)
        loss = (out * torch.linspace(-1, 1, out.numel()).view_as(out)).sum()
        (loss + m.aux_loss() if training else loss).backward()
        outs.append(out)
        grads.append([x.grad] + [p.grad if p.grad is not None else torch.zeros_like(p) for p in m.parameters()])
    torch.testing.assert_close(outs[1], outs[0], rtol=0, atol=1e-6)
    for g_batched, g_loop in zip(grads[1], grads[0]):
        torch.testing.assert_close(g_batched, g_loop, rtol=0, atol=1e-6)
    assert torch.equal(loop.routing_stats()["expert_counts"], batched.routing_stats()["expert_counts"])
    assert loop.routing_stats()["forced"].item() == batched.routing_stats()["forced"].item()


class OpLog(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.ops = set()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops.add(func.overloadpacket.__name__)
        return func(*args, **(kwargs or {}))


HOST_SYNC_OPS = {"_local_scalar_dense", "nonzero", "item"}


@pytest.mark.parametrize("training", [True, False])
def test_batched_forward_never_reads_device_values_on_the_host(training):
    loop, batched = pair(top_k=2, capacity_factor=0.75, utility_weight=0.1)
    h = skewed_input()
    logs = {}
    for name, m in (("loop", loop), ("batched", batched)):
        m.train(training)
        with OpLog() as log:
            m(h)
        logs[name] = log.ops & HOST_SYNC_OPS
    assert logs["batched"] == set()
    assert logs["loop"]  # the paper's loop does read them: the check can fail


def test_batched_forward_compiles_as_one_graph():
    loop, batched = pair(top_k=2, capacity_factor=0.75)
    h = skewed_input()
    batched.train()
    expected = batched(h)
    torch._dynamo.reset()
    out = torch.compile(batched, fullgraph=True, backend="eager")(h)
    torch.testing.assert_close(out, expected)
    with pytest.raises(Exception):
        torch.compile(loop.train(), fullgraph=True, backend="eager")(h)  # data-dependent Python branching


def test_routing_stats_contents():
    m = head(top_k=1, capacity_factor=0.75).train()
    m.on_epoch_start(10, 20)
    m(skewed_input())
    s = m.routing_stats()
    assert set(s) >= {
        "expert_counts",
        "top1_counts",
        "forced",
        "dropped",
        "entropy",
        "probs",
        "rerouted",
        "tau",
        "k",
        "capacity",
        "utility_changed",
        "usage_entropy",
        "sample_entropy",
    }
    assert s["expert_counts"].shape == (8,) and s["probs"].shape == (24, 8)
    assert s["dropped"].item() == 0  # the paper's rule never drops a sample
    assert s["tau"] == pytest.approx(1.0 - 0.87 * 10 / 19) and s["k"] == 1
    assert not s["probs"].requires_grad


@pytest.mark.parametrize("k", [1, 2])
def test_flops_exact_and_hand_computed(k):
    model = build_model("cifar10", Component("cifar_standard"), Component("sparse_moe", {"top_k": k}))
    report = count_flops(model, (3, 32, 32))
    assert report.problems == []
    d, e, dk, hid, o = model.head.experts.in_features, 8, 64, 304, 10
    router = d * e + d * dk + dk * e  # W_r h, K h, cos(K h, e_i)
    expert = d * hid + hid * hid + hid * o
    assert report.head == router + k * expert


def test_flops_exact_with_batched_dispatch():
    model = build_model("cifar10", Component("cifar_standard"), Component("sparse_moe", {"dispatch": "batched"}))
    report = count_flops(model, (3, 32, 32))
    assert report.problems == []
    d, hid, o = model.head.experts.in_features, 304, 10
    assert report.head == d * 8 + d * 64 + 64 * 8 + 8 * (d * hid + hid * hid + hid * o)  # padded slots run too


def warmup_head(**kw) -> SparseMoEHead:
    """The CIFAR rows' head: k = 8 -> 1 over 5 epochs, of 50."""
    return head(top_k=1, k_warmup_epochs=5, k_warmup_start=8, **kw).train()


def test_default_reading_k_warmup_changes_the_training_dispatch():
    # Under the default reading a warm-up sample is dispatched to its top-k experts; under
    # experts_per_sample = "one" the warm-up leaves the training mask exactly as at k = 1.
    h = skewed_input(b=32)
    for mode, changes in [("top_k", True), ("one", False)]:
        m = warmup_head(experts_per_sample=mode, capacity_candidates=0)
        m.on_epoch_start(0, 50)
        m(h)
        warm = m._routing["mask"].clone()
        m.on_epoch_start(49, 50)
        m(h)
        assert torch.equal(warm, m._routing["mask"]) is not changes, mode
    m = warmup_head()
    m.on_epoch_start(0, 50)
    m(h)
    assert (m._routing["mask"].sum(1) == 8).all()  # cap = ceil(1.25 * 32 * 8 / 8) = 40 >= B: nobody is short


def test_default_reading_router_learns_from_the_task_loss_during_warmup():
    # C = M p / sum M p over several experts is not constant, so cross-entropy reaches W_r and K.
    y = torch.arange(24) % O
    for mode, reaches in [("top_k", True), ("one", False)]:
        m = warmup_head(experts_per_sample=mode)
        m.on_epoch_start(0, 50)
        torch.nn.functional.cross_entropy(m(skewed_input()), y).backward()
        for p in (m.router.w_r.weight, m.router.key_proj.weight):
            assert (p.grad.abs().max().item() > 1e-4) is reaches, mode
    m = warmup_head()
    m.on_epoch_start(49, 50)  # k = 1: C = 1, the router learns from the auxiliary losses only
    torch.nn.functional.cross_entropy(m(skewed_input()), y).backward()
    assert m.router.w_r.weight.grad.abs().max().item() < 1e-6


def test_default_reading_hard_capacity_binds_at_k1():
    # Every sample walks down its ranking to an expert with room: no expert over capacity, none forced.
    # With only the top-1 as candidate (capacity_candidates = 0) the ceiling moves nobody.
    h = skewed_input(b=64)
    cap = capacity(1.25, 64, 1, 8)
    m = warmup_head()
    m.on_epoch_start(49, 50)
    m(h)
    s = m.routing_stats()
    assert s["expert_counts"].max().item() <= cap and s["forced"].item() == 0 and s["rerouted"].item() > 0
    literal = warmup_head(capacity_candidates=0)
    literal.on_epoch_start(49, 50)
    literal(h)
    s = literal.routing_stats()
    assert s["expert_counts"].max().item() > cap and s["rerouted"].item() == 0


def test_combine_weights_stay_finite_when_capacity_moves_a_sample_to_an_expert_with_p_zero():
    # At tau = 0.13 a low-ranked expert's p underflows to 0; M p / sum M p would be 0/0 there.
    m = warmup_head(capacity_factor=1.0)
    m.on_epoch_start(49, 50)
    h = skewed_input(b=64) * 50.0  # large scores: p is one-hot in float32
    out = m(h)
    p, mask = m._routing["probs"], m._routing["mask"]
    assert ((mask * p).sum(1) == 0).any()  # some sample sits only on experts with p = 0
    assert torch.isfinite(out).all()
    out.sum().backward()
    assert all(torch.isfinite(q.grad).all() for q in m.parameters() if q.grad is not None)
