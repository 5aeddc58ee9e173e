"""MoEConv2d and the ResNet-18 backbone MoE (Section 4.6)."""

import re

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from repro.models.classifier import Classifier
from repro.models.flops import count_flops
from repro.models import Component, build_model
from repro.models.moe_conv import FROZEN_PREFIXES, MoEConv2d
from repro.models.moe_conv_paths import PATHS


def layer(k=2, stride=1, seed=0) -> MoEConv2d:
    torch.manual_seed(seed)
    m = MoEConv2d(6, 5, 3, num_experts=4, top_k=k, stride=stride, padding=1, bias=False)
    with torch.no_grad():
        m.router.weight.mul_(10)  # spread the logits so the top-k is not all ties
    return m


def reference(m: MoEConv2d, x: torch.Tensor) -> torch.Tensor:
    """sum over selected experts of gate x conv(x, W_e), sample by sample."""
    logits = m.router(x.mean(dim=(2, 3)))
    outs = []
    for b in range(x.shape[0]):
        top, idx = logits[b].topk(m.top_k)
        g = torch.softmax(top, -1)
        outs.append(
            sum(
                g[j] * F.conv2d(x[b : b + 1], m.weight[idx[j]], stride=m.stride, padding=m.padding)
                for j in range(m.top_k)
            )
        )
    return torch.cat(outs)


@pytest.mark.parametrize("k, stride", [(1, 1), (2, 1), (2, 2), (4, 1)])
def test_grouped_path_equals_sum_of_gated_expert_convs(k, stride):
    m = layer(k, stride)
    x = torch.randn(5, 6, 8, 8)
    torch.testing.assert_close(m(x), reference(m, x), rtol=0, atol=1e-5)


def test_gradients_match_the_reference():
    m = layer()
    x = torch.randn(3, 6, 7, 7)
    grads = []
    for fn in (m, lambda x: reference(m, x)):
        m.zero_grad()
        fn(x).square().sum().backward()
        grads.append([m.weight.grad.clone(), m.router.weight.grad.clone()])
    for a, b in zip(*grads):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)


def test_batch_independent():
    m = layer()
    x = torch.randn(6, 6, 8, 8)
    full = m(x)
    for b in range(6):
        torch.testing.assert_close(m(x[b : b + 1]), full[b : b + 1], rtol=0, atol=1e-5)


def test_dense_gate_matrix_golden():
    m = layer(k=2)
    x = torch.randn(3, 6, 4, 4)
    logits = m.router(x.mean(dim=(2, 3)))
    g = m.gates(x)
    for b in range(3):
        top, idx = logits[b].topk(2)
        e = torch.exp(top - top.max())
        assert set(g[b].nonzero().flatten().tolist()) == set(idx.tolist())
        torch.testing.assert_close(g[b, idx], e / e.sum())


def test_from_conv_without_noise_is_the_pretrained_conv():
    torch.manual_seed(0)
    conv = nn.Conv2d(6, 5, 3, stride=2, padding=1, bias=False)
    m = MoEConv2d.from_conv(conv, num_experts=8, top_k=2, noise=0.0)
    x = torch.randn(4, 6, 9, 9)
    torch.testing.assert_close(m(x), conv(x), rtol=0, atol=1e-5)  # gates sum to 1 over identical banks
    noisy = MoEConv2d.from_conv(conv, num_experts=8, top_k=2, noise=0.1)
    rel = (noisy.weight - conv.weight).std() / conv.weight.std()
    assert 0.09 < rel.item() < 0.11  # "10% noise perturbation"


def test_k1_gate_is_one_so_the_router_gets_no_gradient():
    m = layer(k=1)
    m(torch.randn(3, 6, 5, 5)).square().sum().backward()
    assert m.router.weight.grad.abs().max().item() == 0.0
    m2 = layer(k=2)
    m2(torch.randn(3, 6, 5, 5)).square().sum().backward()
    assert m2.router.weight.grad.abs().max().item() > 0


