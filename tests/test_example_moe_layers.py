"""docs/examples/moe_layers.py, the worked example of the MoE layers in a model of one's own, runs as the docs say:
each head trains under the hooks' loop (the MoEConv2d's router learns), and is counted with the three counters in
agreement, the MoEConv2d and the head as the routed modules."""

import importlib.util

import pytest
import torch

from checkout import REPO_ROOT
from repro.models.moe_conv import MoEConv2d


@pytest.fixture(scope="module")
def example():
    spec = importlib.util.spec_from_file_location("moe_layers", REPO_ROOT / "docs" / "examples" / "moe_layers.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("head", ["sparse_moe", "expert_choice", "soft_moe"])
def test_each_head_trains_in_a_model_of_ones_own_and_is_counted(example, head):
    from repro.models.flops import count_flops

    torch.manual_seed(0)
    x, y = torch.randn(8, *example.IMAGE), torch.randint(0, 10, (8,))
    model = example.build(head, num_experts=4, expert_hidden=16)
    moe = next(m for m in model.modules() if isinstance(m, MoEConv2d))
    router = moe.router.weight.detach().clone()
    losses = example.train(model, x, y, epochs=2, steps=2)
    assert len(losses) == 4 and all(torch.isfinite(torch.tensor(losses)))
    assert not torch.equal(router, moe.router.weight)  # k = 2: the task loss reaches the router
    report = count_flops(model, example.IMAGE, batch=8)
    assert report.problems == [] and report.routed_modules == ["backbone.2", "head"]
    assert 0 < report.rho < 1
    assert report.batch == (8 if head != "sparse_moe" else None)  # batch-axis heads: per image in a batch of 8
