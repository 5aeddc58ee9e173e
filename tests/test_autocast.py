"""Every registered head and backbone trains a step under bf16 autocast, on the CPU (issue 11.1).

The ImageNet recipe trains in bf16 on CUDA; CPU autocast runs the same dtype rules,
so a dtype mismatch (such as float32 added into a bf16 buffer) fails here first.
"""

import pytest
import torch
import torch.nn.functional as F

from repro.models import BACKBONES, HEADS, Component, build_model

# Large enough for ResNet-18's layer4 (1 x 1 at 32 px) and for both MoEConv2d paths.
SIZE = {"resnet18": 32, "mobilenet_v2": 32, "resnet18_moeconv": 32}
SMALL_HEAD = {"dense": {"hidden": (16,)}}


@pytest.fixture(params=["cpu", "cuda"])
def policy(request, monkeypatch):
    """CPU autocast keeps softmax in bf16; CUDA's runs it in float32. "cuda" emulates that on the CPU."""
    if request.param == "cuda":
        real = torch.softmax

        def softmax(x, dim, **kw):
            return real(x.float() if torch.is_autocast_enabled("cpu") else x, dim, **kw)

        monkeypatch.setattr(torch, "softmax", softmax)
    return request.param


def _train_step(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    model.train()
    hooks = [m for m in model.modules() if m is not model and hasattr(m, "aux_loss")]
    opt = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.1)
    before = [p.detach().clone() for p in model.parameters()]
    with torch.autocast("cpu", dtype=torch.bfloat16):
        logits = model(x)
        aux = sum((m.aux_loss() for m in hooks), torch.zeros(()))
        loss = F.cross_entropy(logits.float(), y) + aux.float()
    assert logits.dtype in (torch.bfloat16, torch.float32)
    loss.backward()
    for m in hooks:
        m.after_backward()
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    assert grads and all(torch.isfinite(g).all() for g in grads)
    opt.step()
    assert any(not torch.equal(a, p) for a, p in zip(before, model.parameters())), "the step changed no parameter"
    return loss.item()


@pytest.mark.parametrize("head", HEADS.names())
def test_every_head_trains_a_step_under_bf16_autocast(head, policy):
    torch.manual_seed(0)
    params = {"expert_hidden": 16} if "expert_hidden" in HEADS.get(head).config.__dataclass_fields__ else {}
    model = build_model(
        "cifar10", Component("cifar_standard"), Component(head, SMALL_HEAD.get(head, params)), image_size=16
    )
    x, y = torch.randn(16, 3, 16, 16), torch.arange(16) % 10
    assert torch.isfinite(torch.tensor(_train_step(model, x, y)))


@pytest.mark.parametrize("dispatch", ["loop", "batched"])
def test_sparse_head_trains_under_bf16_with_either_dispatch(dispatch, policy):
    torch.manual_seed(0)
    model = build_model(
        "cifar10",
        Component("cifar_standard"),
        Component("sparse_moe", {"expert_hidden": 16, "dispatch": dispatch}),
        image_size=16,
    )
    _train_step(model, torch.randn(16, 3, 16, 16), torch.arange(16) % 10)


@pytest.mark.parametrize(
    "backbone", [pytest.param(b, marks=pytest.mark.slow) if b in SIZE else b for b in BACKBONES.names()]
)
def test_every_backbone_trains_a_step_under_bf16_autocast(backbone, policy):
    torch.manual_seed(0)
    dataset = "imagenet" if backbone in SIZE else ("tiny_imagenet" if backbone.startswith("tiny") else "cifar10")
    size = SIZE.get(backbone, 16)
    model = build_model(dataset, Component(backbone), Component("dense", {"hidden": (16,)}), image_size=size)
    x, y = torch.randn(4, 3, size, size), torch.arange(4)
    assert torch.isfinite(torch.tensor(_train_step(model, x, y)))


def test_expert_choice_under_autocast_matches_float32_to_bf16_rounding():
    torch.manual_seed(0)
    head = HEADS.get("expert_choice").builder(32, 10, expert_hidden=16, dropout=0.0).eval()
    h = torch.randn(12, 32)
    ref = head(h)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = head(h)
    assert out.dtype == torch.float32
    assert torch.allclose(out, ref, atol=0.05, rtol=0.05)