def test_routing_stats():
    m = layer(k=2)
    m(torch.randn(7, 6, 5, 5))
    s = m.routing_stats()
    assert s["expert_counts"].sum().item() == 14 and s["probs"].shape == (7, 4)
    torch.testing.assert_close(s["probs"].sum(-1), torch.ones(7))


def test_own_macs():
    m = layer(k=2)
    shapes = ([torch.Size([3, 6, 8, 8])], torch.Size([3, 5, 8, 8]))
    assert m.own_macs(shapes) == 3 * 2 * (5 * 6 * 9) + 3 * 5 * 8 * 8 * 6 * 9


@pytest.fixture(scope="module")
def backbone_model():
    return build_model("imagenet", Component("resnet18_moeconv"), Component("dense"))


@pytest.mark.slow
def test_backbone_structure_frozen_prefixes_and_stats(backbone_model):
    body = backbone_model.backbone
    layers = body.moe_layers()
    assert len(layers) == 8 and all(n.startswith(("net.layer3.", "net.layer4.")) for n in layers)
    assert body.frozen_prefixes == FROZEN_PREFIXES == ("net.conv1.", "net.bn1.", "net.layer1.", "net.layer2.")
    assert {n.split(".")[1] for n, _ in body.named_parameters() if n.startswith(FROZEN_PREFIXES)} == {
        "conv1",
        "bn1",
        "layer1",
        "layer2",
    }
    body.eval()
    body(torch.randn(2, 3, 64, 64))
    stats = body.routing_stats()
    assert set(stats) == set(layers) and stats["net.layer4.1.conv2"]["expert_counts"].sum().item() == 4


@pytest.mark.slow
def test_backbone_flops_exact(backbone_model):
    report = count_flops(backbone_model, (3, 64, 64))
    assert report.problems == []
    assert len(report.routed_modules) == 8


def test_both_execution_paths_agree_and_are_counted_exactly():
    m = layer(k=2)
    x = torch.randn(4, 6, 8, 8)
    assert m.mixes_kernels(64) and not m.mixes_kernels(1) and not layer(k=1).mixes_kernels(64)
    torch.testing.assert_close(
        PATHS["mixed"].run(m, x, *m.route(x)[1:]), PATHS["per-expert"].run(m, x, *m.route(x)[1:]), rtol=0, atol=1e-5
    )
    tiny = torch.randn(4, 6, 1, 1)  # one output position: k convolutions are cheaper than mixing
    torch.testing.assert_close(m(tiny), reference(m, tiny), rtol=0, atol=1e-5)
    assert m.own_macs(([tiny.shape], torch.Size([4, 5, 1, 1]))) == 2 * 4 * 5 * 6 * 9


@pytest.mark.slow
def test_k1_backbone_flops_exact_on_the_per_expert_path():
    model = build_model("imagenet", Component("resnet18_moeconv", {"top_k": 1}), Component("dense"))
    report = count_flops(model, (3, 64, 64))
    assert report.problems == []


def _conv(out_hw: int, cout: int, cin: int, k: int = 3) -> int:
    return out_hw * out_hw * cout * cin * k * k


# ResNet-18 at 224 x 224 by hand (multiply-adds of its convolutions; BasicBlocks of two 3x3 convs):
STEM = _conv(112, 64, 3, 7)  # 7x7 stride-2 conv1, then a max pool to 56 x 56
LAYER1 = 4 * _conv(56, 64, 64)


