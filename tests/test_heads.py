"""Dense heads carry the engine hooks as no-ops."""

import torch

from repro.models import HEADS
from repro.models.heads import DenseHead, DenseHeadConfig


def test_dense_head_hooks_are_noops():
    torch.manual_seed(0)
    head = DenseHead(12, 5, DenseHeadConfig(hidden=(16, 8))).eval()
    h = torch.randn(4, 12)
    before = head(h)
    head.on_epoch_start(3, 10)
    head.after_backward()
    torch.testing.assert_close(head(h), before)
    assert head.routing_stats() == {}
    aux = head.aux_loss()
    assert aux.shape == () and aux.item() == 0.0 and not aux.requires_grad
    assert head.routed is False


def test_fc_head_is_dense_with_no_hidden_layer():
    head = HEADS.get("dense").builder(12, 5, hidden=())
    assert [type(m).__name__ for m in head.mlp] == ["Linear"]
    assert head(torch.randn(3, 12)).shape == (3, 5)


def test_every_head_is_registered():
    assert {"dense", "sparse_moe", "soft_moe", "per_sample_soft_moe", "expert_choice"} <= set(HEADS.names())
