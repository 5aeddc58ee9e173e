"""Every exact path of MoEConv2d (repro.models.moe_conv_paths) computes the layer's function and its gradients.

Golden: each path's output and gradients (input, banks, biases, router) against a plain loop over samples
(sum over the selected experts of gate x conv(x_b, W_e, c_e)), through the same routing, on grouped and
depthwise banks, biases, stride 2, dilation, 1x1, 2x2 and 1x7 kernels, top-1 and top-2, both gates, capacity
on and off; in float32, and in bf16 under autocast as bf16 recipes train. Each path's multiply-add count is
the one torch's counter sees when it runs.
"""

import itertools

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from repro.models.moe_conv import MoEConv2d
from repro.models.moe_conv_paths import PATHS

CONVS = {
    "3x3": dict(in_channels=6, out_channels=5, kernel_size=3, padding=1, bias=False),
    "depthwise 3x3 with bias": dict(in_channels=6, out_channels=6, kernel_size=3, padding=1, groups=6, bias=True),
    "grouped 3x3 stride 2": dict(
        in_channels=6, out_channels=4, kernel_size=3, stride=2, padding=1, groups=2, bias=False
    ),
    "1x7 with bias": dict(in_channels=6, out_channels=5, kernel_size=(1, 7), padding=(0, 3), bias=True),
    "dilated 3x3": dict(in_channels=6, out_channels=5, kernel_size=3, padding=2, dilation=2, bias=False),
    "2x2 stride 2 with bias": dict(in_channels=6, out_channels=8, kernel_size=2, stride=2, padding=0, bias=True),
    "1x1 with bias": dict(in_channels=6, out_channels=8, kernel_size=1, padding=0, bias=True),
}
ROUTING = list(itertools.product(["renormalised", "switch"], [0.0, 1.0]))  # gate, capacity factor
TOLERANCE = {torch.float32: 1e-5, torch.bfloat16: 3e-2}  # of the largest value: float32's and bf16's rounding
# The router's gradient is a sum of products of outputs and their gradients that cancel through the softmax:
# its bf16 rounding, relative to its largest value, is a few times the rest's (up to 4% measured).
ROUTER_BF16 = 8e-2


def layer(conv: dict, k: int, gate: str, capacity_factor: float) -> MoEConv2d:
    torch.manual_seed(1)
    m = MoEConv2d(**conv, num_experts=4, top_k=k, gate=gate, capacity_factor=capacity_factor).train()
    with torch.no_grad():
        m.router.weight.mul_(10)  # spread the logits so the top-k is not all ties
        if m.bias is not None:
            m.bias.normal_()  # experts with different biases
    return m


def reference(m: MoEConv2d, x: torch.Tensor) -> torch.Tensor:
    """sum over the selected experts of gate x conv(x_b, W_e, c_e), sample by sample, with the layer's routing."""
    _, g, top_i = m.route(x)
    return torch.cat(
        [
            sum(
                g[b, j]
                * F.conv2d(
                    x[b : b + 1],
                    m.weight[top_i[b, j]],
                    None if m.bias is None else m.bias[top_i[b, j]],
                    m.stride,
                    m.padding,
                    m.dilation,
                    m.groups,
                )
                for j in range(m.top_k)
            )
            for b in range(x.shape[0])
        ]
    )


def run(m: MoEConv2d, x: torch.Tensor, fn, dtype: torch.dtype) -> list[torch.Tensor]:
    """The output and the gradients of input, banks, biases and router, of a fixed random loss."""
    x = x.detach().requires_grad_()
    with torch.autocast("cpu", torch.bfloat16, enabled=dtype == torch.bfloat16):
        y = fn(x)
    grad = torch.randn(y.shape, generator=torch.Generator().manual_seed(2))
    inputs = [x, *(p for p in m.parameters())]
    return [y.float(), *torch.autograd.grad(y.float(), inputs, grad, allow_unused=True)]


