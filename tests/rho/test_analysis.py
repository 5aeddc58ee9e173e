"""`repro rho`'s counts against Table 6's rows, both readings of which layers the backbone MoE routes, and
torchvision CNNs outside the registry."""

import pytest

from repro.models.flops import count_flops
from repro.plan.manifest import find_manifest
from repro.measure.flop_check import row_flops
from repro.rho.analysis import Request, analyse
from repro.rho.model_list import resolve_model
from repro.rho.inputs import parse_pattern
from repro.rho.networks import Network, dense_model, record_calls
from repro.rho.placement import match_layers, route
from repro.rho.paper_settings import default_setting, head_config, load_reference

pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning")
TABLE6 = find_manifest("table6")


def network_for(name: str, size: int | None = None) -> Network:
    spec = resolve_model(name)
    setting = default_setting(spec)
    return Network(spec, setting, (size, size) if size else setting.size, setting.classes)


def head_only(name: str, size: int | None = None):
    t = network_for(name, size)
    request = Request(head_config(t.setting, None, None, None), t.setting.route_experts, t.setting.route_top_k)
    return analyse(t, request, load_reference())


def test_resnet18_head_only_rho_is_table6s_count():
    ours = head_only("resnet18").results[0]
    row = row_flops(TABLE6.row("r18_head"))
    assert (ours.total_macs, ours.routed_macs, ours.rho) == (row.total, row.routed, row.rho)
    assert ours.problems == () and (ours.experts, ours.hidden, ours.top_k) == (8, 512, 1)
    assert ours.zone == "below_floor"


@pytest.mark.slow
@pytest.mark.parametrize(
    "name, row",
    [
        ("mobilenet_v2", "mnv2_head"),
        ("cifar_standard", "cifar10_std_moe"),
        ("cifar_depthwise", "cifar10_dw072_moe"),
        ("tiny_standard", "tiny_std_moe"),
        ("tiny_depthwise", "tiny_dw12_moe"),
    ],
)
def test_head_only_defaults_reproduce_each_table6_head_row(name, row):
    """The defaults (dataset, backbone width, h, k) are read from Table 6: the counts must be its rows'."""
    ours = head_only(name).results[0]
    counted = row_flops(TABLE6.row(row))
    assert (ours.total_macs, ours.routed_macs) == (counted.total, counted.routed)


def routed(name: str, patterns: list[str], top_k: int, size: int | None = None):
    t = network_for(name, size)
    dense = dense_model(t)
    names = match_layers(dense, record_calls(dense, t.input_shape), [parse_pattern(p) for p in patterns], name)
    return names, count_flops(route(dense_model(t), names, 8, top_k), t.input_shape)


ALL_EIGHT = ["layer[34].*.conv[12]"]
STRIDE_ONE = ["layer[34].*.conv2", "layer[34].1.conv1"]  # leaves out layer3.0.conv1 and layer4.0.conv1 (stride 2)


@pytest.mark.parametrize(
    "top_k, row", [(2, "r18_backbone_moe"), pytest.param(1, "r18_backbone_moe_k1", marks=pytest.mark.slow)]
)
def test_all_eight_3x3_convolutions_reproduce_r18_backbone_moe(top_k, row):
    names, report = routed("resnet18", ALL_EIGHT, top_k)
    assert len(names) == 8 and report.problems == []
    expected = row_flops(TABLE6.row(row))
    assert (report.total, report.routed, report.rho) == (expected.total, expected.routed, expected.rho)


@pytest.mark.slow
def test_the_six_stride_one_3x3_convolutions_by_hand():
    """Golden values: each stride-1 3x3 conv is 115,605,504 MACs at 224 px (14 x 14 x 256 x 256 x 9 in layer3,
    7 x 7 x 512 x 512 x 9 in layer4); a bank adds its router (Ci x E) and, at k = 2, the mixture of two kernels
    (2 x Co x Ci x 9); ResNet-18 as given is 1,814,073,344 MACs (Table 6's r18_head backbone, plus fc 512 x 1000)."""
    dense = row_flops(TABLE6.row("r18_head")).backbone + 512 * 1000
    assert dense == 1_814_073_344
    conv, w3, w4 = 115_605_504, 256 * 256 * 9, 512 * 512 * 9
    names, k1 = routed("resnet18", STRIDE_ONE, 1)
    assert names == [
        "layer3.0.conv2",
        "layer3.1.conv1",
        "layer3.1.conv2",
        "layer4.0.conv2",
        "layer4.1.conv1",
        "layer4.1.conv2",
    ]
    routers = 3 * 256 * 8 + 3 * 512 * 8
    assert (k1.routed, k1.total) == (6 * conv + routers, dense + routers)
    assert f"{k1.rho:.1%}" == "38.2%"  # the hand count: the six convolutions' share of ResNet-18
    _, k2 = routed("resnet18", STRIDE_ONE, 2)
    mixing = 3 * 2 * w3 + 3 * 2 * w4
    assert (k2.routed, k2.total) == (6 * conv + routers + mixing, dense + routers + mixing)
    assert f"{k2.rho:.1%}" == "38.8%" and k2.problems == []


CNNS = (
    [("convnext_tiny", 32)]
    + [pytest.param(n, 32, marks=pytest.mark.slow) for n in ("efficientnet_b0", "regnet_y_400mf")]
    + [
        pytest.param(name, None, marks=pytest.mark.slow)
        for name in [  # at their ImageNet size, 224
            "efficientnet_b0",
            "convnext_tiny",
            "regnet_y_400mf",
            "densenet121",
            "mobilenet_v3_large",
            "inception_v3",
            "shufflenet_v2_x1_0",
        ]
    ]
)


@pytest.mark.parametrize("name, size", CNNS)
def test_torchvision_cnns_outside_the_registry_count_the_same_three_ways(name, size):
    t = network_for(name, size)
    request = Request(head_config(t.setting, None, None, None), 8, 2, target=0.07)
    analysis = analyse(t, request, load_reference())
    assert analysis.problems == []
    head, found = analysis.results
    assert head.kind == "head_only" and head.modules_checked > 50 and 0 < head.rho < 1
    assert found.kind == "target" and found.reached and found.rho >= 0.07


@pytest.mark.slow
def test_a_backbone_that_routes_as_built_is_table6s_backbone_moe():
    t = network_for("resnet18_moeconv")
    assert t.setting.source_row == "r18_head" and t.setting.backbone_params == {"top_k": 2}
    analysis = analyse(t, Request(head_config(t.setting, None, None, None), 8, 2), load_reference())
    head, built = analysis.results
    row = row_flops(TABLE6.row("r18_backbone_moe"))
    assert built.kind == "as_built" and (built.total_macs, built.routed_macs) == (row.total, row.routed)
    assert head.rho > built.rho  # the head's routing adds to the backbone's
