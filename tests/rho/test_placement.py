"""Routable layers, their costs, patterns naming them, and --target on a small network against brute force."""

import itertools
import random
from fractions import Fraction

import pytest

from repro.models.flops import count_flops
from repro.rho import placement
from repro.rho.model_list import RhoInputError, resolve_model
from repro.rho.inputs import parse_pattern
from repro.rho.networks import Network, dense_model, record_calls
from repro.rho.placement import match_layers, routable_layers, route, subtree_macs
from repro.rho.paper_settings import default_setting
from repro.rho.target import Candidate, minimal_placement, rho_of

pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning")


def network_for(name: str, size: int | None = None) -> Network:
    spec = resolve_model(name)
    setting = default_setting(spec)
    return Network(spec, setting, (size, size) if size else setting.size, setting.classes)


def layers_of(t: Network, experts=8, top_k=2):
    dense = dense_model(t)
    calls = record_calls(dense, t.input_shape)
    return dense, calls, routable_layers(dense, calls, experts, top_k)


@pytest.mark.parametrize(
    "name, size, k",
    [
        ("cifar_depthwise", None, 2),
        pytest.param("convnext_tiny", 32, 2, marks=pytest.mark.slow),  # pointwise linear layers, depthwise 7x7
        pytest.param("efficientnet_b0", 32, 1, marks=pytest.mark.slow),  # the per-expert path, squeeze-excitation
        pytest.param("resnet18_moeconv", 32, 2, marks=pytest.mark.slow),  # a backbone that routes as built
    ],
)
def test_layer_costs_are_what_the_counter_counts(name, size, k):
    t = network_for(name, size)
    dense, calls, layers = layers_of(t, 4, k)
    total, already = subtree_macs(dense, calls), sum(subtree_macs(dense, calls, n) for n in dense.routed_module_names())
    report = count_flops(dense, t.input_shape)
    assert (report.total, report.routed) == (total, already)
    rng = random.Random(0)
    chosen = sorted(rng.sample(layers, min(5, len(layers))), key=lambda x: x.order)
    counted = count_flops(route(dense_model(t), [x.name for x in chosen], 4, k), t.input_shape)
    assert counted.problems == []
    assert counted.routed == already + sum(x.routed for x in chosen)
    assert counted.total == total + sum(x.routed - x.dense for x in chosen)


def test_kinds_of_routable_layer():
    _, _, layers = layers_of(network_for("convnext_tiny", 32))
    kinds = {x.kind for x in layers}
    assert {"conv 4x4/4", "conv 2x2/2", "dw 7x7", "pointwise (linear)"} == kinds
    assert [x.name for x in layers][-2:] == ["features.7.2.block.3", "features.7.2.block.5"]


def brute_force(candidates, total, routed, target):
    for n in range(len(candidates) + 1):
        feasible = [
            s for s in itertools.combinations(candidates, n) if rho_of(list(s), total, routed) >= Fraction(target)
        ]
        if feasible:
            best = max(feasible, key=lambda s: sorted((c.order for c in s), reverse=True))
            return [c.name for c in sorted(best, key=lambda c: c.order)], n
    return None, None


@pytest.mark.parametrize("goal", [0.4, 0.6] + [pytest.param(g, marks=pytest.mark.slow) for g in (0.75, 0.9)])
def test_target_on_a_small_network_is_minimal(goal):
    """tiny_depthwise has 12 routable layers: every one of the 4096 placements is tried."""
    t = network_for("tiny_depthwise")
    dense, calls, layers = layers_of(t)
    total = subtree_macs(dense, calls)
    candidates = [Candidate(x.name, x.order, x.dense, x.routed) for x in layers]
    found = minimal_placement(candidates, total, 0, goal)
    expected, n = brute_force(candidates, total, 0, goal)
    assert found.reached and list(found.layers) == expected
    counted = count_flops(route(dense_model(t), expected, 8, 2), t.input_shape)
    assert counted.problems == [] and counted.rho >= goal and counted.rho == pytest.approx(found.rho, rel=1e-12)
    # The best placement with one layer fewer, counted: it stays below the target.
    fewer = max(itertools.combinations(candidates, n - 1), key=lambda s: rho_of(list(s), total, 0))
    assert count_flops(route(dense_model(t), [c.name for c in fewer], 8, 2), t.input_shape).rho < goal


@pytest.mark.parametrize(
    "name, pattern, says",
    [
        ("resnet18", "layer4.*", ["matches 2 module(s) of resnet18, 2 of them not routable", "layer4.0 (BasicBlock"]),
        ("resnet18", "layer5.*.conv*", ["matches no module of resnet18", "top-level modules are conv1, bn1"]),
        ("resnet18", "fc", ["Linear on (1, 512), not at every position"]),
        ("resnet18", "layer4.0.**", ["layer4.0.bn1 (BatchNorm2d, not a convolution)", "also matches 3 that can"]),
        ("googlenet", "aux1.conv.conv", ["not run at inference"]),
        ("resnet18_moeconv", "net.layer3.0.conv1", ["MoEConv2d, not a convolution"]),
    ],
)
def test_patterns_naming_nothing_or_what_cannot_be_routed_are_refused(name, pattern, says):
    t = network_for(name, 64)
    dense = dense_model(t)
    with pytest.raises(RhoInputError) as info:
        match_layers(dense, record_calls(dense, t.input_shape), [parse_pattern(pattern)], name)
    for words in says:
        assert words in str(info.value)


def test_patterns_give_their_union_shallowest_first():
    t = network_for("resnet18", 64)
    dense = dense_model(t)
    calls = record_calls(dense, t.input_shape)
    names = match_layers(
        dense,
        calls,
        [parse_pattern("layer4.*.conv2"), parse_pattern("layer[34].1.conv1"), parse_pattern("layer4.1.conv2")],
        "resnet18",
    )
    assert names == ["layer3.1.conv1", "layer4.0.conv2", "layer4.1.conv1", "layer4.1.conv2"]


def test_a_placement_too_large_for_memory_is_refused(monkeypatch):
    monkeypatch.setattr(placement, "MAX_BANK_BYTES", 1 << 20)
    t = network_for("resnet18", 64)
    with pytest.raises(RhoInputError, match="would hold .* GiB of weights"):
        route(dense_model(t), ["layer4.1.conv2"], 8, 2)