def forced(m: MoEConv2d, name: str):
    def fn(x):
        m.path_rule = name
        return m(x)

    return fn


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["float32", "bf16"])
@pytest.mark.parametrize("k", [1, 2])
@pytest.mark.parametrize("conv", CONVS)
def test_every_path_gives_the_layer_output_and_gradients(conv, k, dtype):
    for (gate, capacity_factor), size in itertools.product(ROUTING, [(9, 11), (3, 3)]):
        m = layer(CONVS[conv], k, gate, capacity_factor)
        x = torch.randn(6, 6, *size, generator=torch.Generator().manual_seed(3))
        want = run(m, x, lambda x: reference(m, x), torch.float32)
        for name in PATHS:
            got = run(m, x, forced(m, name), dtype)
            assert m.paths_ran[tuple(x.shape)] == name
            names = (
                ["output", "input", "banks"]
                + (["biases"] if m.bias is not None else [])
                + ["router weight", "router bias"]
            )
            for what, a, b in zip(names, want, got, strict=True):
                scale = a.abs().max().item() or 1.0
                tolerance = ROUTER_BF16 if what.startswith("router") and dtype == torch.bfloat16 else TOLERANCE[dtype]
                assert (a - b).abs().max().item() <= tolerance * scale, (
                    f"{name}: {what} differs ({gate} gate, capacity {capacity_factor}, map {size})"
                )


def test_the_small_map_path_inside_per_expert_agrees_with_the_others():
    m = layer(CONVS["3x3"], 2, "renormalised", 0.0)
    m.small_maps = True  # a 1x1 output: the banks' taps inside the input (repro.models.small_maps)
    x = torch.randn(5, 6, 1, 1)
    outs = {name: run(m, x, forced(m, name), torch.float32) for name in PATHS}
    for name, got in outs.items():
        for a, b in zip(outs["mixed"], got):
            torch.testing.assert_close(b, a, rtol=1e-5, atol=1e-6, msg=name)


@pytest.mark.parametrize("conv", ["3x3", "depthwise 3x3 with bias", "grouped 3x3 stride 2", "2x2 stride 2 with bias"])
@pytest.mark.parametrize("name", PATHS)
def test_each_path_counts_the_multiply_adds_torch_sees(name, conv):
    """own_macs on the path that ran = torch's counter / 2 (matrix products and convolutions)."""
    m = layer(CONVS[conv], 2, "renormalised", 0.0).eval()
    m.path_rule = name
    x = torch.randn(3, 6, 8, 8)
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        y = m(x)
    assert m.macs(([x.shape], y.shape)) * 2 == counter.get_total_flops()


def test_mixing_paths_count_their_mixing_and_loops_their_convolutions():
    m = layer(CONVS["1x1 with bias"], 2, "renormalised", 0.0)
    w, conv = 8 * 6, 3 * 8 * 25 * 6  # weights of a bank; one convolution of the batch on a 5x5 map
    assert PATHS["mixed"].macs(m, 3, 25) == 3 * 2 * w + 3 * 2 * 8 + conv  # K banks and K biases a sample
    assert PATHS["gate-mm"].macs(m, 3, 25) == PATHS["unfolded"].macs(m, 3, 25) == 3 * 4 * w + 3 * 4 * 8 + conv
    assert PATHS["per-expert"].macs(m, 3, 25) == PATHS["sorted"].macs(m, 3, 25) == 2 * conv


def test_static_shape_paths_are_the_mixing_ones():
    assert {n for n, p in PATHS.items() if p.static_shapes} == {"mixed", "gate-mm", "unfolded"}


def test_from_a_conv_every_path_is_that_conv():
    torch.manual_seed(0)
    conv = nn.Conv2d(6, 5, 3, stride=2, padding=1, bias=True)
    m = MoEConv2d.from_conv(conv, num_experts=4, top_k=2, noise=0.0)
    x = torch.randn(4, 6, 9, 9)
    for name in PATHS:
        m.path_rule = name
        torch.testing.assert_close(m(x), conv(x), rtol=1e-5, atol=1e-5, msg=name)  # gates sum to 1