def _layer(hw: int, c: int) -> tuple[int, int, int]:
    """(first conv1 of stride 2, each of the three stride-1 3x3 convs, the 1x1 stride-2 downsample)."""
    return _conv(hw, c, c // 2), _conv(hw, c, c), _conv(hw, c, c // 2, 1)


def test_hand_count_six_stride1_convolutions_route_38_2_percent():
    layers = {name: _layer(hw, c) for name, hw, c in (("layer2", 28, 128), ("layer3", 14, 256), ("layer4", 7, 512))}
    backbone = STEM + LAYER1 + sum(first + 3 * rest + down for first, rest, down in layers.values())
    assert backbone == 1_813_561_344  # torchvision's 1.81 GMACs
    total = backbone + 512 * 1000  # ResNet-18's own 512 -> 1000 classifier (Table 5's heads)
    stride1 = sum(3 * layers[n][1] for n in ("layer3", "layer4"))  # six convolutions of 115.6 M each
    every = stride1 + sum(layers[n][0] for n in ("layer3", "layer4"))  # ... and the two stride-2 ones
    assert f"{stride1 / total:.1%}" == "38.2%"  # Section 4.6: "approximately 38%"
    assert f"{every / total:.1%}" == "44.6%"  # all eight, before the MoE's own router and mixing


def test_stride1_reading_routes_the_six_stride1_convolutions_only():
    with torch.device("meta"):
        six = build_model("imagenet", Component("resnet18_moeconv", {"routed": "stride1"}), Component("dense"))
    names = sorted(six.backbone.moe_layers())
    assert names == [
        "net.layer3.0.conv2",
        "net.layer3.1.conv1",
        "net.layer3.1.conv2",
        "net.layer4.0.conv2",
        "net.layer4.1.conv1",
        "net.layer4.1.conv2",
    ]
    assert all(six.backbone.moe_layers()[n].stride == (1, 1) for n in names)
    assert isinstance(six.backbone.net.layer3[0].conv1, nn.Conv2d)


@pytest.mark.slow
def test_stride1_backbone_moe_rho_is_the_hand_count_plus_its_routers():
    model = build_model(
        "imagenet", Component("resnet18_moeconv", {"routed": "stride1"}), Component("dense", {"hidden": []})
    )
    report = count_flops(model, (3, 224, 224))
    assert report.problems == [] and len(report.routed_modules) == 6
    # Each MoEConv2d also mixes its k = 2 selected filter banks per sample (k W multiply-adds) and routes
    # (C -> 8): the rho-definition assumption counts both as routed, 0.6 pp above the hand count.
    assert 0.3824 < report.rho < 0.3824 + 0.007
    assert f"{report.rho:.1%}" == "38.8%"


@pytest.mark.parametrize(
    "kw, expected",
    [
        ({"num_experts": 2, "top_k": 3}, "top_k must be an int in 1..num_experts = 2, got 3"),
        ({"num_experts": 4, "top_k": 0}, "top_k must be an int in 1..num_experts = 4, got 0"),  # would give zeros
        ({"num_experts": 0, "top_k": 1}, "num_experts must be a positive int, got 0"),
        ({"groups": 4}, "groups must be at least 1 and divide in_channels and out_channels, got groups 4"),
        ({"padding": "same"}, "padding must be a non-negative int or a pair of them"),
        ({"capacity_factor": -1.0}, "capacity_factor must be non-negative"),
        ({"tau_min": 0.0}, "tau_min must be in (0, 1]"),
        # torch's Conv2d takes these and fails at the first call, or (a 0 kernel) in a reshape that names none
        ({"stride": 0}, "stride must be a positive int or a pair of them, got 0"),
        ({"dilation": (1, 0)}, "dilation must be a positive int or a pair of them, got (1, 0)"),
        ({"gate": "soft"}, "gate must be 'renormalised' or 'switch', got 'soft'"),
    ],
)
def test_a_layer_no_forward_could_run_is_refused_naming_what_is_allowed(kw, expected):
    with pytest.raises(ValueError, match=re.escape(expected)):
        MoEConv2d(6, 5, 3, **kw)


@pytest.mark.parametrize(
    "args, expected",
    [
        ((0, 5, 3), "in_channels must be a positive int, got 0"),
        ((6, 0, 3), "out_channels must be a positive int, got 0"),
        ((6, 5, 0), "kernel_size must be a positive int or a pair of them, got 0"),
        ((6, 5, (3, 3, 3)), "kernel_size must be a positive int or a pair of them, got (3, 3, 3)"),
    ],
)
def test_a_shape_no_convolution_has_is_refused_before_any_weight_is_made(args, expected):
    with pytest.raises(ValueError, match=re.escape(expected)):
        MoEConv2d(*args, num_experts=4, top_k=2)


def test_every_problem_of_a_layer_comes_at_once():
    with pytest.raises(ValueError) as caught:
        MoEConv2d(6, 5, 3, num_experts=4, top_k=5, stride=0, gate="soft")
    assert [p.split(" must")[0] for p in str(caught.value).removeprefix("MoEConv2d: ").split("; ")] == [
        "stride",
        "top_k",
        "gate",
    ]


@pytest.mark.parametrize("shape", [(2, 4, 8, 8), (6, 8, 8)])
def test_an_input_of_other_channels_is_refused_naming_the_shape_expected(shape):
    m = layer()
    with pytest.raises(ValueError, match=re.escape("expects input (B, 6, H, W)") + ".*" + re.escape(str(shape))):
        m(torch.randn(*shape))


def test_an_input_smaller_than_the_kernel_is_refused_naming_the_sizes():
    m = MoEConv2d(6, 5, 5, num_experts=4, top_k=2, padding=0)
    with pytest.raises(ValueError, match=re.escape("a (3, 3) input is smaller than the (5, 5) kernel")):
        m(torch.randn(2, 6, 3, 3))


def test_a_count_leaves_only_the_shapes_that_ran_in_paths_ran():
    """fvcore traces the model once more: that trace must not file a path under a shape of tensors."""
    model = Classifier(nn.Sequential(layer(), nn.AdaptiveAvgPool2d(1), nn.Flatten()), nn.Linear(5, 3))
    count_flops(model, (6, 8, 8))
    assert list(model.backbone[0].paths_ran) == [(1, 6, 8, 8)]


def test_the_conv_arguments_default_as_torchs_conv2d_does():
    """MoEConv2d(16, 32, 3) in place of nn.Conv2d(16, 32, 3) padded by 1 and had no bias: another output size, and
    another layer, than the one it replaced."""
    import inspect

    ours, torchs = inspect.signature(MoEConv2d).parameters, inspect.signature(nn.Conv2d).parameters
    shared = ("stride", "padding", "groups", "bias", "dilation")
    assert {p: ours[p].default for p in shared} == {p: torchs[p].default for p in shared}
    x = torch.randn(2, 6, 8, 8)
    moe, conv = MoEConv2d(6, 5, 3, num_experts=4, top_k=2), nn.Conv2d(6, 5, 3)
    assert moe(x).shape == conv(x).shape and moe.bias is not None


@pytest.mark.parametrize(
    "kw, expected",
    [
        # a float or a bool failed in torch.empty ("empty() takes 1 positional argument but 5 were given")
        ({"num_experts": 2.5}, "num_experts must be a positive int, got 2.5"),
        ({"num_experts": True, "top_k": 1}, "num_experts must be a positive int, got True"),
        ({"num_experts": 4, "top_k": 1.0}, "top_k must be an int in 1..num_experts = 4, got 1.0"),
        # a negative weight was taken, and rewarded the imbalance the loss penalises
        ({"load_balance_weight": -0.01}, "load_balance_weight must be non-negative, got -0.01"),
        ({"entropy_weight": -1.0}, "entropy_weight must be non-negative, got -1.0"),
    ],
)
def test_a_count_or_weight_of_another_kind_is_refused_naming_the_argument(kw, expected):
    with pytest.raises(ValueError, match=re.escape(expected)):
        MoEConv2d(6, 5, 3, **kw)


def test_no_experts_is_one_problem_not_two():
    # num_experts = 0 also said "top_k must be in 1..num_experts = 0", a range nothing is in
    with pytest.raises(ValueError) as caught:
        MoEConv2d(6, 5, 3, num_experts=0, top_k=2)
    assert str(caught.value) == "MoEConv2d: num_experts must be a positive int, got 0"
