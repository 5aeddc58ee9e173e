"""MoEConv2d beyond ResNet's 3x3 convolutions (grouped, biased, rectangular, dilated) and MoEPointwise."""

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from repro.models.flops import count_flops
from repro.models.classifier import Classifier
from repro.models.moe_conv import MoEConv2d
from repro.models.moe_pointwise import MoEPointwise

CONVS = {
    "depthwise 3x3 with bias": dict(in_channels=6, out_channels=6, kernel_size=3, padding=1, groups=6, bias=True),
    "grouped 3x3 stride 2": dict(in_channels=6, out_channels=4, kernel_size=3, stride=2, padding=1, groups=2),
    "1x7 with bias": dict(in_channels=6, out_channels=5, kernel_size=(1, 7), padding=(0, 3), bias=True),
    "dilated 3x3": dict(in_channels=6, out_channels=5, kernel_size=3, padding=2, dilation=2),
    "2x2 stride 2 with bias": dict(in_channels=6, out_channels=8, kernel_size=2, stride=2, padding=0, bias=True),
}


def bank(conv: nn.Conv2d, k: int) -> MoEConv2d:
    torch.manual_seed(1)
    m = MoEConv2d.from_conv(conv, num_experts=4, top_k=k, noise=0.3)
    with torch.no_grad():
        m.router.weight.mul_(10)  # spread the logits so the top-k is not all ties
        if m.bias is not None:
            m.bias.normal_()  # experts with different biases
    return m


def reference(m: MoEConv2d, x: torch.Tensor) -> torch.Tensor:
    """sum over selected experts of gate x conv(x, W_e, b_e), sample by sample."""
    logits = m.router(x.mean(dim=(2, 3)))
    outs = []
    for b in range(x.shape[0]):
        top, idx = logits[b].topk(m.top_k)
        g = torch.softmax(top, -1)
        outs.append(
            sum(
                g[j]
                * F.conv2d(
                    x[b : b + 1],
                    m.weight[idx[j]],
                    None if m.bias is None else m.bias[idx[j]],
                    m.stride,
                    m.padding,
                    m.dilation,
                    m.groups,
                )
                for j in range(m.top_k)
            )
        )
    return torch.cat(outs)


@pytest.mark.parametrize("k", [1, 2])
@pytest.mark.parametrize("name", CONVS)
def test_both_paths_equal_the_gated_sum_of_expert_convs(name, k):
    conv = nn.Conv2d(**CONVS[name])
    m = bank(conv, k)
    for size in (9, 1 if conv.kernel_size == (1, 1) else 3):  # many output positions (mixing), and few
        x = torch.randn(3, 6, size, size + 2)
        torch.testing.assert_close(m(x), reference(m, x), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", CONVS)
def test_from_conv_without_noise_is_the_conv(name):
    torch.manual_seed(0)
    conv = nn.Conv2d(**CONVS[name])
    m = MoEConv2d.from_conv(conv, num_experts=4, top_k=2, noise=0.0)
    x = torch.randn(2, 6, 10, 10)
    torch.testing.assert_close(m(x), conv(x), rtol=1e-5, atol=1e-5)  # gates sum to 1 over identical banks


def test_a_conv_that_does_not_pad_with_zeros_is_refused():
    with pytest.raises(ValueError, match="pads with zeros"):
        MoEConv2d.from_conv(nn.Conv2d(4, 4, 3, padding=1, padding_mode="reflect"), 4, 2, 0.0)
    with pytest.raises(ValueError, match="pads with zeros"):
        MoEConv2d.from_conv(nn.Conv2d(4, 4, 3, padding="same"), 4, 2, 0.0)


def test_own_macs_golden():
    # Depthwise 3x3 with bias, 6 channels, E = 4, k = 2, on (3, 6, 8, 8) -> (3, 6, 8, 8); mixing runs (2 + 64 < 128).
    m = bank(nn.Conv2d(**CONVS["depthwise 3x3 with bias"]), 2)
    bank_weights = 6 * 1 * 9  # Co x Ci/g x kh x kw
    expected = 3 * 2 * bank_weights + 3 * 2 * 6 + 3 * 6 * 8 * 8 * 1 * 9  # mix kernels, mix biases, one conv
    assert m.own_macs(([torch.Size([3, 6, 8, 8])], torch.Size([3, 6, 8, 8]))) == expected
    assert m.macs(([torch.Size([3, 6, 8, 8])], torch.Size([3, 6, 8, 8]))) == expected + 3 * 6 * 4  # router


class Wrap(Classifier):
    def __init__(self, layer: nn.Module) -> None:
        super().__init__(layer, nn.Identity())


@pytest.mark.parametrize("k", [1, 2])
@pytest.mark.parametrize("name", CONVS)
def test_counted_three_ways_and_macs_is_the_count(name, k):
    m = bank(nn.Conv2d(**CONVS[name]), k)
    report = count_flops(Wrap(m), (6, 12, 10))
    assert report.problems == []
    shapes = ([torch.Size([1, 6, 12, 10])], torch.Size([1, *m(torch.zeros(1, 6, 12, 10)).shape[1:]]))
    assert report.routed == report.total == m.macs(shapes)


class ChannelsLast(nn.Module):
    """A ConvNeXt-like pointwise layer: (B, C, H, W) -> channels last -> linear -> back."""

    def __init__(self, layer: nn.Module) -> None:
        super().__init__()
        self.layer = layer

    def forward(self, x):
        return self.layer(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)


@pytest.mark.parametrize("bias", [True, False])
def test_pointwise_bank_is_the_linear_layer_at_every_position(bias):
    torch.manual_seed(0)
    linear = nn.Linear(6, 10, bias=bias)
    x = torch.randn(3, 5, 4, 6)  # (B, H, W, Ci)
    torch.testing.assert_close(MoEPointwise.from_linear(linear, 4, 2, 0.0)(x), linear(x), rtol=1e-5, atol=1e-5)
    noisy = MoEPointwise.from_linear(linear, 4, 2, 0.3)
    report = count_flops(Wrap(ChannelsLast(noisy)), (6, 5, 4))
    assert report.problems == [] and report.routed_modules == ["backbone.layer.bank"]
    assert report.total == noisy.macs(([torch.Size([1, 5, 4, 6])], torch.Size([1, 5, 4, 10])))
    assert report.total == 1 * 2 * 60 + 1 * 2 * 10 * bias + 20 * 60 + 6 * 4  # mix, biases, 20 positions, router
