"""repro.models.small_maps computes F.conv2d's function, and its gradients, on every path it takes."""

import itertools

import pytest
import torch
import torch.nn.functional as F

from repro.models import Component, build_model
from repro.models.moe_conv import MoEConv2d
from repro.models.small_maps import SmallMapConv2d, conv2d, path, use_small_maps

GEOMETRY = list(itertools.product([1, 3, (3, 1)], [1, 2], [0, 1, 2], [1, 2], [False, True]))  # k, s, p, d, bias


@pytest.mark.parametrize("groups", [1, 2, 8])
@pytest.mark.parametrize("size", [(1, 1), (2, 2), (1, 3), (4, 4)])
def test_conv2d_matches_torch_forward_and_backward(size, groups):
    """Every kernel, stride, padding, dilation and bias on this map size and group count (72 convolutions)."""
    gen = torch.Generator().manual_seed(0)
    paths = set()
    for k, s, p, d, b in GEOMETRY:
        case = f"size={size} k={k} stride={s} padding={p} dilation={d} groups={groups} bias={b}"
        kh, kw = (k, k) if isinstance(k, int) else k
        x = torch.randn(3, 8, *size, dtype=torch.float64, generator=gen, requires_grad=True)
        w = torch.randn(8, 8 // groups, kh, kw, dtype=torch.float64, generator=gen, requires_grad=True)
        bias = torch.randn(8, dtype=torch.float64, generator=gen, requires_grad=True) if b else None
        try:
            ref = F.conv2d(x, w, bias, s, p, d, groups)
        except RuntimeError:  # a kernel larger than the padded input: torch refuses it too
            with pytest.raises(RuntimeError):
                conv2d(x, w, bias, s, p, d, groups)
            continue
        paths.add(path(size, k, s, p, d, groups))
        out = conv2d(x, w, bias, s, p, d, groups)
        inputs = [x, w] + ([bias] if b else [])
        assert out.shape == ref.shape, case
        assert torch.allclose(out, ref), case
        for a, c in zip(
            torch.autograd.grad(ref.square().sum(), inputs), torch.autograd.grad(out.square().sum(), inputs)
        ):
            assert torch.allclose(a, c), case
    # the cases reach the rewrites, not only torch's own path (no case here gives a 1x3 map a 1x1 output)
    assert ("matmul" in paths) == (size != (1, 3)) and ("padded" in paths) == (groups > 1), paths


def test_paths_taken():
    assert path((1, 1), 3, 1, 1, 1, 1) == "matmul"  # ResNet-18's layer4 at 16 px
    assert path((2, 2), 3, 2, 1, 1, 1) == "matmul"  # its stride-2 conv from 2x2
    assert path((2, 2), 3, 1, 1, 1, 96) == "padded"  # a depthwise 3x3 on 2x2
    assert path((2, 2), 3, 1, 1, 1, 1) == "conv"  # dense on 2x2: oneDNN's own path is as fast
    assert path((4, 4), 3, 1, 1, 1, 96) == "conv"
    assert path((1, 1), 3, 1, 1, 1, 1) != "conv" and path((8, 8), 3, 1, 1, 1, 1) == "conv"


def test_resnet18_at_16px_and_moeconv_train_the_same_function():
    for backbone in (Component("resnet18"), Component("resnet18_moeconv", {"top_k": 2})):
        torch.manual_seed(0)
        plain = build_model("imagenet", backbone, Component("dense", {"hidden": [32]}), image_size=16).double()
        small = build_model("imagenet", backbone, Component("dense", {"hidden": [32]}), image_size=16).double()
        small.load_state_dict(plain.state_dict())
        assert use_small_maps(small) > 0
        assert list(small.state_dict()) == list(plain.state_dict())  # checkpoints load into either
        assert any(isinstance(m, (SmallMapConv2d, MoEConv2d)) for m in small.modules())
        x = torch.randn(4, 3, 16, 16, dtype=torch.float64)
        plain.eval()  # no dropout: one function to compare
        small.eval()
        ya, yb = plain(x), small(x)
        assert torch.allclose(ya, yb)
        ya.square().sum().backward()
        yb.square().sum().backward()
        for (name, p), q in zip(plain.named_parameters(), small.parameters()):
            assert (p.grad is None) == (q.grad is None), name
            if p.grad is not None:
                assert torch.allclose(p.grad, q.grad), name
