"""The stacked expert bank (Section 3.1): one expert, all experts, MAC count, gradient norms."""

import math

import pytest
import torch
from torch import nn

from repro.models.experts import ExpertBank


def bank(seed=0, drop=0.0):
    torch.manual_seed(seed)
    return ExpertBank(num_experts=3, in_features=5, hidden_features=7, out_features=4, drop=drop)


def as_mlp(b: ExpertBank, e: int) -> nn.Sequential:
    """Expert e as an ordinary nn.Linear MLP: d_in -> h -> h -> d_out with ReLU."""
    layers = []
    for i, (w, bias) in enumerate(zip(b.weights, b.biases)):
        lin = nn.Linear(w.shape[2], w.shape[1])
        with torch.no_grad():
            lin.weight.copy_(w[e])
            lin.bias.copy_(bias[e])
        layers += [lin] + ([nn.ReLU()] if i < 2 else [])
    return nn.Sequential(*layers)


def test_single_expert_is_a_two_hidden_layer_mlp():
    b = bank()
    x = torch.randn(6, 5)
    for e in range(3):
        torch.testing.assert_close(b(x, e), as_mlp(b, e)(x))


def test_rows_without_an_expert_index_are_refused():
    with pytest.raises(ValueError, match="needs the index of the expert"):
        bank()(torch.randn(6, 5))


def test_batched_equals_each_expert():
    b = bank()
    x = torch.randn(3, 6, 5)  # (E, C, D)
    y = b(x)
    assert y.shape == (3, 6, 4)
    for e in range(3):
        torch.testing.assert_close(y[e], b(x[e], e), rtol=0, atol=1e-6)


def test_hand_computed_expert():
    b = bank()
    with torch.no_grad():
        for w, bias in zip(b.weights, b.biases):
            w.zero_()
            bias.zero_()
        b.weights[0][1, 0, 0] = 2.0  # hidden unit 0 = 2 x_0
        b.weights[1][1, 0, 0] = 3.0  # second hidden unit 0 = 3 relu(2 x_0)
        b.weights[2][1, 2, 0] = 0.5  # output 2 = 0.5 * that
        b.biases[2][1] = torch.tensor([1.0, 0.0, 0.0, 0.0])
    x = torch.tensor([[1.0, 9, 9, 9, 9], [-1.0, 0, 0, 0, 0]])
    torch.testing.assert_close(b(x, 1), torch.tensor([[1.0, 0, 3.0, 0], [1.0, 0, 0, 0]]))
    assert b(x, 0).abs().sum() == 0


def test_initialisation_matches_nn_linear_bounds():
    b = ExpertBank(8, 100, 50, 10)
    for w, bias in zip(b.weights, b.biases):
        bound = 1 / math.sqrt(w.shape[-1])
        assert w.abs().max() <= bound and bias.abs().max() <= bound
        assert w.abs().max() > 0.9 * bound


def test_own_macs():
    b = bank()
    per_row = 5 * 7 + 7 * 7 + 7 * 4
    assert b.own_macs(([torch.Size([6, 5])], torch.Size([6, 4]))) == 6 * per_row
    assert b.own_macs(([torch.Size([3, 6, 5])], torch.Size([3, 6, 4]))) == 18 * per_row


def test_grad_norms_per_expert():
    b = bank()
    x = torch.randn(4, 5)
    (b(x, 0).sum() + 2 * b(x, 2).sum()).backward()
    norms = b.grad_norms()
    for e in range(3):
        flat = torch.cat([p.grad[e].flatten() for p in [*b.weights, *b.biases]])
        assert norms[e].item() == torch.linalg.vector_norm(flat).item()
    assert norms[1].item() == 0.0 and norms[0] > 0 and norms[2] > 0


def test_dropout_only_in_training():
    b = bank(drop=0.3)
    x = torch.randn(50, 5)
    b.eval()
    torch.testing.assert_close(b(x, 0), b(x, 0))
    b.train()
    torch.manual_seed(1)
    assert not torch.allclose(b(x, 0), b.eval()(x, 0))


def test_a_loop_over_unbound_views_gives_the_gradients_of_indexing_each_expert():
    """bank(x, e, views=bank.views()) is the indexed w[e] computation, forward and backward, to the bit."""
    x = torch.randn(6, 5)
    rows = [torch.tensor([0, 3]), torch.tensor([1, 2, 5]), torch.tensor([4])]
    grads = []
    for use_views in (False, True):
        b = bank()
        views = b.views() if use_views else None
        out = torch.zeros(6, 4)
        for e, r in enumerate(rows):
            if use_views:
                y = b(x[r], e, views=views)
            else:  # the reference: every layer's weights indexed per expert
                y = x[r]
                for i, (w, bias) in enumerate(zip(b.weights, b.biases)):
                    y = nn.functional.linear(y, w[e], bias[e])
                    y = torch.relu(y) if i < 2 else y
            out = out.index_add(0, r, y)
        out.square().sum().backward()
        grads.append([p.grad.clone() for p in b.parameters()])
    assert all(torch.equal(a, c) for a, c in zip(*grads))


def test_dropout_after_each_hidden_layer_or_after_the_last_only():
    """The reading expert-dropout: where the 0.3 dropout sits; in evaluation both are the same expert."""
    seen = {}
    for at in ("each_hidden", "last_hidden"):
        torch.manual_seed(0)
        bank = ExpertBank(2, 5, 4, 3, drop=0.3, drop_at=at)
        calls = []
        bank.dropout.register_forward_hook(lambda mod, inp, out: calls.append(inp[0].shape))
        x = torch.randn(6, 5)
        bank.train()(x, 0)
        seen[at] = (list(calls), bank.eval()(x, 0))
    assert seen["each_hidden"][0] == [torch.Size([6, 4])] * 2 and seen["last_hidden"][0] == [torch.Size([6, 4])]
    torch.testing.assert_close(seen["each_hidden"][1], seen["last_hidden"][1])
