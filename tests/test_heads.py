"""Dense heads carry the engine hooks as no-ops; every head refuses sizes and settings it cannot be built with."""

import dataclasses
import re

import numpy as np
import pytest
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


@pytest.mark.parametrize("name", HEADS.names())
@pytest.mark.parametrize(
    "sizes, expected",
    [((0, 5), "in_features must be a positive int, got 0"), ((12, 0), "num_classes must be a positive int, got 0")],
)
def test_a_head_of_no_features_or_no_classes_is_refused_naming_the_head(name, sizes, expected):
    # 0 features failed in a division (the sparse head's router) or built empty weights; 0 classes built a head
    # with no output
    head_class = type(HEADS.get(name).builder(12, 5))
    with pytest.raises(ValueError, match=re.escape(f"{head_class.__name__}: {expected}")):
        HEADS.get(name).builder(*sizes)


@pytest.mark.parametrize("name", HEADS.names())
def test_a_head_given_its_settings_as_a_dict_says_what_it_takes(name):
    entry = HEADS.get(name)
    head_class = type(entry.builder(12, 5))
    with pytest.raises(TypeError) as caught:
        head_class(12, 5, {"num_experts": 4})
    assert f"{head_class.__name__} takes its settings as a {entry.config.__name__}" in str(caught.value)
    assert f"HEADS.get('{name}').builder(in_features, num_classes, **fields)" in str(caught.value)


def test_a_head_takes_a_numpy_integer_as_a_size():
    head = HEADS.get("sparse_moe").builder(np.int64(12), np.int64(5), num_experts=4, expert_hidden=8)
    assert head(torch.randn(3, 12)).shape == (3, 5)


@pytest.mark.parametrize("name", HEADS.names())
def test_every_head_class_says_what_it_is_in_a_docstring_of_its_own(name):
    # help(ExpertChoiceHead) showed only RoutedHead's line: five heads had no docstring of their own
    head_class = type(HEADS.get(name).builder(12, 5))
    assert (vars(head_class).get("__doc__") or "").strip(), f"{head_class.__name__} has no docstring"


@pytest.mark.parametrize("name", HEADS.names())
@pytest.mark.parametrize("shape", [(2, 12, 3, 3), (12,), (2, 8)])
def test_a_head_given_features_of_another_shape_is_refused_naming_the_shape_it_takes(name, shape):
    # a researcher's backbone that left its (B, C, H, W) map unpooled, or handed one sample, or another width:
    # every head failed inside torch ("mat1 and mat2 shapes cannot be multiplied", "'int' object is not
    # iterable", an IndexError), and the dense, per-sample Soft MoE and teacher-guided heads returned logits for
    # a (12,) input as though it were a batch
    head = HEADS.get(name).builder(12, 5)
    expected = re.escape(f"{type(head).__name__} expects features (B, 12)") + ".*" + re.escape(str(shape))
    with pytest.raises(ValueError, match=expected):
        head(torch.randn(*shape))


@pytest.mark.parametrize(
    "name, kw, expected",
    [
        # "ClusterRoutedConfig.__init__() got an unexpected keyword argument 'top_k'": the key, not what it takes
        ("cluster_routed", {"top_k": 2}, "head 'cluster_routed' takes no keyword 'top_k'"),
        ("sparse_moe", {"num_expert": 4}, "'sparse_moe' takes no keyword 'num_expert' (did you mean 'num_experts'?)"),
        ("dense", {"num_experts": 4}, "head 'dense' takes no keyword 'num_experts'"),
    ],
)
def test_a_head_given_a_keyword_it_has_no_field_for_names_the_fields_it_takes(name, kw, expected):
    entry = HEADS.get(name)
    with pytest.raises(TypeError) as caught:
        entry.builder(12, 5, **kw)
    message = str(caught.value)
    assert expected in message
    assert f"{entry.config.__name__}'s fields" in message
    assert all(f.name in message for f in dataclasses.fields(entry.config))


@pytest.mark.parametrize("name", HEADS.names())
def test_every_head_builder_says_what_it_takes_and_returns(name):
    # help(HEADS.get("expert_choice").builder), the way docs/architecture.md builds a head, showed no docstring for
    # six of the eight heads
    entry = HEADS.get(name)
    doc = " ".join((entry.builder.__doc__ or "").split())
    assert "(B, in_features)" in doc and "(B, num_classes)" in doc, doc
    assert f"{entry.config.__name__}'s fields" in doc, doc
