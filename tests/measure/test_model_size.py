"""repro.measure.model_size: a model's parameters and multiply-adds at a run's resolution, cached for the cost model."""

import pytest
import torch

from repro.measure.flop_check import estimate_macs
from repro.measure.model_size import model_size
from repro.models import Component, build_model


@pytest.fixture
def cache(tmp_path):
    return tmp_path / "cache"


def test_counts_are_the_model_a_run_builds_at_its_resolution(cache):
    backbone, head = Component("cifar_standard"), Component("dense")
    size = model_size("cifar100", backbone, head, 8, cache=cache)
    model = build_model("cifar100", backbone, head, image_size=8)
    assert size.backbone_params == sum(p.numel() for p in model.backbone.parameters())
    assert size.head_params == sum(p.numel() for p in model.head.parameters())
    # The flattening head sees a quarter of the 32 px model's inputs: area scaling of the paper's count is
    # right for the convolutions and wrong for the head.
    paper = estimate_macs("cifar100", backbone, head, cache=cache)
    assert size.backbone_macs == pytest.approx(paper["backbone_macs"] / 16)
    assert size.head_macs < paper["head_macs"] / 3
    first_linear = next(m for m in model.head.modules() if isinstance(m, torch.nn.Linear))
    assert first_linear.in_features * first_linear.out_features <= size.head_macs


def test_at_the_dataset_size_the_paper_counts_come_back_and_uncounted_is_none(cache):
    backbone, head = Component("cifar_standard"), Component("sparse_moe", {"expert_hidden": 128})
    assert model_size("cifar10", backbone, head, 32, count=False, cache=cache) is None  # torch-free: not counted yet
    size = model_size("cifar10", backbone, head, 32, cache=cache)
    paper = estimate_macs("cifar10", backbone, head, cache=cache)
    assert (size.backbone_macs, size.head_macs) == (paper["backbone_macs"], paper["head_macs"])
    assert model_size("cifar10", backbone, head, 32, count=False, cache=cache) == size  # cached
