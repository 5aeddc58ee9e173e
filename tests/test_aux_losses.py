"""Load-balance and entropy losses (Section 3.4): golden values and limits."""

import math

import pytest
import torch

from repro.models.aux_losses import entropy_loss, load_balance_loss


@pytest.mark.parametrize("e", [2, 4, 8])
def test_load_balance_is_one_when_uniform(e):
    b = 4 * e
    probs = torch.full((b, e), 1 / e)
    mask = torch.eye(e).repeat(4, 1)  # each expert gets B/E samples
    assert load_balance_loss(probs, mask).item() == pytest.approx(1.0)


@pytest.mark.parametrize("e", [2, 4, 8])
def test_load_balance_is_E_on_total_collapse(e):
    probs = torch.zeros(6, e)
    probs[:, 0] = 1
    mask = probs.clone()
    assert load_balance_loss(probs, mask).item() == pytest.approx(float(e))


def test_load_balance_golden():
    # f = (1, 0), P = (0.7, 0.3): 2 * (1 * 0.7 + 0 * 0.3) = 1.4
    probs = torch.tensor([[0.8, 0.2], [0.6, 0.4]])
    mask = torch.tensor([[1.0, 0.0], [1.0, 0.0]])
    assert load_balance_loss(probs, mask).item() == pytest.approx(1.4)
    # two experts per sample: f over dispatches = (1/2, 1/2), P = (0.7, 0.3): 2 * 0.5 = 1
    assert load_balance_loss(probs, torch.ones(2, 2)).item() == pytest.approx(1.0)


def test_load_balance_fraction_over_samples_is_k_times_the_one_over_dispatches():
    # f over the B = 2 samples at two experts per sample: (2/2, 2/2) = (1, 1): 2 * (0.7 + 0.3) = 2
    probs = torch.tensor([[0.8, 0.2], [0.6, 0.4]])
    both = torch.ones(2, 2)
    assert load_balance_loss(probs, both, "samples").item() == pytest.approx(2.0)
    # one expert per sample: the two readings agree
    one = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    assert load_balance_loss(probs, one, "samples").item() == pytest.approx(load_balance_loss(probs, one).item())
    with pytest.raises(ValueError):
        load_balance_loss(probs, one, "tokens")  # type: ignore[arg-type]


def test_the_head_applies_its_load_balance_fraction_during_the_warm_up():
    from repro.models.sparse_moe import SparseMoEConfig, SparseMoEHead

    losses = {}
    for fraction in ("dispatches", "samples"):
        torch.manual_seed(0)
        cfg = SparseMoEConfig(
            expert_hidden=8,
            k_warmup_epochs=5,
            k_warmup_start=4,
            entropy_weight=0.0,
            load_balance_weight=1.0,
            load_balance_fraction=fraction,
        )
        head = SparseMoEHead(6, 3, cfg).train()
        head.on_epoch_start(0, 10)  # k = 4: four experts per sample
        head(torch.randn(16, 6))
        losses[fraction] = head.aux_loss().item()
    assert losses["samples"] == pytest.approx(4 * losses["dispatches"], rel=1e-5)


def test_load_balance_gradient_flows_through_probs_only():
    probs = torch.tensor([[0.8, 0.2], [0.6, 0.4]], requires_grad=True)
    mask = torch.tensor([[1.0, 0.0], [0.0, 1.0]], requires_grad=True)
    load_balance_loss(probs, mask).backward()
    # d/dp_{b,i} of E sum_i f_i mean_b p_{b,i} = E f_i / B = 2 * 0.5 / 2
    torch.testing.assert_close(probs.grad, torch.full((2, 2), 0.5))
    assert mask.grad is None


def test_entropy_loss_golden():
    # p_bar = (0.75, 0.25): -H = 0.75 ln 0.75 + 0.25 ln 0.25
    probs = torch.tensor([[0.5, 0.5], [1.0, 0.0]])
    expected = 0.75 * math.log(0.75) + 0.25 * math.log(0.25)
    assert entropy_loss(probs).item() == pytest.approx(expected, abs=1e-6)
    assert entropy_loss(torch.full((3, 8), 1 / 8)).item() == pytest.approx(-math.log(8), abs=1e-6)
    assert entropy_loss(torch.tensor([[1.0, 0.0, 0.0]])).item() == 0.0


def test_entropy_loss_gradient_is_finite_at_zero_probability():
    probs = torch.tensor([[1.0, 0.0, 0.0]], requires_grad=True)
    entropy_loss(probs).backward()
    assert torch.isfinite(probs.grad).all()
